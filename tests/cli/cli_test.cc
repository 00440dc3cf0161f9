// The mmsim command, run in-process: exit codes, diagnostics on stderr, the
// JSON report and its determinism, topology and costs listings.
#include "cli/cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cost/cost_profile.h"
#include "report/report.h"
#include "scenario/scenario.h"
#include "support/cli_run.h"
#include "support/run.h"

namespace mmsim::cli {
namespace {

using testing::Cli;
using testing::mmsim;
using testing::slurp;
using testing::TempDir;
namespace fs = std::filesystem;

// A run of a few milliseconds on the small machine, with one named counter.
std::string small_scenario() {
  return std::string(mmsim::testing::kSmallMachine) + R"(
[run]
program = "main"

[[programs.main]]
op = "map"
region = "a"
size = "64KiB"

[[programs.main]]
op = "loop"
duration = "1ms"
body = [ { op = "sweep", region = "a", mode = "write" }, { op = "count", counter = "passes" } ]
)";
}

TEST(Cli, VersionPrintsTheNameAndSucceeds) {
  const Cli r = mmsim({"--version"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("mmsim ")) << r.out;
}

TEST(Cli, RunOfAMissingFileExitsTwoWithAPositionedError) {
  TempDir dir;
  const std::string path = dir.file("nosuch.toml");
  const Cli r = mmsim({"run", path});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(path + ":1:1: error:"), std::string::npos) << r.err;
}

TEST(Cli, RunOfAScenarioWithErrorsPrintsEveryDiagnosticAndWritesNoJson) {
  TempDir dir;
  std::string text = "colour = \"red\"\n" + small_scenario();
  text += "[[programs.main]]\nop = \"touch\"\nregion = \"ghost\"\n";
  const std::string path = dir.write("bad.toml", text);
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"run", path, "--json", json});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(path + ":1:1: error: colour: unknown key"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": error: programs.main[2].region: no map op creates region \"ghost\""),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(json));
}

TEST(Cli, RunJsonHasExactlyTheDocumentedTopLevelKeys) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"run", path, "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(json));
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  // memcg is there while memory cgroups are on (the default), timeline only
  // with scenario.sample_interval.
  EXPECT_EQ(keys, (std::set<std::string>{"scenario", "seed", "machine", "kernel", "noise",
                                         "metrics", "vmstat", "metadata_lines",
                                         "bandwidth_saturated", "tasks", "sim", "memcg"}));
}

TEST(Cli, NoNoiseTurnsEverySourceOffInTheJson) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"run", path, "--no-noise", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j.at("noise"), (nlohmann::json{{"enabled", false}}));
}

TEST(Cli, RunJsonMetricsHoldTimesAndNamedCounters) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"run", path, "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto m = nlohmann::json::parse(slurp(json)).at("metrics");
  for (const char* k : {"elapsed_s", "user_s", "sys_s", "iowait_s", "passes"})
    EXPECT_TRUE(m.contains(k)) << k << " missing from " << m.dump();
  EXPECT_GT(m.at("passes").get<uint64_t>(), 0u);
  EXPECT_GT(m.at("elapsed_s").get<double>(), 0.0);
}

TEST(Cli, TwoRunsWithoutTimingAndTheSameSeedAreByteIdentical) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const Cli a = mmsim({"run", path, "--no-timing", "--seed", "3", "--json", dir.file("a.json")});
  const Cli b = mmsim({"run", path, "--no-timing", "--seed", "3", "--json", dir.file("b.json")});
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const std::string ja = slurp(dir.file("a.json"));
  EXPECT_FALSE(ja.empty());
  EXPECT_EQ(ja, slurp(dir.file("b.json")));
  EXPECT_EQ(a.out, b.out);
}

TEST(Cli, TheSummaryOnStdoutIsTheSameEveryRunAndTheWallTimeGoesToStderr) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const Cli a = mmsim({"run", path});
  const Cli b = mmsim({"run", path});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out.find("wall"), std::string::npos);
  EXPECT_NE(a.err.find("s wall"), std::string::npos);
}

TEST(Cli, SeedOptionAppearsInTheJson) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"run", path, "--seed", "7", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(slurp(json).find("\"seed\": 7"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(slurp(json)).at("seed"), 7);
}

TEST(Cli, SetOptionIsAppliedAndRecordedInTheJson) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"run", path, "--set", "kernel.version=3.3", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j.at("kernel").at("fault_around_kb"), 0);
  EXPECT_EQ(j.at("scenario").at("overrides"), nlohmann::json::array({"kernel.version=3.3"}));
}

TEST(Cli, RunJsonKernelHoldsTheVersionAndEverySwitchOfEveryTable) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"run", path, "--set", "memcg.hierarchy=v2", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto k = nlohmann::json::parse(slurp(json)).at("kernel");
  const auto lr = scenario::parse_scenario(small_scenario(), "small.toml", {"memcg.hierarchy=v2"});
  ASSERT_TRUE(lr.ok());
  EXPECT_EQ(k.at("version"), "6.6");
  size_t switches = 0;
  scenario::for_each_switch(lr.scenario->kernel, [&](const SwitchInfo& sw, int64_t value) {
    ++switches;
    const nlohmann::json& where = sw.section == "kernel" ? k : k.at(std::string(sw.section));
    ASSERT_TRUE(where.contains(std::string(sw.key))) << sw.name() << " missing from " << k.dump();
    const nlohmann::json& v = where.at(std::string(sw.key));
    if (sw.key == "numa_balancing") {
      EXPECT_EQ(v, 1) << "auto is on with 2 nodes";
    } else if (sw.kind == SwitchKind::kBool) {
      EXPECT_TRUE(v.is_boolean()) << sw.name() << ": " << v.dump();
      EXPECT_EQ(v, value != 0) << sw.name();
    } else if (sw.kind == SwitchKind::kChoice) {
      EXPECT_TRUE(v.is_string()) << sw.name() << ": " << v.dump();
      EXPECT_EQ(v, sw.format(value)) << sw.name();
    } else {
      EXPECT_EQ(v, nlohmann::json(report::switch_json(sw, value))) << sw.name();
    }
  });
  EXPECT_GE(switches, 20u);
  EXPECT_EQ(k.at("memcg").at("hierarchy"), "v2");
  for (const char* key : {"skip_dirty_file", "skip_target_node", "ratelimit_pages", "tick_hz"})
    EXPECT_TRUE(k.at("numa").contains(key)) << key;
  EXPECT_TRUE(k.at("memcg").contains("charge_batch"));
}

