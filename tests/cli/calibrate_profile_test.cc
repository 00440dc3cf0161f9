// mmsim calibrate's verdict on a set of measurements: the spreads it reports,
// the unstable host it refuses, the profile it writes. Fake measurement sets;
// nothing is timed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/calibrate_cmd.h"
#include "cli/cli.h"

namespace mmsim::cli {
namespace {

namespace fs = std::filesystem;

cost::Measurements stable_set() {
  cost::Measurements m;
  m["syscall_ns"] = {100, 98, 103};
  m["zap_pte_ns"] = {50, 49, 52};
  m["fork_exit_wait_ns"] = {90000, 88000, 93000};
  return m;
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("mmsim-calprof-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CalibrateProfile, AStableHostGetsItsProfileWrittenWithItsDateAndEverySpread) {
  TempDir t;
  CalibrateArgs a;
  a.out = (t.dir / "p.toml").string();
  std::ostringstream out, err;
  const auto p = cost::derive_host_profile(stable_set(), a.max_spread);
  ASSERT_EQ(write_host_profile(p, a, "Linux test", "2026-01-02 03:04 UTC", out, err), 0)
      << err.str();
  const std::string text = slurp(a.out);
  EXPECT_NE(text.find("# date: 2026-01-02 03:04 UTC"), std::string::npos) << text;
  EXPECT_NE(text.find("# Stable"), std::string::npos) << text;
  EXPECT_NE(text.find("syscall_ns = 100   # spread 5.0% [min 98, max 103]"), std::string::npos)
      << text;
  EXPECT_NE(out.str().find("syscall_ns"), std::string::npos);  // the terminal table
  EXPECT_NE(out.str().find("5.0%"), std::string::npos) << out.str();
}

TEST(CalibrateProfile, AnUnstableHostIsNamedAndRefusedWithExitCode3AndNoProfile) {
  TempDir t;
  CalibrateArgs a;
  a.out = (t.dir / "p.toml").string();
  cost::Measurements m = stable_set();
  m["zap_pte_ns"] = {50, 30, 80};  // 100%
  std::ostringstream out, err;
  const auto p = cost::derive_host_profile(m, a.max_spread);
  EXPECT_EQ(write_host_profile(p, a, "Linux test", "2026-01-02", out, err), kExitHostRefused);
  EXPECT_FALSE(fs::exists(a.out));
  EXPECT_NE(err.str().find("unstable"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("zap_pte_ns (100.0%"), std::string::npos) << err.str();
  EXPECT_EQ(err.str().find("syscall_ns ("), std::string::npos) << err.str();
}

TEST(CalibrateProfile, ForceWritesAnUnstableProfileWhoseHeaderListsTheUnstableMeasurements) {
  TempDir t;
  CalibrateArgs a;
  a.out = (t.dir / "p.toml").string();
  a.force = true;
  cost::Measurements m = stable_set();
  m["zap_pte_ns"] = {50, 30, 80};
  std::ostringstream out, err;
  const auto p = cost::derive_host_profile(m, a.max_spread);
  ASSERT_EQ(write_host_profile(p, a, "Linux test", "2026-01-02", out, err), 0) << err.str();
  const std::string text = slurp(a.out);
  EXPECT_NE(text.find("# UNSTABLE HOST"), std::string::npos) << text;
  EXPECT_NE(text.find("zap_pte_ns (100.0%"), std::string::npos) << text;
}

TEST(CalibrateProfile, AHigherMaxSpreadAcceptsTheSameMeasurements) {
  TempDir t;
  CalibrateArgs a;
  a.out = (t.dir / "p.toml").string();
  a.max_spread = 1.5;
  cost::Measurements m = stable_set();
  m["zap_pte_ns"] = {50, 30, 80};
  std::ostringstream out, err;
  const auto p = cost::derive_host_profile(m, a.max_spread);
  EXPECT_EQ(write_host_profile(p, a, "Linux test", "2026-01-02", out, err), 0) << err.str();
}

TEST(CalibrateProfile, AFailedDerivationIsNamedOnTheTerminalAndInTheProfile) {
  TempDir t;
  CalibrateArgs a;
  a.out = (t.dir / "p.toml").string();
  cost::Measurements m = stable_set();
  m["zap_anon_pte_ns"] = {40, 40, 40};  // below zap_pte_ns
  std::ostringstream out, err;
  const auto p = cost::derive_host_profile(m, a.max_spread);
  ASSERT_EQ(write_host_profile(p, a, "Linux test", "2026-01-02", out, err), 0) << err.str();
  EXPECT_NE(err.str().find("failed derivation: page_free_ns"), std::string::npos) << err.str();
  EXPECT_NE(slurp(a.out).find("# FAILED derivation: page_free_ns"), std::string::npos);
}

TEST(CalibrateProfile, ReadMeasurementsTakesEachRangeFromTheSpreadTable) {
  TempDir t;
  const fs::path f = t.dir / "cal.toml";
  std::ofstream(f) << "[costs]\nsyscall_ns = 100   # min 90\nlone_ns = 7\n\n[spread]\n"
                      "syscall_ns = [90, 120]\n";
  cost::Measurements m;
  std::string error;
  ASSERT_TRUE(read_measurements(f.string(), m, &error)) << error;
  EXPECT_DOUBLE_EQ(m["syscall_ns"].min, 90);
  EXPECT_DOUBLE_EQ(m["syscall_ns"].max, 120);
  EXPECT_DOUBLE_EQ(m["lone_ns"].min, 7);  // no range: the runs agreed
  EXPECT_DOUBLE_EQ(m["lone_ns"].max, 7);
}

}  // namespace
}  // namespace mmsim::cli
