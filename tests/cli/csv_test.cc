// CSV output: the table writer's columns and quoting, and `run --csv` and
// `compare --csv` files that a CSV reader takes without edits.
#include "report/csv.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli_run.h"
#include "support/run.h"

namespace mmsim::cli {
namespace {

using nlohmann::ordered_json;
using testing::Cli;
using testing::mmsim;
using testing::slurp;
using testing::TempDir;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(Csv, NestedKeysBecomeDottedColumnsAndAMissingCellStaysEmpty) {
  const std::vector<ordered_json> rows = {
      {{"pid", 1}, {"numa", {{"numa_scan_seq", 3}}}},
      {{"pid", 2}, {"extra", 0.5}},
  };
  EXPECT_EQ(report::csv_table(rows), "pid,numa.numa_scan_seq,extra\n1,3,\n2,,0.5\n");
}

TEST(Csv, AnArrayOfPerNodeObjectsIsKeyedByNode) {
  const ordered_json row = {
      {"faults", {{{"node", 0}, {"private", 4}}, {{"node", 1}, {"private", 7}}}}};
  EXPECT_EQ(report::csv_table({row}), "faults.node0.private,faults.node1.private\n4,7\n");
}

TEST(Csv, AStringWithACommaOrAQuoteIsQuotedAsRfc4180Has) {
  const ordered_json row = {{"comm", "a,b"}, {"name", "say \"hi\""}, {"none", nullptr}};
  EXPECT_EQ(report::csv_table({row}), "comm,name,none\n\"a,b\",\"say \"\"hi\"\"\",\n");
}

std::string small_scenario() {
  return std::string(mmsim::testing::kSmallMachine) + R"(
[scenario]
sample_interval = "10ms"

[run]
program = "main"

[[programs.main]]
op = "map"
region = "a"
size = "1MiB"

[[programs.main]]
op = "threads"
count = 2
program = "worker"

[[programs.main]]
op = "wait"

[[programs.worker]]
op = "loop"
duration = "50ms"
body = [ { op = "sweep", region = "a", mode = "write" }, { op = "count", counter = "passes" } ]
)";
}

TEST(Csv, RunWritesOneRowPerTaskAndItsTimelineInASecondFile) {
  TempDir dir;
  const std::string path = dir.write("s.toml", small_scenario());
  const Cli r = mmsim({"run", path, "--csv", dir.file("out.csv"), "--json", dir.file("out.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  const ordered_json j = ordered_json::parse(slurp(dir.file("out.json")));
  const auto tasks = lines(slurp(dir.file("out.csv")));
  ASSERT_EQ(tasks.size(), j.at("tasks").size() + 1);
  EXPECT_TRUE(tasks[0].starts_with("pid,tgid,ppid,comm,")) << tasks[0];
  EXPECT_NE(tasks[0].find("counters.passes"), std::string::npos);
  const auto timeline = lines(slurp(dir.file("out.timeline.csv")));
  ASSERT_EQ(timeline.size(), j.at("timeline").size() + 1);
  EXPECT_TRUE(timeline[0].starts_with("t_s,pgfault,")) << timeline[0];
}

TEST(Csv, CompareWritesOneRowPerRunWithTheVariedSettingFirst) {
  TempDir dir;
  const std::string path = dir.write("s.toml", small_scenario());
  const Cli r = mmsim({"compare", path, "--vary", "kernel.fault_around_kb=0,64", "--repeat", "2",
                       "--csv", dir.file("c.csv")});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = lines(slurp(dir.file("c.csv")));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_TRUE(rows[0].starts_with("kernel.fault_around_kb,seed,passes,elapsed_s,")) << rows[0];
  EXPECT_NE(rows[0].find(",pgfault,"), std::string::npos);
  EXPECT_TRUE(rows[1].starts_with("0,1,")) << rows[1];
  EXPECT_TRUE(rows[4].starts_with("64,2,")) << rows[4];
}

}  // namespace
}  // namespace mmsim::cli
