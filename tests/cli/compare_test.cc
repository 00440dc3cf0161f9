// `mmsim compare`, run in-process: the table, the JSON, validation before
// anything runs, independence from the thread count, and the statistics.
#include "report/compare.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "support/cli_run.h"
#include "support/run.h"

namespace mmsim::cli {
namespace {

using testing::Cli;
using testing::mmsim;
using testing::slurp;
using testing::TempDir;
namespace fs = std::filesystem;

// A short run on the small machine that reads a 1 MiB file page by page (so
// fault-around matters) and then sweeps anonymous memory, counting passes.
std::string tiny_scenario(bool with_counter = true) {
  std::string text = std::string(mmsim::testing::kSmallMachine) + R"(
[[files]]
name = "data"
size = "1MiB"

[run]
program = "main"

[[programs.main]]
op = "map"
region = "a"
size = "64KiB"

[[programs.main]]
op = "map"
region = "f"
file = "data"
prot = "r"

[[programs.main]]
op = "touch"
region = "f"
mode = "read"
)";
  text += with_counter ? R"(
[[programs.main]]
op = "loop"
duration = "1ms"
body = [ { op = "sweep", region = "a", mode = "write" }, { op = "count", counter = "passes" } ]
)"
                       : R"(
[[programs.main]]
op = "sweep"
region = "a"
mode = "write"
)";
  return text;
}

std::vector<std::string> fault_around_args(const std::string& path) {
  return {"compare", path, "--vary", "kernel.fault_around_kb=0,64", "--repeat", "2"};
}

TEST(Compare, TwoFaultAroundSizesPrintBothColumnsAndEveryRow) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const Cli r = mmsim(fault_around_args(path));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("kernel.fault_around_kb=0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel.fault_around_kb=64"), std::string::npos) << r.out;
  for (const char* row :
       {"throughput (passes)", "change vs first", "real s", "user s", "sys s", "numa_hint_faults",
        "numa_pages_migrated", "pgmigrate_fail", "mean tasks in D", "iowait %"}) {
    const std::string line_start = fmt::format("\n{} ", row);
    EXPECT_NE(r.out.find(line_start), std::string::npos) << row << "\n" << r.out;
  }
}

TEST(Compare, JsonHoldsTwoCombinationsOfTwoRunsWithConsecutiveSeeds) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const std::string json = dir.file("out.json");
  auto args = fault_around_args(path);
  args.insert(args.end(), {"--seed", "7", "--json", json});
  const Cli r = mmsim(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j.at("metric"), "passes");
  EXPECT_EQ(j.at("repeat"), 2);
  const auto& combos = j.at("combinations");
  ASSERT_EQ(combos.size(), 2u);
  EXPECT_EQ(combos[0].at("settings"), nlohmann::json({{"kernel.fault_around_kb", "0"}}));
  EXPECT_EQ(combos[1].at("settings"), nlohmann::json({{"kernel.fault_around_kb", "64"}}));
  for (const auto& c : combos) {
    ASSERT_EQ(c.at("runs").size(), 2u);
    EXPECT_EQ(c.at("runs")[0].at("seed"), 7);
    EXPECT_EQ(c.at("runs")[1].at("seed"), 8);
    EXPECT_GT(c.at("runs")[0].at("metrics").at("passes").get<uint64_t>(), 0u);
    EXPECT_TRUE(c.at("runs")[0].at("vmstat").contains("pgfault"));
    EXPECT_TRUE(c.at("mean").contains("passes"));
    ASSERT_TRUE(c.at("ci95_pct").is_array() || c.at("ci95_pct").is_null());
  }
  EXPECT_EQ(combos[1].at("ci95_pct").size(), 2u);
}

