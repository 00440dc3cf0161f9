// native --predict's cost profile: this host's, cached, calibrated once when
// missing, never the built-in defaults unasked. The calibration is a fake.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/predict.h"

namespace mmsim::cli {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("mmsim-predcache-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

const char* kHeader =
    "# Host cost profile made by `mmsim calibrate` on Linux test.\n"
    "# date: 2026-01-02 03:04 UTC\n\n[costs]\nsyscall_ns = 100\n";

TEST(PredictCache, TheCacheIsUnderXdgCacheHomeWhenItIsSet) {
  EXPECT_EQ(host_profile_cache_path("/x/cache", "/home/u"), "/x/cache/mmsim/host-profile.toml");
}

TEST(PredictCache, TheCacheFallsBackToHomeDotCacheWhenXdgCacheHomeIsUnset) {
  EXPECT_EQ(host_profile_cache_path(nullptr, "/home/u"), "/home/u/.cache/mmsim/host-profile.toml");
}

TEST(PredictCache, AnEmptyOrRelativeXdgCacheHomeCountsAsUnset) {
  EXPECT_EQ(host_profile_cache_path("", "/home/u"), "/home/u/.cache/mmsim/host-profile.toml");
  EXPECT_EQ(host_profile_cache_path("rel", "/home/u"), "/home/u/.cache/mmsim/host-profile.toml");
}

TEST(PredictCache, ThereIsNoCacheWithoutXdgCacheHomeOrHome) {
  EXPECT_EQ(host_profile_cache_path(nullptr, nullptr), "");
}

TEST(PredictCache, PredictUsesTheCachedProfileAndSaysWhichAndItsDate) {
  TempDir t;
  const std::string cache = (t.dir / "host-profile.toml").string();
  std::ofstream(cache) << kHeader;
  int calls = 0;
  std::ostringstream out, err;
  int rc = -1;
  const auto c = choose_predict_costs(
      "", false, cache, [&](const std::string&) { return ++calls, 0; }, out, err, &rc);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->path, cache);
  EXPECT_TRUE(c->cached);
  EXPECT_EQ(calls, 0);
  EXPECT_NE(out.str().find(cache + " (made 2026-01-02 03:04 UTC)"), std::string::npos) << out.str();
}

TEST(PredictCache, AMissingCacheIsCalibratedOnceSayingWhereItCaches) {
  TempDir t;
  const std::string cache = (t.dir / "sub" / "host-profile.toml").string();
  int calls = 0;
  std::ostringstream out, err;
  int rc = -1;
  const auto c = choose_predict_costs(
      "", false, cache,
      [&](const std::string& path) {
        ++calls;
        std::ofstream(path) << kHeader;
        return 0;
      },
      out, err, &rc);
  ASSERT_TRUE(c) << err.str();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(c->calibrated);
  EXPECT_NE(out.str().find("calibrating once"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("caching it at " + cache), std::string::npos) << out.str();
}

TEST(PredictCache, AFailedCalibrationIsAnErrorNotTheDefaults) {
  TempDir t;
  const std::string cache = (t.dir / "host-profile.toml").string();
  std::ostringstream out, err;
  int rc = -1;
  const auto c = choose_predict_costs(
      "", false, cache, [](const std::string&) { return 3; }, out, err, &rc);
  EXPECT_FALSE(c);
  EXPECT_EQ(rc, 3);
  EXPECT_NE(err.str().find("calibration of this host failed"), std::string::npos) << err.str();
  EXPECT_FALSE(fs::exists(cache));
}

TEST(PredictCache, AnExplicitCostsFileWinsOverTheCache) {
  TempDir t;
  const std::string cache = (t.dir / "host-profile.toml").string();
  const std::string mine = (t.dir / "mine.toml").string();
  std::ofstream(cache) << kHeader;
  std::ofstream(mine) << kHeader;
  std::ostringstream out, err;
  int rc = -1;
  const auto c = choose_predict_costs(
      mine, false, cache, [](const std::string&) { return 0; }, out, err, &rc);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->path, mine);
  EXPECT_NE(out.str().find(mine), std::string::npos) << out.str();
}

TEST(PredictCache, TheBuiltInDefaultsAreUsedOnlyWhenAskedAndSaidLoudly) {
  std::ostringstream out, err;
  int rc = -1;
  const auto c = choose_predict_costs(
      "", true, "/nonexistent/host-profile.toml", [](const std::string&) { return 3; }, out, err,
      &rc);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->path.empty());
  EXPECT_NE(err.str().find("BUILT-IN DEFAULT"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace mmsim::cli
