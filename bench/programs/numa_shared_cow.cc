// mmsim-numa-shared-cow: N forked processes read one large initialised global
// array (the data section, shared copy-on-write after fork) for T seconds.
// The real-host counterpart of scenarios/seed-a-numa-shared-cow.toml.
//
//   mmsim-numa-shared-cow [--seconds T] [--procs N] [--loop O0|O2]
//
// --loop picks the build of the summing loop (numa_shared_cow.h): O0 (the
// default, as the seed write-up's program was built) or O2.
//
// Prints one JSON line: {"iterations": total passes, "procs": N, "seconds": T,
// "elements": array length, "loop": "O0" or "O2", "children": [{"pid", "iterations", "user_s",
// "sys_s", "minflt", "majflt", "nvcsw", "nivcsw"}, ...]}. Exit status 0 ok, 1 a system call failed,
// 2 bad arguments.
#include "numa_shared_cow.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "util/units.h"

// A nonzero initialiser keeps the array in .data (a private, writable file
// mapping), not .bss, so every child maps the same page-cache pages
// copy-on-write. External linkage on purpose (numa_shared_cow.h): an array
// with internal linkage that is never written may be promoted to .rodata,
// which is not COW.
int g_data[kElements] = {1};

namespace {

// The sum of each pass goes here, so the compiler cannot drop the loop.
volatile long g_sink;

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr,
               "mmsim-numa-shared-cow: %s\nusage: mmsim-numa-shared-cow [--seconds T] [--procs N] "
               "[--loop O0|O2]\n",
               msg.c_str());
  std::exit(2);
}

[[noreturn]] void sys_error(const char* what) {
  std::fprintf(stderr, "mmsim-numa-shared-cow: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

double parse_number(std::string_view flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(v > 0)) {
    usage_error(std::string(flag) + ": expected a positive number, got \"" + text + "\"");
  }
  return v;
}

// Sums the array with `pass` until `seconds` have passed, checking the clock
// once per pass; stores the pass count in *count after every pass.
void child_loop(double seconds, int (*pass)(), volatile uint64_t* count) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  uint64_t passes = 0;
  do {
    g_sink = pass();
    *count = ++passes;
  } while (Clock::now() < end);
}

double tv_seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; }

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  long procs = 2;
  std::string loop = "O0";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if ((a == "--seconds" || a == "--procs" || a == "--loop") && i + 1 >= argc)
      usage_error(std::string(a) + ": missing value");
    if (a == "--seconds") {
      seconds = parse_number(a, argv[++i]);
      std::string why;  // infinity would be a run without end
      if (!mmsim::util::seconds_to_ns(seconds, &why)) usage_error("--seconds: " + why);
    } else if (a == "--procs") {
      const double p = parse_number(a, argv[++i]);
      if (p != static_cast<long>(p) || p > 4096)
        usage_error("--procs: expected a whole number from 1 to 4096");
      procs = static_cast<long>(p);
    } else if (a == "--loop") {
      loop = argv[++i];
      if (loop != "O0" && loop != "O2")
        usage_error("--loop: expected O0 or O2, got \"" + loop + "\"");
    } else {
      usage_error("unknown argument \"" + std::string(a) + "\"");
    }
  }

  const size_t bytes = sizeof(uint64_t) * static_cast<size_t>(procs);
  void* shared = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) sys_error("mmap of the shared counters");
  auto* counts = static_cast<volatile uint64_t*>(shared);

  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (long i = 0; i < procs; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int saved = errno;
      for (pid_t p : pids) ::kill(p, SIGKILL);
      for (pid_t p : pids) ::waitpid(p, nullptr, 0);
      errno = saved;
      sys_error("fork");
    }
    if (pid == 0) {
      child_loop(seconds, loop == "O0" ? sum_pass_O0 : sum_pass_O2, &counts[i]);
      _exit(0);
    }
    pids.push_back(pid);
  }

  struct ChildResult {
    pid_t pid = 0;
    rusage ru{};
  };
  std::vector<ChildResult> results(pids.size());
  bool failed = false;
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    results[i].pid = pids[i];
    while (::wait4(pids[i], &status, 0, &results[i].ru) < 0) {
      if (errno != EINTR) sys_error("wait4");
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "mmsim-numa-shared-cow: child %d did not finish cleanly (status 0x%x)\n",
                   static_cast<int>(pids[i]), status);
      failed = true;
    }
  }

  uint64_t total = 0;
  for (long i = 0; i < procs; ++i) total += counts[i];
  std::string line =
      "{\"iterations\": " + std::to_string(total) + ", \"procs\": " + std::to_string(procs) +
      ", \"seconds\": " + std::to_string(seconds) + ", \"elements\": " + std::to_string(kElements) +
      ", \"loop\": \"" + loop + "\", \"children\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const rusage& ru = results[i].ru;
    char buf[512];
    std::snprintf(
        buf, sizeof buf,
        "%s{\"pid\": %d, \"iterations\": %llu, \"user_s\": %.6f, \"sys_s\": %.6f, \"minflt\": %ld, "
        "\"majflt\": %ld, \"nvcsw\": %ld, \"nivcsw\": %ld}",
        i ? ", " : "", static_cast<int>(results[i].pid), static_cast<unsigned long long>(counts[i]),
        tv_seconds(ru.ru_utime), tv_seconds(ru.ru_stime), ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw,
        ru.ru_nivcsw);
    line += buf;
  }
  line += "]}";
  std::printf("%s\n", line.c_str());
  ::munmap(shared, bytes);
  return failed ? 1 : 0;
}