TEST(Compare, FirstVaryChangesSlowestAcrossTheCombinations) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"compare", path, "--vary", "kernel.fault_around_kb=0,64", "--vary",
                       "kernel.read_ahead_kb=16,128", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto combos = nlohmann::json::parse(slurp(json)).at("combinations");
  ASSERT_EQ(combos.size(), 4u);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"0", "16"}, {"0", "128"}, {"64", "16"}, {"64", "128"}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(combos[i].at("settings").at("kernel.fault_around_kb"), want[i].first) << i;
    EXPECT_EQ(combos[i].at("settings").at("kernel.read_ahead_kb"), want[i].second) << i;
  }
  EXPECT_NE(r.out.find("kernel.read_ahead_kb=128"), std::string::npos) << r.out;
}

TEST(Compare, UnknownVaryKeyExitsTwoRunsNothingAndWritesNoJson) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"compare", path, "--vary", "kernel.bogus=0,64", "--json", json});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--vary kernel.bogus=0:1:14: error: kernel.bogus: unknown key"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--vary kernel.bogus=64:"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(json));
}

TEST(Compare, DiagnosticsSharedByEveryCombinationArePrintedOnce) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const Cli r =
      mmsim({"compare", path, "--vary", "kernel.fault_around_kb=0,64", "--set", "kernel.zz=1"});
  EXPECT_EQ(r.code, 2);
  const std::string diag = "error: kernel.zz: unknown key";
  const auto first = r.err.find(diag);
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(diag, first + 1), std::string::npos) << r.err;
}

TEST(Compare, MalformedVaryExitsTwoWithAClearMessage) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const Cli no_eq = mmsim({"compare", path, "--vary", "kernel.fault_around_kb"});
  EXPECT_EQ(no_eq.code, 2);
  EXPECT_NE(no_eq.err.find("--vary kernel.fault_around_kb: expected KEY=V1,V2,... (no '=')"),
            std::string::npos)
      << no_eq.err;
  const Cli no_values = mmsim({"compare", path, "--vary", "kernel.fault_around_kb="});
  EXPECT_EQ(no_values.code, 2);
  EXPECT_NE(no_values.err.find("no values after '='"), std::string::npos) << no_values.err;
  const Cli empty_value = mmsim({"compare", path, "--vary", "kernel.fault_around_kb=0,,64"});
  EXPECT_EQ(empty_value.code, 2);
  EXPECT_NE(empty_value.err.find("empty value"), std::string::npos) << empty_value.err;
  EXPECT_EQ(no_eq.out + no_values.out + empty_value.out, "");
}

TEST(Compare, UnknownMetricExitsTwoNamingTheKnownOnes) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const Cli r = mmsim({"compare", path, "--metric", "nope"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no counter is named \"nope\" (known: passes, elapsed_s"), std::string::npos)
      << r.err;
}

TEST(Compare, OneAndTwoJobsWriteIdenticalJson) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  auto args = fault_around_args(path);
  args.insert(args.end(), {"--vary", "kernel.read_ahead_kb=16,128"});
  auto one = args, two = args;
  one.insert(one.end(), {"--jobs", "1", "--json", dir.file("one.json")});
  two.insert(two.end(), {"--jobs", "2", "--json", dir.file("two.json")});
  const Cli a = mmsim(one);
  const Cli b = mmsim(two);
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const std::string ja = slurp(dir.file("one.json"));
  EXPECT_FALSE(ja.empty());
  EXPECT_EQ(ja, slurp(dir.file("two.json")));
  EXPECT_EQ(a.out, b.out);
}

TEST(Compare, FaultAroundOf64KiBTakesFewerPageFaultsThanNone) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const std::string json = dir.file("out.json");
  auto args = fault_around_args(path);
  args.insert(args.end(), {"--json", json});
  const Cli r = mmsim(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto combos = nlohmann::json::parse(slurp(json)).at("combinations");
  ASSERT_EQ(combos.size(), 2u);
  const int64_t without = combos[0].at("runs")[0].at("vmstat").at("pgfault");
  const int64_t with = combos[1].at("runs")[0].at("vmstat").at("pgfault");
  // 256 file pages: one fault each without fault-around, one per 16 with it
  // (both runs take the executor's own faults besides, about 70).
  EXPECT_GE(without, 256);
  EXPECT_GE(without - with, 256 - 16 - 16);
  EXPECT_NE(combos[0].at("mean").at("sys_s"), combos[1].at("mean").at("sys_s"));
}

