// A charge move (memcg v1 move_charge_at_immigrate) cut short by a kill.
#include <gtest/gtest.h>

#include <string>

#include "support/run.h"

TEST(MemcgMove, ATaskKilledWhileMovingItsChargesFinishesTheMoveAsItExits) {
  // Its threads' process was OOM-killed in the 16 KiB cgroup it was moving
  // to; the move's end then found no task (fuzz/findings/009). The checker
  // compares every charge with the usage it sums to.
  const std::string text = mmsim::testing::fuzz_finding("009-killed-during-charge-move.toml");
  ASSERT_FALSE(text.empty());
  const auto ran = mmsim::testing::run_text(text);
  EXPECT_TRUE(ran.result.check_failures.empty());
}
