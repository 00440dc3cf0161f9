// A run's trace: the same bytes for the same seed, D-state slices naming the
// migration entry they wait on, migrations from start to end with their
// result, NUMA scan passes, and tracks whose slices never overlap.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "scenario/simulation.h"
#include "sim/trace.h"

namespace mmsim {
namespace {

using nlohmann::json;

// numa-threads-group: threads on two nodes sharing memory under NUMA
// balancing, for 20 s; migrations with threads waiting on their entries.
std::string trace_of(uint64_t limit = 0) {
  const auto pr =
      scenario::prepare({std::string(MMSIM_SOURCE_DIR) + "/scenarios/numa-threads-group.toml",
                         std::nullopt,
                         {"scenario.sample_interval=\"1s\""},
                         std::nullopt,
                         ""});
  EXPECT_TRUE(pr.run.has_value());
  if (!pr.run) return "";
  sim::Trace trace(limit);
  scenario::RunOptions ro;
  ro.trace = &trace;
  scenario::simulate(*pr.run, ro);
  return trace.json("test");
}

TEST(TraceRun, TheSameSeedGivesTheSameBytes) { EXPECT_EQ(trace_of(), trace_of()); }

TEST(TraceRun, ShowsDStateOnMigrationEntriesMigrationsAndScanPasses) {
  const json j = json::parse(trace_of());
  int d_on_entry = 0, scans = 0, begun = 0, ended_migrated = 0, counters = 0;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    const std::string name = e.value("name", "");
    if (ph == "X" && name.starts_with("D: migration entry at 0x")) ++d_on_entry;
    if (ph == "i" && name == "NUMA scan pass") {
      ++scans;
      EXPECT_TRUE(e.at("args").contains("hint_faults_since_last"));
    }
    if (ph == "b" && e.at("cat") == "migration") ++begun;
    if (ph == "e" && e.at("cat") == "migration" && e.at("args").at("result") == "migrated")
      ++ended_migrated;
    if (ph == "C") ++counters;
  }
  EXPECT_GT(d_on_entry, 100);
  EXPECT_GT(scans, 2);
  EXPECT_GT(begun, 100);
  EXPECT_GT(ended_migrated, 0);
  EXPECT_GT(counters, 20);
}

TEST(TraceRun, NoTrackHasSlicesThatOverlap) {
  const json j = json::parse(trace_of());
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const double ts = e.at("ts"), dur = e.at("dur");
    tracks[{e.at("pid").get<int>(), e.at("tid").get<int>()}].emplace_back(ts, ts + dur);
  }
  ASSERT_FALSE(tracks.empty());
  for (auto& [track, slices] : tracks) {
    std::sort(slices.begin(), slices.end());
    for (size_t i = 1; i < slices.size(); ++i)
      // Times are whole ns, printed as us with 3 decimals: half a ns of slack
      // absorbs the sum's rounding.
      ASSERT_GE(slices[i].first, slices[i - 1].second - 0.0005)
          << "pid " << track.first << " tid " << track.second << " slice " << i;
  }
}

TEST(TraceRun, ALimitKeepsThatManySlicesAndInstants) {
  const json j = json::parse(trace_of(1000));
  EXPECT_EQ(j.at("otherData").at("events"), 1000);
  EXPECT_FALSE(j.at("otherData").at("truncated_at_s").is_null());
}

}  // namespace
}  // namespace mmsim
