// mmsim native: the runner's error paths (a missing program, a sysctl it may
// not write, an interrupt) and short real runs of both benchmark programs.
// Sysctls and cgroups are fake trees under a temp dir, except where a test
// says otherwise; nothing here changes the host.
#include "native/native.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/cli_run.h"

namespace mmsim::native {
namespace {

namespace fs = std::filesystem;
using cli::testing::mmsim;
using cli::testing::slurp;
using cli::testing::TempDir;

const std::string kBenchDir = std::string(MMSIM_BINARY_DIR) + "/bench/programs";
const std::string kMmsim = std::string(MMSIM_BINARY_DIR) + "/src/cli/mmsim";

// A fake sysctl tree holding kernel/numa_balancing = `value`.
std::string fake_sysctl_root(const TempDir& t, const std::string& value) {
  fs::create_directories(t.file("sys/kernel"));
  t.write("sys/kernel/numa_balancing", value + "\n");
  return t.file("sys");
}

// A fake cgroup v2 root whose memory controller is enabled for children.
std::string fake_cgroup_root(const TempDir& t) {
  fs::create_directories(t.file("cg"));
  t.write("cg/cgroup.controllers", "cpuset cpu io memory pids\n");
  t.write("cg/cgroup.subtree_control", "memory pids\n");
  return t.file("cg");
}

// The entries of `dir` that a run created.
std::vector<std::string> native_cgroups(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("mmsim-native-", 0) == 0)
      found.push_back(e.path().string());
  }
  return found;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

TEST(NativeParseSize, TakesBytesAndPowerOf1024Units) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("8M"), 8u << 20);
  EXPECT_EQ(parse_size("256MiB"), 256u << 20);
  EXPECT_EQ(parse_size("1G"), 1ull << 30);
}

