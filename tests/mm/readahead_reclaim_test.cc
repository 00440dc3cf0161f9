// A fault at a readahead mark reads the next window; reclaim during that
// read must not take the folio the fault is about to map.
#include <gtest/gtest.h>

#include <string>

#include "support/run.h"

TEST(ReadaheadReclaim, TheFolioAtAMarkSurvivesTheReclaimOfTheNextWindowsRead) {
  // A 1 MiB memcg reads a 2 MiB file: each window's read charges and
  // reclaims; the page at the mark was once the oldest on the list
  // (fuzz/findings/010). The checker compares mapcounts with PTEs.
  const std::string text = mmsim::testing::fuzz_finding("010-readahead-mark-folio-reclaimed.toml");
  ASSERT_FALSE(text.empty());
  const auto ran = mmsim::testing::run_text(text);
  EXPECT_TRUE(ran.result.check_failures.empty());
}
