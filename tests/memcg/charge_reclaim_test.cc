// A memcg charge whose reclaim demotes: the demotion allocates, and the
// charge must not hold on to folios across that.
#include <gtest/gtest.h>

#include <string>

#include "support/run.h"

TEST(MemcgCharge, AChargeWhoseReclaimDemotesFindsItsFolioAgainAfterward) {
  // A 4 KiB cgroup reads a file: each page's charge reclaims, which demotes
  // to the CXL node; the demotion's allocation grew the folio table under
  // the charge's reference (fuzz/findings/011: use-after-free under ASan).
  const std::string text =
      mmsim::testing::fuzz_finding("011-charge-reclaim-grows-folio-table.toml");
  ASSERT_FALSE(text.empty());
  const auto ran = mmsim::testing::run_text(text);
  EXPECT_TRUE(ran.result.check_failures.empty());
  EXPECT_GT(ran.vm("pgdemote_direct"), 0);
}
