// The terminal progress line: silent unless enabled, drawn in place,
// rate-limited, erased at the end.
#include "util/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace mmsim::util {
namespace {

TEST(ProgressLine, ADisabledLineWritesNothing) {
  std::ostringstream out;
  {
    ProgressLine line(out, false);
    line.update("working", true);
    line.clear();
  }
  EXPECT_EQ(out.str(), "");
}

TEST(ProgressLine, AnUpdateRedrawsTheLineInPlaceAndTheEndErasesIt) {
  std::ostringstream out;
  {
    ProgressLine line(out, true);
    line.update("1 of 2");
  }
  EXPECT_EQ(out.str(), "\r1 of 2\x1b[K\r\x1b[K");
}

TEST(ProgressLine, UpdatesCloserThan200msApartAreDroppedUnlessForced) {
  std::ostringstream out;
  ProgressLine line(out, true);
  line.update("a");
  line.update("b");
  line.update("c", true);
  EXPECT_EQ(out.str(), "\ra\x1b[K\rc\x1b[K");
}

}  // namespace
}  // namespace mmsim::util
