#include "validate/command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>  // environ (_GNU_SOURCE)

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace mmsim::validate {

std::string CommandResult::what() const {
  if (spawn_errno) return "could not be started: " + native::errno_text(spawn_errno);
  if (interrupted) return fmt::format("was stopped by {}", ::strsignal(interrupted));
  if (timed_out) return fmt::format("timed out after {:.0f} s", wall_s);
  if (stopped) return "was stopped";
  if (killed_by) return fmt::format("was killed by {}", ::strsignal(killed_by));
  return fmt::format("exited with status {}", exit_status);
}

CommandResult run_command(const Command& c, native::SignalScope& signals) {
  CommandResult r;
  std::array<int, 2> out_pipe{-1, -1}, err_pipe{-1, -1};
  if (::pipe2(out_pipe.data(), O_CLOEXEC) != 0 || ::pipe2(err_pipe.data(), O_CLOEXEC) != 0) {
    r.spawn_errno = errno;
    for (const int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  ::posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (!c.cwd.empty()) ::posix_spawn_file_actions_addchdir_np(&fa, c.cwd.c_str());
  ::posix_spawnattr_init(&attr);
  // Its own process group (killed as one), with the signals it would have
  // had: nothing blocked, default SIGINT (this process blocks the stop
  // signals while it waits).
  sigset_t none, defaults;
  sigemptyset(&none);
  defaults = native::stop_signals(true);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &defaults);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setflags(
      &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  for (const auto& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = ::posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&attr);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    r.spawn_errno = rc;
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return r;
  }
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::array<pollfd, 2> fds{pollfd{out_pipe[0], POLLIN, 0}, pollfd{err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool kill_it = false;
  char buf[65536];
  while (open_fds > 0) {
    const int n = ::poll(fds.data(), fds.size(), 100);
    if (n < 0 && errno != EINTR) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
    if (const int sig = signals.drain()) {
      r.interrupted = sig;
      kill_it = true;
    } else if (c.timeout_s > 0 && elapsed() > c.timeout_s) {
      r.timed_out = true;
      kill_it = true;
    } else if (c.keep_going && !c.keep_going(r.out)) {
      r.stopped = true;
      kill_it = true;
    }
    if (kill_it) break;
  }
  if (kill_it) ::kill(-pid, SIGKILL);
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Whatever it left in its group (a daemonised child) goes with it.
  ::kill(-pid, SIGKILL);
  r.wall_s = elapsed();
  if (WIFEXITED(status)) r.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.killed_by = WTERMSIG(status);
  return r;
}

}  // namespace mmsim::validate