// The project's one size grammar (util/units.h), as in scenario files.
TEST(NativeParseSize, KBIsAPowerOf1000AsInScenarioFiles) {
  EXPECT_EQ(parse_size("4KB"), 4000u);
  EXPECT_EQ(parse_size("1GB"), 1'000'000'000u);
}

TEST(NativeParseSize, RejectsMalformedSizes) {
  EXPECT_FALSE(parse_size("M"));
  EXPECT_FALSE(parse_size("12X"));
  EXPECT_FALSE(parse_size("-1"));
  EXPECT_FALSE(parse_size("1.5G"));
}

TEST(Native, AnUnknownBenchmarkIsBadInputNamingTheKnownOnes) {
  const auto r = mmsim({"native", "fork-bomb", "--bench-dir", kBenchDir});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown benchmark \"fork-bomb\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("numa-shared-cow, mmap-fault-drop"), std::string::npos) << r.err;
}

TEST(Native, AMissingBenchmarkProgramIsBadInputNamingWhereItLooked) {
  TempDir t;
  const std::string sysctl = fake_sysctl_root(t, "0");
  const auto r = mmsim({"native", "numa-shared-cow", "--bench-dir", t.file("nowhere"),
                        "--numa-balancing", "1", "--sysctl-root", sysctl});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("mmsim: error: cannot find the benchmark program mmsim-numa-shared-cow"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(t.file("nowhere") + "/mmsim-numa-shared-cow"), std::string::npos) << r.err;
  EXPECT_EQ(trimmed(slurp(sysctl + "/kernel/numa_balancing")),
            "0");  // checked before anything changes
}

TEST(Native, AParameterTheBenchmarkDoesNotTakeIsBadInput) {
  const auto r = mmsim({"native", "numa-shared-cow", "--loops", "3", "--bench-dir", kBenchDir});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--loops does not apply to numa-shared-cow"), std::string::npos) << r.err;
}

// The tests run as root, who may write any plain file whatever its mode. A
// read-only sysctl refuses even root: kernel/numa_balancing in the fake tree
// is a symlink to /proc/sys/kernel/osrelease (mode 0444), so reading it works
// and writing it fails with EACCES, as setting numa_balancing does for a user
// without the right to (or on a kernel built without NUMA balancing, ENOENT).
TEST(Native, ASysctlThatCannotBeWrittenStopsTheRunWithExitCode3AndChangesNothing) {
  TempDir t;
  fs::create_directories(t.file("sys/kernel"));
  fs::create_symlink("/proc/sys/kernel/osrelease", t.file("sys/kernel/numa_balancing"));
  const std::string sysctl_file = t.file("sys/kernel/numa_balancing");
  const std::string before = slurp(sysctl_file);
  ASSERT_FALSE(before.empty());
  const std::string cgroups = fake_cgroup_root(t);

  const auto r =
      mmsim({"native", "numa-shared-cow", "--seconds", "5", "--numa-balancing", "1", "--cgroup",
             "--sysctl-root", t.file("sys"), "--cgroup-root", cgroups, "--bench-dir", kBenchDir});

  EXPECT_EQ(r.code, kExitHostSetup);
  EXPECT_NE(r.err.find("cannot set kernel.numa_balancing=1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(sysctl_file), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was changed"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(sysctl_file), before);
  EXPECT_TRUE(native_cgroups(cgroups).empty());
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(Native, AMissingNumaBalancingSysctlStopsTheRunWithExitCode3) {
  TempDir t;
  fs::create_directories(t.file("sys/kernel"));
  const auto r = mmsim({"native", "numa-shared-cow", "--numa-balancing", "0", "--sysctl-root",
                        t.file("sys"), "--bench-dir", kBenchDir});
  EXPECT_EQ(r.code, kExitHostSetup);
  EXPECT_NE(r.err.find(t.file("sys/kernel/numa_balancing")), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(t.file("sys/kernel/numa_balancing")));
}

// pid of a process in process group `pgid`, or 0 if there is none.
int member_of_group(int pgid) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = slurp(e.path().string() + "/stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
        pgrp == pgid) {
      return std::stoi(name);
    }
  }
  return 0;
}

// Runs the mmsim binary with stdout and stderr going to files.
pid_t spawn_mmsim(const std::vector<std::string>& args, const std::string& out,
                  const std::string& err) {
  std::vector<std::string> all = {kMmsim};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) _exit(126);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Waits up to `limit` for `pid`; kills it if it is still running then.
int wait_exit_status(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > end) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(Native, AnInterruptedRunRestoresTheSysctlKillsTheBenchmarkAndRemovesTheCgroup) {
  TempDir t;
  const std::string sysctl = fake_sysctl_root(t, "0");
  const std::string cgroups = fake_cgroup_root(t);
  const std::string out = t.file("out"), err = t.file("err");
  const pid_t pid = spawn_mmsim(
      {"native", "numa-shared-cow", "--seconds", "30", "--procs", "2", "--numa-balancing", "1",
       "--sysctl-root", sysctl, "--cgroup", "--cgroup-root", cgroups, "--bench-dir", kBenchDir},
      out, err);
  ASSERT_GT(pid, 0);

  // The runner says which process group the benchmark runs in once it runs.
  int pgid = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (pgid == 0 && std::chrono::steady_clock::now() < give_up) {
    const std::string text = slurp(err);
    const auto at = text.find("process group ");
    if (at != std::string::npos && text.find(')', at) != std::string::npos) {
      pgid = std::stoi(text.substr(at + 14));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (pgid == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    FAIL() << "the runner did not start the benchmark: " << slurp(err);
  }
  std::this_thread::sleep_for(
      std::chrono::milliseconds(500));  // the children are forked and summing
  EXPECT_EQ(trimmed(slurp(sysctl + "/kernel/numa_balancing")), "1");
  EXPECT_EQ(native_cgroups(cgroups).size(), 1u);
  EXPECT_NE(member_of_group(pgid), 0);

  ASSERT_EQ(::kill(pid, SIGINT), 0);
  const int code = wait_exit_status(pid, std::chrono::seconds(10));

  EXPECT_EQ(code, 130) << slurp(err);
  EXPECT_NE(slurp(err).find("interrupted"), std::string::npos) << slurp(err);
  EXPECT_EQ(trimmed(slurp(sysctl + "/kernel/numa_balancing")), "0");
  EXPECT_TRUE(native_cgroups(cgroups).empty());
  EXPECT_EQ(member_of_group(pgid), 0) << "a process of the benchmark survived";
  EXPECT_EQ(::kill(-pgid, 0), -1);
  EXPECT_TRUE(slurp(out).empty());
}

TEST(Native, AShortMmapFaultDropRunFaultsEveryPassAndWritesTheSimulatorsJsonKeys) {
  TempDir t;
  const std::string json = t.file("run.json");
  const std::string data = t.file("data");
  const auto r = mmsim({"native", "mmap-fault-drop", "--size", "8M", "--loops", "3", "--file", data,
                        "--json", json, "--bench-dir", kBenchDir});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(data)) << "the file the run created is removed";

  const auto j = nlohmann::ordered_json::parse(slurp(json));
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"scenario", "seed", "machine", "kernel", "metrics",
                                            "vmstat", "tasks", "sim"}));
  EXPECT_EQ(j["scenario"]["name"], "mmap-fault-drop");
  EXPECT_TRUE(j["seed"].is_null());
  EXPECT_EQ(j["machine"]["name"], "host");
  EXPECT_TRUE(j["kernel"].contains("version"));
  EXPECT_TRUE(j["kernel"].contains("numa_balancing"));
  const uint64_t pages = (8u << 20) / static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(j["metrics"]["touches"].get<uint64_t>(), pages * 3);
  for (const char* m : {"elapsed_s", "user_s", "sys_s", "iowait_s"})
    EXPECT_TRUE(j["metrics"].contains(m)) << m;
  EXPECT_GT(j["vmstat"]["pgfault"].get<int64_t>(), 0);
  ASSERT_EQ(j["tasks"].size(), 1u);
  EXPECT_GT(j["tasks"][0]["minflt"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["sim"]["native"], true);
  EXPECT_GT(j["sim"]["wall_s"].get<double>(), 0.0);
  EXPECT_NE(r.out.find("metrics\n  touches"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pgfault"), std::string::npos) << r.out;
}

TEST(Native, AJsonFileThatCannotBeWrittenIsRefusedBeforeTheRun) {
  TempDir t;
  const std::string json = t.file("no-such-dir/run.json");
  const auto r = mmsim({"native", "mmap-fault-drop", "--size", "1M", "--loops", "1", "--file",
                        t.file("data"), "--json", json, "--bench-dir", kBenchDir});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("mmsim: error: --json: cannot write \"" + json + "\": no directory"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "") << "nothing ran";
  EXPECT_FALSE(fs::exists(t.file("data")));
  EXPECT_FALSE(fs::exists(t.file("no-such-dir")));
}

TEST(Native, AShortNumaSharedCowRunInACgroupReportsEachChildAndRemovesTheCgroup) {
  TempDir t;
  const std::string sysctl = fake_sysctl_root(t, "1");
  const std::string cgroups = fake_cgroup_root(t);
  const std::string json = t.file("run.json");
  const auto r = mmsim({"native", "numa-shared-cow", "--seconds", "0.2", "--procs", "2",
                        "--numa-balancing", "0", "--sysctl-root", sysctl, "--cgroup",
                        "--cgroup-root", cgroups, "--json", json, "--bench-dir", kBenchDir});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(trimmed(slurp(sysctl + "/kernel/numa_balancing")), "1");
  EXPECT_TRUE(native_cgroups(cgroups).empty());

  const auto j = nlohmann::ordered_json::parse(slurp(json));
  EXPECT_EQ(j["kernel"]["numa_balancing"], 0);
  ASSERT_EQ(j["tasks"].size(), 3u);  // the parent and its two children
  uint64_t sum = 0;
  for (const auto& task : j["tasks"]) sum += task["counters"]["iterations"].get<uint64_t>();
  EXPECT_GT(sum, 0u);
  EXPECT_EQ(sum, j["metrics"]["iterations"].get<uint64_t>());
  EXPECT_EQ(j["tasks"][1]["ppid"], j["tasks"][0]["pid"]);
  EXPECT_EQ(j["memcg"]["hierarchy"], "v2");
}

}  // namespace
}  // namespace mmsim::native
