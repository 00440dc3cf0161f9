// The trace writer: exact microsecond timestamps, JSON quoting, the event
// budget and the ends of what began before it ran out.
#include "sim/trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mmsim::sim {
namespace {

TEST(TraceFormat, TimestampsAreNanosecondsWrittenAsExactMicroseconds) {
  EXPECT_EQ(trace_us(1234567), "1234.567");
  EXPECT_EQ(trace_us(5), "0.005");
  EXPECT_EQ(trace_us(-1500), "-1.500");
}

TEST(TraceFormat, NamesAreQuotedAsJsonStrings) {
  EXPECT_EQ(trace_quote("a \"b\"\\\n"), "\"a \\\"b\\\"\\\\\\u000a\"");
}

TEST(Trace, TheBudgetStopsSlicesButEndsWhatBeganAndKeepsCounters) {
  Trace t(2);
  t.begin("migration", 7, "migration", Tick(10), "");
  t.task_state(1, 1, 0, "a", "running", Tick(0), Tick(20), "");
  t.task_state(1, 1, 0, "a", "sleeping", Tick(20), Tick(30), "");  // over the budget
  t.end("migration", 7, "migration", Tick(40), "\"result\":\"migrated\"");
  t.counter("tasks in D", Tick(50), 3);
  EXPECT_EQ(t.events(), 2u);
  EXPECT_TRUE(t.truncated());
  EXPECT_EQ(t.truncated_at(), Tick(20));
  const auto j = nlohmann::json::parse(t.json("test"));
  std::string phases;
  for (const auto& e : j.at("traceEvents")) phases += e.at("ph").get<std::string>();
  EXPECT_EQ(phases, "bXXeMC");  // the running slice is on the task's and the CPU's tracks
  EXPECT_EQ(j.at("otherData").at("truncated_at_s").get<double>(), 20e-9);
}

TEST(Trace, NothingBeforeTheWindowCountsOrShows) {
  Trace t(10, Tick(100));
  t.task_state(1, 1, 0, "a", "running", Tick(0), Tick(50), "");
  t.begin("migration", 1, "migration", Tick(60), "");
  t.end("migration", 1, "migration", Tick(120), "");
  t.task_state(1, 1, 0, "a", "D", Tick(100), Tick(150), "page read at 0x1000");
  EXPECT_EQ(t.events(), 1u);
  const auto j = nlohmann::json::parse(t.json("test"));
  ASSERT_EQ(j.at("traceEvents").size(), 1u);
  EXPECT_EQ(j.at("traceEvents")[0].at("name"), "D: page read at 0x1000");
}

}  // namespace
}  // namespace mmsim::sim
