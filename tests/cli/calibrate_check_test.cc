// mmsim calibrate --check: the calibrators' workloads simulated with a
// profile, beside the profile's measured values. Fake profiles.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/calibrate_cmd.h"

namespace mmsim::cli {
namespace {

namespace fs = std::filesystem;

struct FakeProfile {
  fs::path path =
      fs::temp_directory_path() / ("mmsim-check-" + std::to_string(::getpid()) + ".toml");
  explicit FakeProfile(const std::string& text) { std::ofstream(path) << text; }
  ~FakeProfile() { fs::remove(path); }
};

const char* kProfile =
    "# date: 2026-01-02\n[costs]\nsyscall_ns = 100\npte_clear_ns = 50\n\n[measured]\n"
    "file_fault_pages = 16\nminor_fault_file_ns = 200\nzap_pte_ns = 60\nsyscall_ns = 100\n"
    "zero_page_fault_ns = 900\n";

const CheckRow* row(const std::vector<CheckRow>& rows, const std::string& key) {
  for (const auto& r : rows)
    if (r.key == key) return &r;
  return nullptr;
}

TEST(CalibrateCheck, EachWorkloadWithACounterpartGetsAPredictionBesideItsMeasuredValue) {
  FakeProfile p(kProfile);
  std::string error;
  const auto rows = check_profile(p.path.string(), "6.1.0-test", &error);
  ASSERT_FALSE(rows.empty()) << error;
  for (const char* key : {"minor_fault_file_ns + zap_pte_ns", "zero_page_fault_ns"}) {
    const CheckRow* r = row(rows, key);
    ASSERT_NE(r, nullptr) << key;
    ASSERT_TRUE(r->measured) << key;
    ASSERT_TRUE(r->predicted) << key << ": " << r->why_not;
    EXPECT_GT(*r->predicted, 0) << key;
  }
  EXPECT_DOUBLE_EQ(*row(rows, "minor_fault_file_ns + zap_pte_ns")->measured, 260);
}

TEST(CalibrateCheck, AZapAloneIsNotPredictedBecauseTheTaskExitZapsToo) {
  FakeProfile p(kProfile);
  std::string error;
  const auto rows = check_profile(p.path.string(), "6.1.0-test", &error);
  const CheckRow* r = row(rows, "zap_pte_ns");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->predicted);
  EXPECT_NE(r->why_not.find("exit"), std::string::npos) << r->why_not;
}

TEST(CalibrateCheck, TheTableGivesMeasuredPredictedAndTheRelativeError) {
  std::vector<CheckRow> rows = {{"zap_pte_ns", "ns/page", 50.0, 60.0, ""},
                                {"syscall_ns", "", 100.0, std::nullopt, "no operation"}};
  const std::string t = check_table(rows);
  EXPECT_NE(t.find("zap_pte_ns"), std::string::npos) << t;
  EXPECT_NE(t.find("+20.0%"), std::string::npos) << t;
  EXPECT_NE(t.find("not predicted:"), std::string::npos) << t;
  EXPECT_NE(t.find("syscall_ns"), std::string::npos) << t;
  EXPECT_NE(t.find("no operation"), std::string::npos) << t;
}

TEST(CalibrateCheck, AWorkloadWithoutACounterpartIsListedWithTheReason) {
  FakeProfile p(kProfile);
  std::string error;
  const auto rows = check_profile(p.path.string(), "6.1.0-test", &error);
  const CheckRow* r = row(rows, "syscall_ns");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->predicted);
  EXPECT_NE(r->why_not.find("no bare system call"), std::string::npos) << r->why_not;
}

TEST(CalibrateCheck, AWorkloadTheProfileDidNotMeasureSaysSo) {
  FakeProfile p(kProfile);
  std::string error;
  const auto rows = check_profile(p.path.string(), "6.1.0-test", &error);
  const CheckRow* r = row(rows, "anon_fault_zero_ns + zap_anon_pte_ns");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->measured);
  EXPECT_NE(r->why_not.find("[measured]"), std::string::npos) << r->why_not;
}

TEST(CalibrateCheck, AProfileWithoutMeasuredValuesIsRefused) {
  FakeProfile p("[costs]\nsyscall_ns = 100\n");
  std::string error;
  EXPECT_TRUE(check_profile(p.path.string(), "6.1.0-test", &error).empty());
  EXPECT_NE(error.find("[measured]"), std::string::npos) << error;
}

}  // namespace
}  // namespace mmsim::cli
