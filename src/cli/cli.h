// The mmsim command, as a function so that tests can call it in-process.
#pragma once

#include <iosfwd>

namespace mmsim::cli {

// Exit codes: 0 ok, 1 internal error, 2 bad input (scenario or arguments).
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace mmsim::cli
