// Running a host program to its end: apt-get and dpkg-deb fetching a kernel,
// ldd listing a binary's libraries, QEMU booting a guest. Output is captured
// (or sent to a file), a deadline and the stop signals (Ctrl-C) kill it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "native/host.h"

namespace mmsim::validate {

struct Command {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  double timeout_s = 0;           // 0: none
  std::string cwd;                // "": this process's
  // Called about every 100 ms with what stdout held so far; returning false
  // kills the program (a guest that did not come up, say).
  std::function<bool(const std::string& out)> keep_going;
};

struct CommandResult {
  int spawn_errno = 0;   // the program could not be started
  int exit_status = -1;  // its exit status when it exited
  int killed_by = 0;     // the signal that ended it
  bool timed_out = false;
  bool stopped = false;  // keep_going said no
  int interrupted = 0;   // a stop signal (SIGINT, SIGTERM, SIGHUP) ended the wait
  double wall_s = 0;
  std::string out, err;  // its stdout and stderr
  bool ok() const { return spawn_errno == 0 && exit_status == 0; }
  // "exited with status 2", "killed by Killed", "timed out after 60 s", ...
  std::string what() const;
};

// Runs the command in a process group of its own and waits for it; on a
// timeout, a "no" from keep_going or a stop signal, kills the group. The
// stop signals must be blocked (a native::SignalScope in force).
CommandResult run_command(const Command& c, native::SignalScope& signals);

}  // namespace mmsim::validate
