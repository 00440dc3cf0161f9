// `mmsim compare A.toml B.toml ...`: a suite of scenarios across the same
// settings, each program beside its _HARD_BIND and _INVERSE_BIND references.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/suite.h"
#include "support/cli_run.h"

namespace mmsim::cli {
namespace {

using testing::Cli;
using testing::mmsim;
using testing::slurp;
using testing::TempDir;

// Two threads zero each their own half of a 256 MiB buffer (more than a
// socket's LLC) 200 times. The
// program first touches it all on node 0 (under a bind policy, as numa01
// does); its references bind each thread and its half to the same node, or
// the thread to one node and its half to the other.
std::string program(const std::string& name, const std::string& main_setup,
                    const std::string& thread_setup) {
  return R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "1GiB"
[scenario]
name = ")" +
         name + R"("
[kernel]
numa_balancing = 1
transparent_hugepage = "never"
[run]
program = "main"
[[programs.main]]
op = "map"
region = "buf"
size = "256MiB"
)" + main_setup +
         R"(
[[programs.main]]
op = "threads"
count = 2
program = "thread"
[[programs.main]]
op = "wait"
)" + thread_setup +
         R"(
[[programs.thread]]
op = "loop"
count = 200
body = [{ op = "sweep", region = "buf", mode = "write", build = "memset", slice = "own" }]
)";
}

const std::string kOnNode0 = R"(
[[programs.main]]
op = "mempolicy"
policy = "bind"
nodes = [0]
[[programs.main]]
op = "sweep"
region = "buf"
mode = "write"
build = "memset"
[[programs.main]]
op = "mempolicy"
policy = "default"
)";
std::string bound(const std::string& memory) {
  return "[[programs.thread]]\nop = \"pin\"\nnodes = \"own\"\n"
         "[[programs.thread]]\nop = \"mempolicy\"\npolicy = \"bind\"\nnodes = \"" +
         memory + "\"\n";
}

struct Suite {
  TempDir dir;
  std::vector<std::string> paths;
  Suite() {
    paths.push_back(dir.write("p.toml", program("p", kOnNode0, "")));
    paths.push_back(dir.write("p_HARD_BIND.toml", program("p_HARD_BIND", "", bound("own"))));
    paths.push_back(
        dir.write("p_INVERSE_BIND.toml", program("p_INVERSE_BIND", "", bound("mirror"))));
  }
  std::vector<std::string> args(std::vector<std::string> more) const {
    std::vector<std::string> a = {"compare"};
    a.insert(a.end(), paths.begin(), paths.end());
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
};

TEST(CompareSuite, AProgramIsShownWithItsReferencesAndTheGapItCloses) {
  Suite s;
  const Cli r = mmsim(s.args({"--vary", "kernel.numa_balancing=0,1", "--repeat", "2"}));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* row : {"\np ", "  Elapsed s ", "  System s ", "  numa_hint_faults ",
                          "  HARD_BIND elapsed s ", "  INVERSE_BIND elapsed s ", "  gap closed % "})
    EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
  // The references are rows of their program, not programs of their own.
  EXPECT_EQ(r.out.find("\np_HARD_BIND"), std::string::npos) << r.out;
}

TEST(CompareSuite, JsonGivesEachProgramItsReferencesAndGapPerCombination) {
  Suite s;
  const std::string json = s.dir.file("suite.json");
  const Cli r = mmsim(s.args({"--vary", "kernel.numa_balancing=0,1", "--json", json}));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(json));
  ASSERT_EQ(j.at("programs").size(), 1u);
  const auto& p = j.at("programs")[0];
  EXPECT_EQ(p.at("name"), "p");
  EXPECT_EQ(p.at("hard_bind"), "p_HARD_BIND");
  EXPECT_EQ(p.at("inverse_bind"), "p_INVERSE_BIND");
  ASSERT_EQ(p.at("gap_closed_pct").size(), 2u);
  // Balancing moves each half to its thread's node: it closes more of the gap.
  EXPECT_LT(p.at("gap_closed_pct")[0].get<double>(), p.at("gap_closed_pct")[1].get<double>());
  EXPECT_EQ(j.at("suite").size(), 3u);
}

TEST(CompareSuite, ABadScenarioStopsTheSuiteBeforeAnythingRuns) {
  Suite s;
  s.paths.push_back(
      s.dir.write("bad.toml", program("bad", "", "[[programs.thread]]\nop = \"fly\"\n")));
  const std::string json = s.dir.file("suite.json");
  const Cli r = mmsim(s.args({"--json", json}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.toml"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(std::filesystem::exists(json));
}

TEST(CompareSuite, OneScenarioFlagsAreRefusedWithSeveralScenarios) {
  Suite s;
  const Cli r = mmsim(s.args({"--csv", s.dir.file("x.csv")}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--csv, --plot, --shard and --merge take one scenario"), std::string::npos)
      << r.err;
}

TEST(GapClosed, IsAHundredAtTheHardBoundTimeAndZeroAtTheInverse) {
  EXPECT_DOUBLE_EQ(*report::gap_closed_pct(10, 10, 20), 100);
  EXPECT_DOUBLE_EQ(*report::gap_closed_pct(20, 10, 20), 0);
  EXPECT_DOUBLE_EQ(*report::gap_closed_pct(25, 10, 20), -50);
  EXPECT_FALSE(report::gap_closed_pct(5, 10, 10).has_value());
}

}  // namespace
}  // namespace mmsim::cli