TEST(Compare, OneRunPrintsNotAvailableForTheInterval) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"compare", path, "--vary", "kernel.fault_around_kb=0,64", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[n/a]"), std::string::npos) << r.out;
  const auto combos = nlohmann::json::parse(slurp(json)).at("combinations");
  EXPECT_TRUE(combos[1].at("ci95_pct").is_null());
  EXPECT_TRUE(combos[1].at("change_pct").is_number());
}

TEST(Compare, ScenarioWithoutCountersComparesElapsedTime) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario(false));
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"compare", path, "--vary", "kernel.fault_around_kb=0,64", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("time (elapsed_s)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("throughput (elapsed_s)"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(json)).at("metric"), "elapsed_s");
}

TEST(Compare, LongCombinationNamesWrapOntoSeveralHeaderLines) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const Cli r = mmsim({"compare", path, "--vary", "kernel.fault_around_kb=0,64", "--vary",
                       "kernel.read_ahead_kb=128"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line, prev;
  while (std::getline(lines, line) && !line.starts_with("---")) prev = line;
  EXPECT_NE(prev.find("kernel.read_ahead_kb=128"), std::string::npos) << r.out;
  EXPECT_EQ(prev.find("kernel.fault_around_kb"), std::string::npos) << r.out;
}

TEST(CompareStats, WelchIntervalMatchesAHandComputedOne) {
  // Means 12 and 15, variances 4 and 4, n 3 each: se^2 = 8/3, df = 4,
  // t = 2.776, half-width 4.533 on a difference of 3.
  const report::Change c =
      report::change_vs(report::sample_of({10, 12, 14}), report::sample_of({13, 15, 17}));
  ASSERT_TRUE(c.pct && c.ci);
  EXPECT_DOUBLE_EQ(*c.pct, 25.0);
  const double half = 2.776 * std::sqrt(8.0 / 3.0);
  EXPECT_NEAR(c.ci->first, (3 - half) / 12 * 100, 1e-9);
  EXPECT_NEAR(c.ci->second, (3 + half) / 12 * 100, 1e-9);
}

TEST(CompareStats, IntervalNeedsTwoRunsAndANonZeroBase) {
  EXPECT_FALSE(report::change_vs(report::sample_of({10}), report::sample_of({12})).ci);
  EXPECT_FALSE(report::change_vs(report::sample_of({0, 0}), report::sample_of({1, 2})).pct);
  const report::Change same =
      report::change_vs(report::sample_of({4, 4}), report::sample_of({5, 5}));
  ASSERT_TRUE(same.ci);
  EXPECT_DOUBLE_EQ(same.ci->first, 25.0);
  EXPECT_DOUBLE_EQ(same.ci->second, 25.0);
}

TEST(CompareStats, TQuantilesFollowTheTableAndApproachTheNormal) {
  EXPECT_DOUBLE_EQ(report::t_quantile_975(1), 12.706);
  EXPECT_DOUBLE_EQ(report::t_quantile_975(4.9), 2.776);
  EXPECT_DOUBLE_EQ(report::t_quantile_975(30), 2.042);
  EXPECT_DOUBLE_EQ(report::t_quantile_975(60), 2.000);
  EXPECT_GT(report::t_quantile_975(45), 2.000);
  EXPECT_LT(report::t_quantile_975(45), 2.021);
  EXPECT_NEAR(report::t_quantile_975(1e9), 1.960, 1e-6);
}

}  // namespace
}  // namespace mmsim::cli

