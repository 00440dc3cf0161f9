#include <csignal>
#include <iostream>

#include "cli/cli.h"
#include "util/atomic_file.h"

namespace {

// SIGINT, SIGTERM and SIGHUP end mmsim as they would by default (the shell
// sees 130, 143, 129), but first remove a half-written output file.
extern "C" void end_on_signal(int sig) {
  mmsim::util::remove_pending_temp_file();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, end_on_signal);
  return mmsim::cli::run_cli(argc, argv, std::cout, std::cerr);
}
