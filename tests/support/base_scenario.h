// A valid scenario in 8 lines, for loader tests that append lines from line 9
// on (so that a diagnostic's line number is known).
#pragma once

namespace mmsim::testing {

inline constexpr const char* kBaseScenario =
    "[machine]\n"            // 1
    "preset = \"2s-16c\"\n"  // 2
    "[run]\n"                // 3
    "program = \"main\"\n"   // 4
    "[[programs.main]]\n"    // 5
    "op = \"map\"\n"         // 6
    "region = \"a\"\n"       // 7
    "size = \"64KiB\"\n";    // 8

}  // namespace mmsim::testing