TEST(Cli, RunJsonShowsAFolioSizeThatFollowsReadaheadAsTheWordReadAheadKb) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const std::string json = dir.file("out.json");
  const Cli r = mmsim({"run", path, "--set", "kernel.version=6.16", "--json", json});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto k = nlohmann::json::parse(slurp(json)).at("kernel");
  EXPECT_EQ(k.at("version"), "6.16");
  EXPECT_EQ(k.at("pagecache_folio_kb"), "read_ahead_kb");
}

// The summary's line that starts with `prefix`, or "" if none does.
std::string summary_line(const std::string& out, const std::string& prefix) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) return line;
  return "";
}

TEST(Cli, TheSummaryShowsTheKernelNumaAndMemcgSwitchesEachOnItsOwnLine) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const Cli r = mmsim({"run", path, "--set", "kernel.version=4.16"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string machine = summary_line(r.out, "machine  ");
  ASSERT_FALSE(machine.empty()) << r.out;
  EXPECT_EQ(machine.find("4.16"), std::string::npos) << machine;
  const std::string kernel = summary_line(r.out, "kernel   4.16: ");
  EXPECT_NE(kernel.find(" fault_around_kb=64"), std::string::npos) << r.out;
  EXPECT_NE(kernel.find(" numa_balancing=1"), std::string::npos) << r.out;
  const std::string numa = summary_line(r.out, "numa     ");
  EXPECT_NE(numa.find(" skip_shared_cow=true"), std::string::npos) << r.out;
  EXPECT_NE(numa.find(" skip_dirty_file=false"), std::string::npos) << r.out;
  const std::string memcg = summary_line(r.out, "memcg    ");
  EXPECT_NE(memcg.find(" stat_protocol=begin-end"), std::string::npos) << r.out;
  EXPECT_NE(memcg.find(" hierarchy=v1"), std::string::npos) << r.out;
}

TEST(Cli, TheSummaryHasNoNumaLineWhenBalancingIsOff) {
  TempDir dir;
  const std::string path = dir.write("small.toml", small_scenario());
  const Cli r = mmsim({"run", path, "--set", "kernel.numa_balancing=0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(summary_line(r.out, "kernel   6.6: ").find(" numa_balancing=0"), std::string::npos)
      << r.out;
  EXPECT_EQ(summary_line(r.out, "numa "), "") << r.out;
}

TEST(Cli, TopologyOfTheEightSocketXeonListsEightNodesAnd288Cpus) {
  const Cli r = mmsim({"topology", "--machine", "xeon-8s-144c"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("available: 8 nodes (0-7)\n"), std::string::npos) << r.out;
  // "node N cpus: 0 1 2 ..." lines (no std::regex: GCC 12's -Wmaybe-uninitialized
  // trips over <regex> in the sanitizer build).
  size_t cpus = 0, lines = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string node, cpus_word;
    int n = -1;
    if (!(words >> node >> n >> cpus_word) || node != "node" || cpus_word != "cpus:") continue;
    ++lines;
    for (int id; words >> id;) ++cpus;
  }
  EXPECT_EQ(lines, 8u);
  EXPECT_EQ(cpus, 288u);
}

TEST(Cli, TopologyOfAnUnknownMachineExitsTwo) {
  const Cli r = mmsim({"topology", "--machine", "nosuch"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nosuch"), std::string::npos) << r.err;
}

TEST(Cli, UnknownOptionExitsTwo) {
  const Cli r = mmsim({"run", "--bogus"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("mmsim: error:"), std::string::npos) << r.err;
}

TEST(Cli, NoSubcommandExitsTwo) {
  const Cli r = mmsim({});
  EXPECT_EQ(r.code, 2);
}

TEST(Cli, CostsListsEveryParameterOfEachMachineWithItsSource) {
  ASSERT_FALSE(cost::machine_profiles().empty());
  for (const auto& m : cost::machine_profiles()) {
    const Cli r = mmsim({"costs", "--machine", std::string(m.machine)});
    ASSERT_EQ(r.code, 0) << r.err;
    std::vector<std::string> lines;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    for (const auto& p : cost::cost_params()) {
      const auto v = std::find_if(m.values.begin(), m.values.end(),
                                  [&](const cost::CostValue& c) { return c.name == p.name; });
      ASSERT_NE(v, m.values.end()) << m.machine << " has no " << p.name;
      EXPECT_FALSE(v->source.empty()) << m.machine << ": " << p.name << " has no source";
      const auto it = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
        return l.starts_with(std::string(p.name) + " ");
      });
      ASSERT_NE(it, lines.end()) << p.name << " not listed in:\n" << r.out;
      EXPECT_NE(it->find(std::string(v->source)), std::string::npos) << *it;
    }
    EXPECT_EQ(m.values.size(), cost::cost_params().size()) << m.machine;
  }
}

TEST(Cli, CostsRefusesAMachineWithoutAProfile) {
  const Cli r = mmsim({"costs", "--machine", "pdp-11"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("pdp-11"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mmsim::cli
