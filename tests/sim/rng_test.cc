#include "sim/rng.h"

#include <gtest/gtest.h>

namespace mmsim::sim {
namespace {

TEST(Rng, SameSeedGivesTheSameSequence) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
}

TEST(Rng, DifferentSeedsGiveDifferentSequences) {
  Rng a(1), b(2);
  EXPECT_NE(a.next(), b.next());
}

TEST(Rng, BelowStaysInRange) {
  Rng a(7);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(a.below(13), 13u);
}

}  // namespace
}  // namespace mmsim::sim
