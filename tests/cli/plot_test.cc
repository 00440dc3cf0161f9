// `mmsim plot` and `--plot`: gnuplot figures of a run and of a compare, with
// the data they were drawn from, and a clear refusal of other JSON.
#include "report/plot.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "support/cli_run.h"
#include "support/run.h"

namespace mmsim::cli {
namespace {

using testing::Cli;
using testing::mmsim;
using testing::slurp;
using testing::TempDir;
namespace fs = std::filesystem;

std::string scenario() {
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
op = "loop"
duration = "50ms"
body = [ { op = "sweep", region = "a", mode = "write" }, { op = "count", counter = "passes" } ]
)";
}

TEST(Plot, ARunDrawsItsTimelineAndItsTasksAsPngAndSvg) {
  TempDir dir;
  const std::string path = dir.write("s.toml", scenario());
  const Cli r = mmsim({"run", path, "--plot", dir.file("fig")});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f :
       {"timeline.png", "timeline.svg", "timeline.gp", "timeline.dat", "tasks.png", "tasks.svg"})
    EXPECT_GT(fs::file_size(dir.file(std::string("fig/") + f)), 100u) << f;
  // Two nodes' pages in use, in MiB, and the rates beside them.
  EXPECT_NE(slurp(dir.file("fig/timeline.dat")).find("node1_MiB"), std::string::npos);
}

TEST(Plot, ACompareDrawsTheThroughputWithTheHalfWidthOfIts95PercentInterval) {
  TempDir dir;
  const std::string path = dir.write("s.toml", scenario());
  const Cli r = mmsim({"compare", path, "--vary", "kernel.fault_around_kb=0,64", "--repeat", "2",
                       "--json", dir.file("c.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  const Cli p = mmsim({"plot", dir.file("c.json"), "--out", dir.file("fig")});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("compare.png"), std::string::npos);
  std::istringstream data(slurp(dir.file("fig/compare.dat")));
  std::string line;
  std::getline(data, line);  // the header
  ASSERT_TRUE(std::getline(data, line));
  EXPECT_TRUE(line.starts_with("\"fault_around_kb=0\" ")) << line;
}

TEST(Plot, JsonOfNeitherRunNorCompareIsRefused) {
  TempDir dir;
  const std::string json = dir.write("x.json", "{\"hello\": 1}");
  const Cli p = mmsim({"plot", json, "--out", dir.file("fig")});
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("not the JSON of mmsim run or mmsim compare"), std::string::npos);
  EXPECT_EQ(mmsim({"plot", dir.file("missing.json")}).code, 2);
}

}  // namespace
}  // namespace mmsim::cli
