// The [swap] table: a swap device's size, checked by the loader.
#include <gtest/gtest.h>

#include <string>

#include "scenario/scenario.h"
#include "support/base_scenario.h"

namespace mmsim::scenario {
namespace {

constexpr const char* kBase = testing::kBaseScenario;

std::string errors_of(const std::string& extra) {
  const LoadResult lr = parse_scenario(std::string(kBase) + extra, "t.toml", {});
  std::string s;
  for (const auto& d : lr.diagnostics) s += d.str() + "\n";
  return s;
}

TEST(SwapTable, ASizeGivesTheMachineASwapDeviceOfThatManyPages) {
  const LoadResult lr =
      parse_scenario(std::string(kBase) + "[swap]\nsize = \"1GiB\"\n", "t.toml", {});
  ASSERT_TRUE(lr.ok());
  EXPECT_EQ(lr.scenario->kernel.swap_bytes, uint64_t{1} << 30);
  EXPECT_EQ(world_config(*lr.scenario, topo::Topology(lr.scenario->machine)).mm.swap_pages,
            (uint64_t{1} << 30) / 4096);
}

TEST(SwapTable, WithoutTheTableThereIsNoSwap) {
  const LoadResult lr = parse_scenario(kBase, "t.toml", {});
  ASSERT_TRUE(lr.ok());
  EXPECT_EQ(lr.scenario->kernel.swap_bytes, 0u);
}

TEST(SwapTable, APartialPageIsAnErrorAtItsPlace) {
  EXPECT_NE(errors_of("[swap]\nsize = 5000\n").find("t.toml:10:8: error: swap.size: 5000 bytes"),
            std::string::npos);
}

TEST(SwapTable, AnUnknownKeyIsAnError) {
  EXPECT_NE(errors_of("[swap]\nsize = \"1MiB\"\ndevice = \"ssd\"\n").find("swap.device"),
            std::string::npos);
}

}  // namespace
}  // namespace mmsim::scenario
