// The mmsim command, as a function so that tests can call it in-process.
#pragma once

#include <iosfwd>
#include <string>

#include "scenario/scenario.h"

namespace mmsim::cli {

// Exit codes (README "Limits and exit codes"): 0 ok, 1 a bug, and these.
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitHostRefused = 3;

// Exit codes: 0 ok, 1 internal error, 2 bad input (scenario or arguments).
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// `mmsim switches`: every switch with its type, presets and doc; with
// `with_values`, its value in `k`; `markdown`: the README's reference table.
std::string switches_text(const scenario::KernelConfig& k, bool markdown, bool with_values);

}  // namespace mmsim::cli
