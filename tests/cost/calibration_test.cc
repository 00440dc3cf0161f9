#include "cost/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
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

Measurement exactly(double v) { return {v, v, v}; }

// A fake calibration with every kernel-path input, all runs agreeing.
Measurements kernel_paths() {
  Measurements m;
  m["syscall_ns"] = exactly(100);
  m["file_fault_entry_ns"] = exactly(2000);  // a fault mapping 16 pages
  m["shmem_fault_1pte_ns"] = exactly(500);   // a fault mapping 1
  m["fault_around_pages"] = exactly(16);
  m["zero_page_fault_ns"] = exactly(600);
  m["pagecache_mincore_ns"] = exactly(30);
  m["zap_pte_ns"] = exactly(50);
  m["zap_anon_pte_ns"] = exactly(150);
  m["anon_fault_zero_ns"] = exactly(1500);
  m["page_zero_ns"] = exactly(400);
  m["mmap_munmap_ns"] = exactly(1000);
  m["mprotect_call_ns"] = exactly(900);
  m["mprotect_pte_ns"] = exactly(20);
  return m;
}

const DerivedCost* find(const std::vector<DerivedCost>& v, const std::string& name) {
  for (const auto& c : v)
    if (c.name == name) return &c;
  return nullptr;
}

TEST(Calibration, EveryWrittenCostIsACostParameterWithAMethodAndAboveZero) {
  const HostProfile p = derive_host_profile(shipped());
  EXPECT_GE(p.costs.size(), 15u);
  for (const auto& c : p.costs) {
    EXPECT_NE(find_cost_param(c.name), nullptr) << c.name;
    EXPECT_FALSE(c.method.empty()) << c.name;
    if (!c.by_definition) {
      EXPECT_GT(c.value, 0) << c.name;
    }
  }
}

TEST(Calibration, ADerivationThatWouldGoNegativeIsNamedAsFailedAndNotWritten) {
  Measurements m = kernel_paths();
  m["zap_anon_pte_ns"] = exactly(30);  // below zap_pte_ns: page_free_ns would be -20
  const HostProfile p = derive_host_profile(m);
  EXPECT_EQ(find(p.costs, "page_free_ns"), nullptr);
  ASSERT_EQ(p.failed.size(), 1u);
  EXPECT_EQ(p.failed[0].name, "page_free_ns");
  EXPECT_NE(p.failed[0].why.find("zap_anon_pte_ns - zap_pte_ns"), std::string::npos)
      << p.failed[0].why;
}

TEST(Calibration, ADerivationThatComesOutZeroIsFailedNotWrittenAsZero) {
  Measurements m = kernel_paths();
  m["zero_page_fault_ns"] = exactly(100);  // = pte_set_ns: fault_entry_ns would be 0
  const HostProfile p = derive_host_profile(m);
  EXPECT_EQ(find(p.costs, "fault_entry_ns"), nullptr);
  ASSERT_FALSE(p.failed.empty());
  EXPECT_EQ(p.failed[0].name, "fault_entry_ns");
  for (const auto& c : p.costs) {
    if (!c.by_definition) {
      EXPECT_GT(c.value, 0) << c.name;
    }
  }
}

TEST(Calibration, PteSetIsTheCostOfOneMorePageInAFaultAroundBatch) {
  const HostProfile p = derive_host_profile(kernel_paths());
  ASSERT_NE(find(p.costs, "pte_set_ns"), nullptr);
  EXPECT_DOUBLE_EQ(find(p.costs, "pte_set_ns")->value, (2000 - 500) / 15.0);
}

TEST(Calibration, AFaultThatMapsOnePageLeavesNoBatchToMeasureAPteInAndSaysSo) {
  Measurements m = kernel_paths();
  m["fault_around_pages"] = exactly(1);
  const HostProfile p = derive_host_profile(m);
  EXPECT_EQ(find(p.costs, "pte_set_ns"), nullptr);
  ASSERT_FALSE(p.failed.empty());
  EXPECT_EQ(p.failed[0].name, "pte_set_ns");
}

TEST(Calibration, PageCacheLookupIsMeasuredDirectlyByMincore) {
  const HostProfile p = derive_host_profile(kernel_paths());
  ASSERT_NE(find(p.costs, "pagecache_lookup_ns"), nullptr);
  EXPECT_DOUBLE_EQ(find(p.costs, "pagecache_lookup_ns")->value, 30);
}

