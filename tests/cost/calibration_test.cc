#include "cost/calibration.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/calibrate_cmd.h"
#include "cost/cost_profile.h"
#include "scenario/scenario.h"

namespace mmsim::cost {
namespace {

Measurements shipped() {
  Measurements m;
  std::string err;
  for (const char* f :
       {"host-calibration.toml", "host-calibration-paths.toml", "host-calibration-memcg.toml"}) {
    EXPECT_TRUE(cli::read_measurements(std::string(MMSIM_SOURCE_DIR) + "/costs/" + f, m, &err))
        << err;
  }
  return m;
}

TEST(Calibration, EveryDerivedCostIsACostParameterWithAMethod) {
  const HostProfile p = derive_host_profile(shipped());
  EXPECT_GE(p.costs.size(), 20u);
  for (const auto& c : p.costs) {
    EXPECT_NE(find_cost_param(c.name), nullptr) << c.name;
    EXPECT_FALSE(c.method.empty()) << c.name;
    EXPECT_GE(c.value, 0) << c.name;
  }
}

TEST(Calibration, FaultEntryIsTheOnePteFaultLessItsPartsThatScale) {
  Measurements m = shipped();
  const HostProfile p = derive_host_profile(m);
  double entry = -1, pte = -1, lookup = -1;
  for (const auto& c : p.costs) {
    if (c.name == "fault_entry_ns") entry = c.value;
    if (c.name == "pte_set_ns") pte = c.value;
    if (c.name == "pagecache_lookup_ns") lookup = c.value;
  }
  ASSERT_GT(entry, 0);
  EXPECT_NEAR(entry + pte + m["mem_latency_local_ns"] + lookup, m["shmem_fault_1pte_ns"], 1e-6);
  // And the file loop's cost per page comes back out of the same pieces.
  const double n = m["fault_around_pages"];
  EXPECT_NEAR((entry + lookup) / n + pte + m["mem_latency_local_ns"], m["minor_fault_file_ns"],
              1e-6);
}

TEST(Calibration, MissingMeasurementsAreNamedAndTheirCostsLeftOut) {
  Measurements m;
  m["syscall_ns"] = 100;
  const HostProfile p = derive_host_profile(m);
  ASSERT_EQ(p.costs.size(), 2u);  // syscall_ns and exit_base_ns
  EXPECT_FALSE(p.missing.empty());
}

TEST(Calibration, TheWrittenProfileLoadsAsAScenarioCostProfile) {
  const HostProfile p = derive_host_profile(shipped());
  const auto path = std::filesystem::temp_directory_path() / "mmsim-calibration-test.toml";
  std::ofstream(path) << host_profile_toml(p, "# test\n");
  auto lr = scenario::parse_scenario(
      "[machine]\npreset = \"2s-16c\"\n[costs]\nprofile = \"" + path.string() +
          "\"\n[run]\nprogram = \"m\"\n[[programs.m]]\nop = \"sleep\"\n"
          "duration = \"1ms\"\n",
      "p.toml", {});
  for (const auto& d : lr.diagnostics) ADD_FAILURE() << d.str();
  ASSERT_TRUE(lr.ok());
  EXPECT_NEAR(lr.scenario->costs.syscall_ns, shipped()["syscall_ns"], 1e-3);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mmsim::cost
