// The [validate] table: the validate tool's kernels, repeat count and
// per-counter tolerances, parsed and checked by the loader (every problem at
// its place), settable by --set, and ignored by the simulation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "support/base_scenario.h"

namespace mmsim::scenario {
namespace {

constexpr const char* kBase = testing::kBaseScenario;

LoadResult parse(const std::string& extra, const std::vector<std::string>& sets = {}) {
  return parse_scenario(std::string(kBase) + extra, "t.toml", sets);
}

std::string all_of(const LoadResult& lr) {
  std::string s;
  for (const auto& d : lr.diagnostics) s += d.str() + "\n";
  return s;
}

TEST(ValidateTable, AbsentLeavesTheDefaultsAndPresentFalse) {
  const LoadResult lr = parse("");
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  const ValidateSpec& v = lr.scenario->validate;
  EXPECT_FALSE(v.present);
  EXPECT_EQ(v.kernels, (std::vector<std::string>{"6.1", "6.12"}));
  EXPECT_EQ(v.repeat, 3);
  EXPECT_TRUE(v.tolerances.empty());
}

TEST(ValidateTable, AnEmptyTableIsPresentWithTheDefaults) {
  const LoadResult lr = parse("[validate]\n");
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_TRUE(lr.scenario->validate.present);
  EXPECT_EQ(lr.scenario->validate.kernels.size(), 2u);
  EXPECT_EQ(lr.scenario->validate.repeat, 3);
}

TEST(ValidateTable, TheDiskIsARamDiskUnlessVirtioIsAsked) {
  EXPECT_EQ(parse("").scenario->validate.disk, "ram");
  const LoadResult lr = parse("[validate]\ndisk = \"virtio\"\n");
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(lr.scenario->validate.disk, "virtio");
}

TEST(ValidateTable, AnUnknownDiskIsAnErrorAtItsPlace) {
  const LoadResult lr = parse("[validate]\ndisk = \"nvme\"\n");
  EXPECT_FALSE(lr.ok());
  EXPECT_NE(all_of(lr).find("t.toml:10:8: error: validate.disk: \"nvme\" is not a disk"),
            std::string::npos)
      << all_of(lr);
}

TEST(ValidateTable, KernelsRepeatAndTolerancesAreReadInFileOrderWithTheirPlaces) {
  const LoadResult lr = parse(
      "[validate]\n"                     // 9
      "kernels = [\"6.12\"]\n"           // 10
      "repeat = 5\n"                     // 11
      "[validate.tolerance]\n"           // 12
      "pgfault = \"\u00b1200\"\n"        // 13
      "numa_pages_migrated = \"10%\"\n"  // 14
      "\"memcg:/a:rss\" = \"2.5%\"\n"    // 15
      "nr_shmem = \"+-0\"\n");           // 16
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  const ValidateSpec& v = lr.scenario->validate;
  EXPECT_TRUE(v.present);
  EXPECT_EQ(v.kernels, std::vector<std::string>{"6.12"});
  EXPECT_EQ(v.repeat, 5);
  ASSERT_EQ(v.tolerances.size(), 4u);
  EXPECT_EQ(v.tolerances[0].counter, "pgfault");
  EXPECT_FALSE(v.tolerances[0].relative);
  EXPECT_EQ(v.tolerances[0].value, 200);
  EXPECT_EQ(v.tolerances[0].line, 13u);
  EXPECT_EQ(v.tolerances[0].col, 1u);
  EXPECT_EQ(v.tolerances[1].counter, "numa_pages_migrated");
  EXPECT_TRUE(v.tolerances[1].relative);
  EXPECT_DOUBLE_EQ(v.tolerances[1].value, 0.10);
  EXPECT_EQ(v.tolerances[1].line, 14u);
  EXPECT_EQ(v.tolerances[2].counter, "memcg:/a:rss");
  EXPECT_DOUBLE_EQ(v.tolerances[2].value, 0.025);
  EXPECT_EQ(v.tolerances[2].line, 15u);
  EXPECT_EQ(v.tolerances[3].counter, "nr_shmem");
  EXPECT_FALSE(v.tolerances[3].relative);
  EXPECT_EQ(v.tolerances[3].value, 0);
}

TEST(ValidateTable, EveryBadValueIsReportedAtOnceAtItsPlace) {
  const LoadResult lr = parse(
      "[validate]\n"                              // 9
      "kernels = [\"5.15\", \"6.1\", \"6.1\"]\n"  // 10
      "repeat = 0\n"                              // 11
      "colour = 1\n"                              // 12
      "[validate.tolerance]\n"                    // 13
      "a = \"10\"\n"                              // 14
      "b = \"1001%\"\n"                           // 15
      "c = \"\u00b1-3\"\n"                        // 16
      "d = 200\n"                                 // 17
      "e = \"x%\"\n");                            // 18
  EXPECT_FALSE(lr.ok());
  const std::string all = all_of(lr);
  EXPECT_NE(all.find("t.toml:10:12: error: validate.kernels: unknown kernel \"5.15\" (known: 6.1, "
                     "6.12)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("t.toml:10:27: error: validate.kernels: kernel \"6.1\" is listed twice"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("t.toml:11:10: error: validate.repeat: 0 is out of range [1, 100]"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("t.toml:12:1: error: validate.colour: unknown key"), std::string::npos) << all;
  EXPECT_NE(all.find("t.toml:14:5: error: validate.tolerance.a: \"10\" is not a tolerance"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("t.toml:15:5: error: validate.tolerance.b: \"1001%\": a relative tolerance "
                     "is 0% to 1000%"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("t.toml:16:5: error: validate.tolerance.c:"), std::string::npos) << all;
  EXPECT_NE(all.find("t.toml:17:5: error: validate.tolerance.d: expected a string"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("t.toml:18:5: error: validate.tolerance.e: \"x%\": \"x\" is not a number"),
            std::string::npos)
      << all;
  EXPECT_EQ(lr.diagnostics.size(), 9u) << all;
}

TEST(ValidateTable, AnEmptyKernelListAndNonStringKernelsAreErrors) {
  const LoadResult empty = parse("[validate]\nkernels = []\n");
  ASSERT_EQ(empty.diagnostics.size(), 1u) << all_of(empty);
  EXPECT_EQ(empty.diagnostics[0].key, "validate.kernels");
  const LoadResult number = parse("[validate]\nkernels = [6.1]\n");
  ASSERT_EQ(number.diagnostics.size(), 1u) << all_of(number);
  EXPECT_NE(number.diagnostics[0].message.find("got a float"), std::string::npos);
}

TEST(ValidateTable, ATolerancesTableThatIsNotATableIsAnError) {
  const LoadResult lr = parse("[validate]\ntolerance = \"10%\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  EXPECT_EQ(lr.diagnostics[0].key, "validate.tolerance");
}

TEST(ValidateTable, EveryKeyCanBeSetWithSet) {
  const LoadResult lr =
      parse("", {"validate.repeat=7", "validate.kernels=[\"6.1\"]",
                 "validate.tolerance.pgfault=+-50", "validate.tolerance.memcg:/a:rss=20%"});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  const ValidateSpec& v = lr.scenario->validate;
  EXPECT_TRUE(v.present);
  EXPECT_EQ(v.repeat, 7);
  EXPECT_EQ(v.kernels, std::vector<std::string>{"6.1"});
  ASSERT_EQ(v.tolerances.size(), 2u);
  // Keys set on the command line have no place in the file: after, by name.
  EXPECT_EQ(v.tolerances[0].counter, "memcg:/a:rss");
  EXPECT_TRUE(v.tolerances[0].relative);
  EXPECT_DOUBLE_EQ(v.tolerances[0].value, 0.2);
  EXPECT_EQ(v.tolerances[1].counter, "pgfault");
  EXPECT_EQ(v.tolerances[1].value, 50);
  EXPECT_EQ(v.tolerances[1].line, 1u);
}

TEST(ValidateTable, ABadValueFromSetIsReportedAtTheSetArgument) {
  const LoadResult lr = parse("[validate]\n", {"validate.repeat=101"});
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  EXPECT_EQ(lr.diagnostics[0].file, "--set validate.repeat=101");
  EXPECT_EQ(lr.diagnostics[0].key, "validate.repeat");
}

TEST(ValidateTable, TheSimulationIgnoresIt) {
  const LoadResult a = parse("");
  const LoadResult b = parse("[validate]\nrepeat = 9\n[validate.tolerance]\npgfault = \"1%\"\n");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.scenario->workload.programs.size(), b.scenario->workload.programs.size());
  EXPECT_EQ(a.scenario->seed, b.scenario->seed);
}

}  // namespace
}  // namespace mmsim::scenario
