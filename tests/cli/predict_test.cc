#include "cli/predict.h"

#include <gtest/gtest.h>

#include <sstream>

#include "scenario/scenario.h"

namespace mmsim::cli {
namespace {

TEST(Predict, BothBenchmarksHaveAScenarioThatLoads) {
  for (const char* bench : {"numa-shared-cow", "mmap-fault-drop"}) {
    PredictParams p;
    p.bench = bench;
    auto lr = scenario::parse_scenario(predict_scenario(p, "6.1.0-18-amd64"), "p.toml", {});
    for (const auto& d : lr.diagnostics) ADD_FAILURE() << bench << ": " << d.str();
    EXPECT_TRUE(lr.ok());
    EXPECT_TRUE(lr.scenario->host_machine);
  }
}

TEST(Predict, AKernelNewerThanThePresetsIsClampedToTheNewestOne) {
  PredictParams p;
  p.bench = "mmap-fault-drop";
  auto lr = scenario::parse_scenario(predict_scenario(p, "7.2.1"), "p.toml", {});
  ASSERT_TRUE(lr.ok());
  EXPECT_EQ(lr.scenario->kernel.version.str(), "6.19");
}

TEST(Predict, ComparesEachMetricAndGivesItsRelativeError) {
  PredictParams p;
  p.bench = "mmap-fault-drop";
  p.size_bytes = 1 << 20;
  p.loops = 2;
  nlohmann::ordered_json native = {
      {"metrics", {{"elapsed_s", 0.01}, {"touches", 512}, {"user_s", 0.0}, {"sys_s", 0.01}}},
      {"vmstat", {{"pgfault", 100}}}};
  std::ostringstream out, err;
  nlohmann::ordered_json result;
  ASSERT_EQ(predict(p, native, out, err, &result), 0) << err.str();
  EXPECT_TRUE(result.contains("native"));
  EXPECT_TRUE(result.contains("simulated"));
  EXPECT_DOUBLE_EQ(result["relative_error"]["touches"].get<double>(), 0.0);
  EXPECT_TRUE(result["relative_error"].contains("pgfault"));
  EXPECT_NE(out.str().find("elapsed_s"), std::string::npos);
}

}  // namespace
}  // namespace mmsim::cli