namespace mmsim::cli {
namespace {

using testing::Cli;
using testing::mmsim;
using testing::slurp;
using testing::TempDir;

// The same sweep, whole and in `n` shards merged: args before the mode's.
std::vector<std::string> sweep(const std::string& path, std::vector<std::string> more) {
  std::vector<std::string> a = {"compare",  path, "--vary", "kernel.fault_around_kb=0,16,64",
                                "--repeat", "2"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

TEST(CompareShards, MergedShardsPrintAndWriteExactlyWhatOneUnshardedCompareDoes) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const Cli whole = mmsim(sweep(path, {"--json", dir.file("whole.json")}));
  ASSERT_EQ(whole.code, 0) << whole.err;
  // 6 runs in 4 shards: shares of 2, 2, 1 and 1, run in any order.
  for (const char* k : {"3/4", "1/4", "4/4", "2/4"}) {
    const Cli s = mmsim(sweep(path, {"--shard", k, "--out", dir.file("shards")}));
    ASSERT_EQ(s.code, 0) << k << ": " << s.err;
  }
  const Cli merged =
      mmsim({"compare", "--merge", dir.file("shards"), "--json", dir.file("merged.json")});
  ASSERT_EQ(merged.code, 0) << merged.err;
  EXPECT_EQ(merged.out, whole.out);
  EXPECT_EQ(merged.err, whole.err);
  EXPECT_EQ(slurp(dir.file("merged.json")), slurp(dir.file("whole.json")));
}

TEST(CompareShards, AShardRunsTheJobsWhoseNumberIsKMinusOneModuloN) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  const Cli s = mmsim(sweep(path, {"--shard", "2/4", "--out", dir.file("s")}));
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_NE(s.out.find("2 of 6 run(s)"), std::string::npos) << s.out;
  EXPECT_TRUE(fs::exists(dir.file("s/run-1.json")));
  EXPECT_TRUE(fs::exists(dir.file("s/run-5.json")));
  EXPECT_FALSE(fs::exists(dir.file("s/run-0.json")));
  EXPECT_TRUE(fs::exists(dir.file("s/plan.json")));
}

TEST(CompareShards, AMergeWithARunMissingNamesItAndPrintsNoTable) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  ASSERT_EQ(mmsim(sweep(path, {"--shard", "1/2", "--out", dir.file("s")})).code, 0);
  const Cli m = mmsim({"compare", "--merge", dir.file("s")});
  EXPECT_EQ(m.code, 2);
  EXPECT_EQ(m.out, "");
  EXPECT_NE(m.err.find("3 of 6 run(s) missing"), std::string::npos) << m.err;
  EXPECT_NE(m.err.find("run-1.json"), std::string::npos) << m.err;
}

TEST(CompareShards, AMergeRefusesShardsOfAScenarioThatChangedSince) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  ASSERT_EQ(mmsim(sweep(path, {"--shard", "1/1", "--out", dir.file("s")})).code, 0);
  dir.write("tiny.toml", tiny_scenario(false));
  const Cli m = mmsim({"compare", "--merge", dir.file("s")});
  EXPECT_EQ(m.code, 2);
  EXPECT_NE(m.err.find("is not the scenario the shards ran"), std::string::npos) << m.err;
}

TEST(CompareShards, BadShardArgumentsAreRefusedBeforeAnythingRuns) {
  TempDir dir;
  const std::string path = dir.write("tiny.toml", tiny_scenario());
  for (const char* bad : {"0/4", "5/4", "4", "a/b", "1/0", "/4"}) {
    const Cli r = mmsim(sweep(path, {"--shard", bad, "--out", dir.file("s")}));
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("expected K/N"), std::string::npos) << bad << ": " << r.err;
  }
  EXPECT_EQ(mmsim(sweep(path, {"--shard", "1/2"})).code, 2);  // no --out
  EXPECT_EQ(mmsim({"compare", "--merge", dir.file("s"), path}).code, 2);
  EXPECT_FALSE(fs::exists(dir.file("s")));
}

}  // namespace
}  // namespace mmsim::cli