TEST(Calibration, ADerivedCostRangesOverItsInputsRanges) {
  Measurements m = kernel_paths();
  m["zero_page_fault_ns"] = {600, 580, 650};
  m["file_fault_entry_ns"] = {2000, 1985, 2015};  // pte_set_ns 100 in [99, 101]
  const HostProfile p = derive_host_profile(m);
  const DerivedCost* entry = find(p.costs, "fault_entry_ns");
  ASSERT_NE(entry, nullptr);
  EXPECT_DOUBLE_EQ(entry->value, 500);
  EXPECT_DOUBLE_EQ(entry->min, 580 - 101);
  EXPECT_DOUBLE_EQ(entry->max, 650 - 99);
}

TEST(Calibration, SpreadIsTheRangeOfTheRunsOverTheirMedian) {
  EXPECT_DOUBLE_EQ((Measurement{10, 9, 12}).spread(), 0.3);
  EXPECT_DOUBLE_EQ(exactly(5).spread(), 0);
  EXPECT_TRUE(std::isinf((Measurement{0, -1, 1}).spread()));
}

TEST(Calibration, AnInputSpreadingMoreThanTheThresholdIsNamedUnstable) {
  Measurements m = kernel_paths();
  m["syscall_ns"] = {100, 80, 130};  // 50%
  const HostProfile p = derive_host_profile(m, 0.25);
  ASSERT_EQ(p.unstable.size(), 1u);
  EXPECT_EQ(p.unstable[0].name, "syscall_ns");
  EXPECT_TRUE(derive_host_profile(m, 0.6).unstable.empty());
}

TEST(Calibration, AMeasurementNoCostIsDerivedFromDoesNotMakeTheHostUnstable) {
  Measurements m = kernel_paths();
  m["shmem_random_fault_ns"] = {100, 10, 1000};  // a note-only measurement
  EXPECT_TRUE(derive_host_profile(m).unstable.empty());
}

TEST(Calibration, TheProfileGivesEachValueItsSpreadAndRangeAndListsEveryMeasurement) {
  Measurements m = kernel_paths();
  m["syscall_ns"] = {100, 95, 105};
  const std::string text = host_profile_toml(derive_host_profile(m), "# test\n");
  EXPECT_NE(text.find("syscall_ns = 100   # spread 10.0% [min 95, max 105]"), std::string::npos)
      << text;
  const auto measured = text.find("[measured]");
  ASSERT_NE(measured, std::string::npos);
  EXPECT_NE(text.find("zap_anon_pte_ns = 150", measured), std::string::npos) << text;
}

TEST(Calibration, AHardwareValueThisBuildHasNoParameterForGoesToMeasured) {
  Measurements m;
  m["core_ghz"] = exactly(2.5);
  const HostProfile p = derive_host_profile(m);
  if (find_cost_param("core_ghz")) {
    EXPECT_NE(find(p.costs, "core_ghz"), nullptr);
  } else {
    EXPECT_EQ(find(p.costs, "core_ghz"), nullptr);
    EXPECT_NE(find(p.measured, "core_ghz"), nullptr);
  }
}

TEST(Calibration, LittlesLawGivesTheOutstandingStreamRequests) {
  Measurements m;
  m["stream_read_gbps"] = exactly(12.8);  // B/ns
  m["mem_latency_ns"] = exactly(100);
  const HostProfile p = derive_host_profile(m);
  const DerivedCost* c = find_cost_param("l2_outstanding") ? find(p.costs, "l2_outstanding")
                                                           : find(p.measured, "l2_outstanding");
  ASSERT_NE(c, nullptr);
  EXPECT_DOUBLE_EQ(c->value, 20);  // 12.8 B/ns x 100 ns / 64 B
}

TEST(Calibration, TheDramLineCostIsNoLongerProduced) {
  const HostProfile p = derive_host_profile(shipped());
  EXPECT_EQ(find(p.costs, "dram_line_ns"), nullptr);
}

TEST(Calibration, MissingMeasurementsAreNamedAndTheirCostsLeftOut) {
  Measurements m;
  m["syscall_ns"] = exactly(100);
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
  EXPECT_NEAR(lr.scenario->costs.syscall_ns, shipped()["syscall_ns"].median, 1e-3);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mmsim::cost
