// mmsim native SCENARIO: what it applies to the host and what it says it
// cannot, its undoing, and short real runs through mmsim-exec reported with
// `mmsim run`'s keys. Sysctls and debugfs are fake trees under a temp dir;
// only the test that says so uses the host's real memory cgroups.
#include "native/scenario_native.h"

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "support/cli_run.h"

namespace mmsim::native {
namespace {

namespace fs = std::filesystem;
using cli::testing::mmsim;
using cli::testing::slurp;
using cli::testing::TempDir;

const std::string kExec = MMSIM_EXEC_PATH;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// One process maps 64 anonymous pages, writes each once and counts them.
const char* kTouchScenario = R"(
[scenario]
name = "touch-64"

[machine]
preset = "host"

[run]
program = "main"

[[programs.main]]
op = "map"
region = "buf"
size = "256KiB"
prot = "rw"

[[programs.main]]
op = "touch"
region = "buf"
mode = "write"

[[programs.main]]
op = "count"
counter = "touched"
by = 64
)";

// A fake host: kernel/numa_balancing (`nb`), an empty debugfs and a fake
// cgroup tree, so that nothing of the host changes.
struct FakeHost {
  explicit FakeHost(const TempDir& t, const std::string& nb = "0") {
    fs::create_directories(t.file("sys/kernel"));
    t.write("sys/kernel/numa_balancing", nb + "\n");
    fs::create_directories(t.file("debug"));
    // A fake cgroup v1 tree: the run's cgroup is a plain directory, whose
    // files do not exist (the report's memcg values are 0).
    fs::create_directories(t.file("cg/memory"));
    fs::create_directories(t.file("sysfs"));
    sysctl = t.file("sys");
    debugfs = t.file("debug");
    cgroups = t.file("cg");
    sysfs = t.file("sysfs");
  }
  std::vector<std::string> args(const std::string& scenario) const {
    // --cgroup-root last: a test drops it to use the host's cgroups.
    return {"native",         scenario, "--exec",       kExec, "--sysctl-root", sysctl,
            "--debugfs-root", debugfs,  "--sysfs-root", sysfs, "--cgroup-root", cgroups};
  }
  std::string sysctl, debugfs, cgroups, sysfs;
};

scenario::Scenario load(const std::string& text, std::vector<std::string> sets = {}) {
  auto r = scenario::parse_scenario(text, "s.toml", sets);
  EXPECT_TRUE(r.ok());
  return *r.scenario;
}

HostInfo host(int nodes, int cpus, const std::string& release) {
  HostInfo h;
  h.sysname = "Linux";
  h.release = release;
  h.nodes = nodes;
  h.cpus = cpus;
  return h;
}

bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines) {
    if (l.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(NativeScenarioFit, AKernelVersionOtherThanTheHostsIsSaidNotApplied) {
  TempDir t;
  FakeHost fh(t);
  ScenarioNativeOptions o;
  o.sysctl_root = fh.sysctl;
  o.debugfs_root = fh.debugfs;
  const auto same = fit_to_host(load(kTouchScenario, {"kernel.version=\"6.1\""}),
                                host(1, 2, "6.1.0-18-amd64"), o);
  EXPECT_FALSE(mentions(same.not_applied, "kernel.version"));
  const auto other = fit_to_host(load(kTouchScenario, {"kernel.version=\"4.15\""}),
                                 host(1, 2, "6.1.0-18-amd64"), o);
  EXPECT_TRUE(mentions(other.not_applied, "kernel.version = 4.15: this host runs Linux 6.1.0"));
}

TEST(NativeScenarioFit, AMachineShapeOtherThanTheHostsIsSaidNotApplied) {
  TempDir t;
  FakeHost fh(t);
  ScenarioNativeOptions o;
  o.sysctl_root = fh.sysctl;
  o.debugfs_root = fh.debugfs;
  const auto fit =
      fit_to_host(load(kTouchScenario, {"machine.preset=\"2s-16c\""}), host(1, 2, "6.1.0"), o);
  EXPECT_TRUE(mentions(fit.not_applied, "machine 2s-16c (2 nodes, 16 CPUs)")) << fit.not_applied[0];
}

TEST(NativeScenarioFit, ScanKnobsGoToDebugfsWhenThereIsNoSysctlForThem) {
  TempDir t;
  FakeHost fh(t);
  fs::create_directories(t.file("debug/sched/numa_balancing"));
  t.write("debug/sched/numa_balancing/scan_delay_ms", "1000\n");
  ScenarioNativeOptions o;
  o.sysctl_root = fh.sysctl;
  o.debugfs_root = fh.debugfs;
  const auto fit = fit_to_host(
      load(kTouchScenario, {"kernel.numa_balancing=1", "kernel.numa_balancing_scan_delay_ms=50"}),
      host(1, 2, "6.1.0"), o);
  bool found = false;
  for (const auto& s : fit.settings) {
    if (s.key == "kernel.numa_balancing_scan_delay_ms") {
      EXPECT_EQ(s.path, t.file("debug/sched/numa_balancing/scan_delay_ms"));
      EXPECT_EQ(s.value, "50");
      found = true;
    }
  }
  EXPECT_TRUE(found);
  // The others have neither file.
  EXPECT_TRUE(mentions(fit.not_applied, "kernel.numa_balancing_scan_size_mb = 256: no sysctl"));
}

TEST(NativeScenarioFit, NoFaultAroundIsOnePageOfFaultAroundBytes) {
  TempDir t;
  FakeHost fh(t);
  t.write("debug/fault_around_bytes", "65536\n");
  ScenarioNativeOptions o;
  o.sysctl_root = fh.sysctl;
  o.debugfs_root = fh.debugfs;
  const auto fit =
      fit_to_host(load(kTouchScenario, {"kernel.fault_around_kb=0"}), host(1, 2, "6.1.0"), o);
  bool found = false;
  for (const auto& s : fit.settings) {
    if (s.key == "kernel.fault_around_kb") {
      EXPECT_EQ(s.value, "4096");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(NativeScenario, ARunReportsTheTasksCountersAndFaultsWithRunsKeys) {
  TempDir t;
  FakeHost fh(t);
  const std::string sc = t.write("s.toml", kTouchScenario);
  auto args = fh.args(sc);
  args.insert(args.end(), {"--json", t.file("native.json")});
  const auto r = mmsim(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("scenario touch-64 (native, 1 run)"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(t.file("native.json")));
  EXPECT_EQ(j["metrics"]["touched"], 64);
  ASSERT_EQ(j["tasks"].size(), 1u);
  // Each write to a new anonymous page is a minor fault of the task's.
  EXPECT_GE(j["tasks"][0]["minflt"].get<uint64_t>(), 64u);
  EXPECT_TRUE(j["tasks"][0]["cpu"].is_null());
  EXPECT_GE(j["vmstat"]["pgfault"].get<int64_t>(), 64);

  // The keys of `mmsim run --json`, with "native" in place of "sim".
  const auto sim = mmsim({"run", sc, "--json", t.file("sim.json"), "--no-timing"});
  ASSERT_EQ(sim.code, 0) << sim.err;
  const auto s = nlohmann::json::parse(slurp(t.file("sim.json")));
  std::set<std::string> native_keys, sim_keys;
  for (const auto& [k, v] : j.items()) native_keys.insert(k);
  for (const auto& [k, v] : s.items()) sim_keys.insert(k);
  sim_keys.erase("sim");
  sim_keys.insert("native");
  EXPECT_EQ(native_keys, sim_keys);
  for (const auto& [k, v] : s["tasks"][0].items()) EXPECT_TRUE(j["tasks"][0].contains(k)) << k;
}

TEST(NativeScenario, TheSysctlIsSetForTheRunAndRestoredAfterwards) {
  TempDir t;
  FakeHost fh(t, "0");
  const std::string sc = t.write("s.toml", kTouchScenario);
  auto args = fh.args(sc);
  args.insert(args.end(), {"--set", "kernel.numa_balancing=1", "--json", t.file("n.json")});
  const auto r = mmsim(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(trimmed(slurp(fh.sysctl + "/kernel/numa_balancing")), "0");
  const auto j = nlohmann::json::parse(slurp(t.file("n.json")));
  ASSERT_EQ(j["kernel"]["applied"].size(), 1u) << j["kernel"];
  EXPECT_EQ(j["kernel"]["applied"][0], "kernel.numa_balancing=1 (was 0)");
}

TEST(NativeScenario, TheThpModeIsSetForTheRunAndTheBracketedChoiceRestored) {
  // sysfs shows every choice with the current one bracketed; the run writes
  // the scenario's and puts back the bracketed one.
  TempDir t;
  FakeHost fh(t, "0");
  fs::create_directories(t.file("sysfs/kernel/mm/transparent_hugepage"));
  t.write("sysfs/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
  const std::string sc = t.write("s.toml", kTouchScenario);
  auto args = fh.args(sc);
  args.insert(args.end(),
              {"--set", "kernel.transparent_hugepage=\"always\"", "--json", t.file("n.json")});
  const auto r = mmsim(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(trimmed(slurp(fh.sysfs + "/kernel/mm/transparent_hugepage/enabled")), "madvise");
  const auto j = nlohmann::json::parse(slurp(t.file("n.json")));
  EXPECT_TRUE(mentions(j["kernel"]["applied"].get<std::vector<std::string>>(),
                       "kernel.transparent_hugepage=always (was madvise)"))
      << j["kernel"];
}

TEST(NativeScenario, ASettingTheHostRefusesStopsWithExitCode3AndRestoresTheOthers) {
  TempDir t;
  FakeHost fh(t, "0");
  // kernel.numa_balancing is written first; the scan knob's "file" is a
  // directory, which even root cannot write.
  fs::create_directories(t.file("sys/kernel/numa_balancing_scan_delay_ms"));
  const std::string sc = t.write("s.toml", kTouchScenario);
  auto args = fh.args(sc);
  args.insert(args.end(), {"--set", "kernel.numa_balancing=1"});
  const auto r = mmsim(args);
  EXPECT_EQ(r.code, kExitHostSetup) << r.err;
  EXPECT_NE(r.err.find("cannot set kernel.numa_balancing_scan_delay_ms"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nothing was left changed"), std::string::npos) << r.err;
  EXPECT_EQ(trimmed(slurp(fh.sysctl + "/kernel/numa_balancing")), "0");
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(NativeScenario, RepeatedRunsReportTheMeanAndRangeOfEachMetric) {
  TempDir t;
  FakeHost fh(t);
  const std::string sc = t.write("s.toml", kTouchScenario);
  auto args = fh.args(sc);
  args.insert(args.end(), {"--repeat", "2", "--json", t.file("n.json")});
  const auto r = mmsim(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("over 2 runs: mean (min - max)"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(t.file("n.json")));
  EXPECT_EQ(j["native"]["runs"].size(), 2u);
  EXPECT_EQ(j["native"]["over_runs"]["touched"]["min"], 64.0);
}

TEST(NativeScenario, AFailedSystemCallIsReportedAsTheTasksError) {
  TempDir t;
  FakeHost fh(t);
  // Node 1 of the scenario's two-node machine; the host has one node, where
  // mbind(2) to node 1 fails with EINVAL (a host with two passes this test by
  // failing nothing, so it is skipped there).
  if (host_info().nodes > 1) GTEST_SKIP() << "the host has node 1";
  const std::string sc = t.write("s.toml", std::string(kTouchScenario) + R"(
[[programs.main]]
op = "map"
region = "far"
size = "64KiB"
policy = "bind"
nodes = [1]
)");
  auto args = fh.args(sc);
  args.insert(args.end(), {"--set", "machine.preset=\"2s-16c\"", "--json", t.file("n.json")});
  const auto r = mmsim(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("error: mbind: EINVAL"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(t.file("n.json")));
  ASSERT_EQ(j["native"]["errors"].size(), 1u);
  EXPECT_NE(j["native"]["errors"][0].get<std::string>().find("(main): error: mbind: EINVAL"),
            std::string::npos);
}

TEST(NativeScenario, BenchmarkFlagsAreRefusedForAScenario) {
  TempDir t;
  FakeHost fh(t);
  const std::string sc = t.write("s.toml", kTouchScenario);
  auto args = fh.args(sc);
  args.insert(args.end(), {"--loops", "3"});
  const auto r = mmsim(args);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--loops: only for a benchmark program"), std::string::npos) << r.err;
}

TEST(NativeScenario, AScenarioFlagIsRefusedForABenchmark) {
  const auto r = mmsim({"native", "numa-shared-cow", "--repeat", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--repeat: only for a scenario"), std::string::npos) << r.err;
}

TEST(NativeScenario, ABadScenarioIsBadInputWithItsDiagnostics) {
  TempDir t;
  FakeHost fh(t);
  const std::string sc = t.write("s.toml", "[scenario]\nname = 1\n");
  const auto r = mmsim(fh.args(sc));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(sc + ":2:"), std::string::npos) << r.err;
}

TEST(NativeScenario, TheScratchFilesAreRemovedAfterTheRun) {
  TempDir t;
  FakeHost fh(t);
  fs::create_directories(t.file("scratch"));
  const std::string sc = t.write("s.toml", std::string(kTouchScenario) + R"(
[[files]]
name = "data"
size = "64KiB"
)");
  auto args = fh.args(sc);
  args.insert(args.end(), {"--scratch", t.file("scratch")});
  const auto r = mmsim(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_empty(t.file("scratch")));
}

// The host's real memory cgroups (root only; skipped where there are none):
// the scenario's cgroup is created under the run's, reported, then removed.
TEST(NativeScenario, TheScenariosCgroupsAreMadeReportedAndRemovedOnTheHost) {
  std::string why;
  const auto cg = find_cgroup_host("/sys/fs/cgroup", &why);
  if (::geteuid() != 0 || !cg) GTEST_SKIP() << "no writable memory cgroups: " << why;
  TempDir t;
  FakeHost fh(t);
  const std::string sc = t.write("s.toml", R"(
[scenario]
name = "memcg-touch"

[machine]
preset = "host"

[[cgroups]]
path = "/job"
limit = "64MiB"

[run]
program = "main"
cgroup = "/job"

[[programs.main]]
op = "map"
region = "buf"
size = "1MiB"
prot = "rw"

[[programs.main]]
op = "touch"
region = "buf"
mode = "write"
)");
  auto args = fh.args(sc);
  args.resize(args.size() - 2);  // the host's cgroups, not the fake tree
  args.insert(args.end(), {"--json", t.file("n.json")});
  const auto r = mmsim(args);
  if (r.code == kExitHostSetup && r.err.find("cgroup") != std::string::npos) {
    GTEST_SKIP() << "this host refuses memory cgroups to mmsim: " << r.err;
  }
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(t.file("n.json")));
  ASSERT_TRUE(j.contains("memcg")) << j.dump(2);
  const auto& job = j["memcg"]["cgroups"]["/job"];
  const char* limit = cg->hierarchy == "v2" ? "memory.max" : "memory.limit_in_bytes";
  EXPECT_EQ(job[limit], 64 << 20) << job.dump(2);
  // 256 page faults of the task, counted in its memcg.
  EXPECT_GE(job["memory.stat"]["pgfault"].get<int64_t>(), 256) << job.dump(2);
  for (const auto& e : fs::directory_iterator(cg->parent)) {
    EXPECT_EQ(e.path().filename().string().rfind("mmsim-native-", 0), std::string::npos)
        << e.path();
  }
}

}  // namespace
}  // namespace mmsim::native
