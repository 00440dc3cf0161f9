// Scenario loading: every problem diagnosed at its file:line:col with its key
// path, --set overrides, sizes, durations and kernel-version presets.
#include "scenario/scenario.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace mmsim::scenario {
namespace {

// A valid scenario in 8 lines; tests append lines from line 9 on.
constexpr const char* kBase =
    "[machine]\n"          // 1
    "preset = \"2s-16c\"\n"  // 2
    "[run]\n"              // 3
    "program = \"main\"\n"   // 4
    "[[programs.main]]\n"  // 5
    "op = \"map\"\n"         // 6
    "region = \"a\"\n"       // 7
    "size = \"64KiB\"\n";    // 8

LoadResult parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  return parse_scenario(text, "t.toml", sets);
}

// The one diagnostic about `key`; fails the test unless there is exactly one.
Diagnostic only_about(const LoadResult& lr, const std::string& key) {
  std::vector<Diagnostic> found;
  for (const auto& d : lr.diagnostics)
    if (d.key == key) found.push_back(d);
  std::string all;
  for (const auto& d : lr.diagnostics) all += d.str() + "\n";
  EXPECT_EQ(found.size(), 1u) << "diagnostics about " << key << " in:\n" << all;
  return found.empty() ? Diagnostic{} : found.front();
}

std::string all_of(const LoadResult& lr) {
  std::string s;
  for (const auto& d : lr.diagnostics) s += d.str() + "\n";
  return s;
}

TEST(ScenarioDiagnostics, ValidBaseScenarioHasNoDiagnostics) {
  const LoadResult lr = parse(kBase);
  EXPECT_TRUE(lr.ok()) << all_of(lr);
}

TEST(ScenarioDiagnostics, UnknownTopLevelKeyIsReportedWithItsLineAndColumn) {
  const LoadResult lr = parse(std::string("colour = \"red\"\n") + kBase);
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic& d = lr.diagnostics[0];
  EXPECT_EQ(d.file, "t.toml");
  EXPECT_EQ(d.line, 1u);
  EXPECT_EQ(d.col, 1u);
  EXPECT_EQ(d.key, "colour");
  EXPECT_NE(d.message.find("unknown key"), std::string::npos) << d.message;
  EXPECT_FALSE(lr.scenario.has_value());
}

TEST(ScenarioDiagnostics, DiagnosticPrintsInCompilerFormat) {
  const LoadResult lr = parse(std::string("colour = \"red\"\n") + kBase);
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  EXPECT_TRUE(lr.diagnostics[0].str().starts_with("t.toml:1:1: error: colour: unknown key"))
      << lr.diagnostics[0].str();
}

TEST(ScenarioDiagnostics, UnknownKeyInsideAnOpTableIsReportedWithItsIndexedKeyPath) {
  const LoadResult lr = parse(std::string(kBase) + "regoin = \"a\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "programs.main[0].regoin");
  EXPECT_EQ(d.file, "t.toml");
  EXPECT_EQ(d.line, 9u);
  EXPECT_EQ(d.col, 1u);
}

TEST(ScenarioDiagnostics, StringWhereAnIntegerIsExpectedIsReportedAtTheValue) {
  const LoadResult lr = parse(std::string(kBase) + "[scenario]\nseed = \"one\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "scenario.seed");
  EXPECT_EQ(d.line, 10u);
  EXPECT_EQ(d.col, 8u);
  EXPECT_NE(d.message.find("expected an integer, got a string"), std::string::npos) << d.message;
}

TEST(ScenarioDiagnostics, OutOfRangeValueIsReportedWithTheValueAndRange) {
  const LoadResult lr = parse(std::string(kBase) + "[kernel]\nfault_around_kb = 4096\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "kernel.fault_around_kb");
  EXPECT_EQ(d.line, 10u);
  EXPECT_EQ(d.col, 19u);
  EXPECT_NE(d.message.find("4096 is out of range [0, 2048]"), std::string::npos) << d.message;
}

TEST(ScenarioDiagnostics, UnknownOpNameIsReportedAtTheOpValue) {
  const LoadResult lr = parse(std::string(kBase) + "[[programs.main]]\nop = \"mapp\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "programs.main[1].op");
  EXPECT_EQ(d.line, 10u);
  EXPECT_EQ(d.col, 6u);
  EXPECT_NE(d.message.find("unknown value \"mapp\""), std::string::npos) << d.message;
}

TEST(ScenarioDiagnostics, UnknownMachinePresetIsReportedAlone) {
  const LoadResult lr = parse(
      "[machine]\n"
      "preset = \"nosuch\"\n"
      "[run]\nprogram = \"main\"\n"
      "[[programs.main]]\nop = \"wait\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "machine.preset");
  EXPECT_EQ(d.line, 2u);
  EXPECT_EQ(d.col, 10u);
  EXPECT_NE(d.message.find("unknown machine \"nosuch\""), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("xeon-8s-144c"), std::string::npos) << d.message;
}

TEST(ScenarioDiagnostics, MalformedTomlIsReportedAtTheParseErrorPosition) {
  const LoadResult lr = parse("[machine]\npreset = \"2s-16c\"\nsockets = @\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic& d = lr.diagnostics[0];
  EXPECT_EQ(d.file, "t.toml");
  EXPECT_EQ(d.key, "toml");
  EXPECT_EQ(d.line, 3u);
  EXPECT_EQ(d.col, 11u);
  EXPECT_FALSE(lr.scenario.has_value());
}

TEST(ScenarioDiagnostics, MapWithoutSizeOrFileIsReportedAsMissingSizeAtItsTable) {
  const LoadResult lr = parse(std::string(kBase) + "[[programs.main]]\nop = \"map\"\nregion = \"b\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "programs.main[1].size");
  EXPECT_EQ(d.line, 9u);
  EXPECT_EQ(d.col, 1u);
  EXPECT_EQ(d.message, "missing required key");
}

TEST(ScenarioDiagnostics, ForkOfAnUndefinedProgramIsReportedAtTheProgramName) {
  const LoadResult lr =
      parse(std::string(kBase) + "[[programs.main]]\nop = \"fork\"\nprogram = \"ghost\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "programs.main[1].program");
  EXPECT_EQ(d.line, 11u);
  EXPECT_EQ(d.col, 11u);
  EXPECT_NE(d.message.find("no program is named \"ghost\""), std::string::npos) << d.message;
}

TEST(ScenarioDiagnostics, RunOfAnUndefinedProgramIsReported) {
  std::string text = kBase;
  text.replace(text.find("program = \"main\""), 16, "program = \"mian\"");
  const LoadResult lr = parse(text);
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "run.program");
  EXPECT_EQ(d.line, 4u);
  EXPECT_EQ(d.col, 11u);
}

TEST(ScenarioDiagnostics, RegionUsedButNeverMappedIsReportedAtTheRegionName) {
  const LoadResult lr =
      parse(std::string(kBase) + "[[programs.main]]\nop = \"touch\"\nregion = \"b\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "programs.main[1].region");
  EXPECT_EQ(d.line, 11u);
  EXPECT_EQ(d.col, 10u);
  EXPECT_NE(d.message.find("no map op creates region \"b\""), std::string::npos) << d.message;
}

TEST(ScenarioDiagnostics, ProgramThatForksItselfIsReportedAsAForkCycle) {
  const LoadResult lr =
      parse(std::string(kBase) + "[[programs.main]]\nop = \"fork\"\nprogram = \"main\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "programs.main[1].program");
  EXPECT_EQ(d.line, 11u);
  EXPECT_EQ(d.col, 11u);
  EXPECT_NE(d.message.find("fork cycle"), std::string::npos) << d.message;
}

TEST(ScenarioDiagnostics, DurationLoopWhoseBodyOnlyCountsIsReported) {
  const LoadResult lr = parse(std::string(kBase) +
                              "[[programs.main]]\n"                           // 9
                              "op = \"loop\"\n"                                 // 10
                              "duration = \"1s\"\n"                             // 11
                              "body = [ { op = \"count\", counter = \"n\" } ]\n");  // 12
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "programs.main[1].duration");
  EXPECT_EQ(d.line, 11u);
  EXPECT_EQ(d.col, 12u);
  EXPECT_NE(d.message.find("takes no time"), std::string::npos) << d.message;
}

TEST(ScenarioDiagnostics, CountLoopWhoseBodyOnlyCountsIsAccepted) {
  const LoadResult lr = parse(std::string(kBase) +
                              "[[programs.main]]\nop = \"loop\"\ncount = 3\n"
                              "body = [ { op = \"count\", counter = \"n\" } ]\n");
  EXPECT_TRUE(lr.ok()) << all_of(lr);
}

TEST(ScenarioDiagnostics, EveryProblemInAFileIsReportedSortedByLine) {
  const LoadResult lr = parse(
      "colour = \"red\"\n"         // 1: unknown key (found last, at the top level)
      "[machine]\n"                // 2
      "preset = \"2s-16c\"\n"        // 3
      "sockets = 0\n"              // 4: out of range
      "[run]\n"                    // 5
      "program = \"main\"\n"         // 6
      "[[programs.main]]\n"        // 7
      "op = \"touch\"\n"             // 8
      "region = \"ghost\"\n"         // 9: never mapped (found after every program)
      "mode = \"sideways\"\n");      // 10: unknown value
  ASSERT_EQ(lr.diagnostics.size(), 4u) << all_of(lr);
  EXPECT_EQ(lr.diagnostics[0].key, "colour");
  EXPECT_EQ(lr.diagnostics[0].line, 1u);
  EXPECT_EQ(lr.diagnostics[1].key, "machine.sockets");
  EXPECT_EQ(lr.diagnostics[1].line, 4u);
  EXPECT_EQ(lr.diagnostics[2].key, "programs.main[0].region");
  EXPECT_EQ(lr.diagnostics[2].line, 9u);
  EXPECT_EQ(lr.diagnostics[3].key, "programs.main[0].mode");
  EXPECT_EQ(lr.diagnostics[3].line, 10u);
  EXPECT_FALSE(lr.scenario.has_value());
}

TEST(ScenarioOverrides, KernelVersionOverrideAppliesThatVersionsPreset) {
  const LoadResult lr = parse(kBase, {"kernel.version=3.3"});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(lr.scenario->kernel.version, "3.3");
  EXPECT_EQ(lr.scenario->kernel.fault_around_kb, 0u);
}

TEST(ScenarioOverrides, BareVersionOverrideIsTakenAsWrittenNotAsAFloat) {
  const LoadResult lr = parse(kBase, {"kernel.version=3.10"});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(lr.scenario->kernel.version, "3.10");
  EXPECT_EQ(lr.scenario->kernel.fault_around_kb, 0u);
}

TEST(ScenarioOverrides, OverrideReplacesAValueSetInTheFile) {
  const LoadResult lr = parse(std::string(kBase) + "[scenario]\nseed = 5\n", {"scenario.seed=9"});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(lr.scenario->seed, 9u);
}

TEST(ScenarioOverrides, OverridesAreRecordedAsGiven) {
  const LoadResult lr = parse(kBase, {"kernel.version=3.3"});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(lr.scenario->overrides, std::vector<std::string>{"kernel.version=3.3"});
}

TEST(ScenarioOverrides, OverrideOfAnUnknownKeyIsReportedAgainstTheSetArgument) {
  const LoadResult lr = parse(kBase, {"machine.colour=red"});
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "machine.colour");
  EXPECT_EQ(d.file, "--set machine.colour=red");
  EXPECT_EQ(d.line, 1u);
  EXPECT_NE(d.message.find("unknown key"), std::string::npos) << d.message;
}

TEST(ScenarioOverrides, OverrideWithABadValueIsReportedAtTheValueColumn) {
  const LoadResult lr = parse(kBase, {"kernel.fault_around_kb=4096"});
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "kernel.fault_around_kb");
  EXPECT_EQ(d.file, "--set kernel.fault_around_kb=4096");
  EXPECT_EQ(d.line, 1u);
  EXPECT_EQ(d.col, 24u);  // the '4' after '='
}

TEST(ScenarioOverrides, ArrayIndexOverrideChangesThatElement) {
  const LoadResult lr = parse(std::string(kBase) +
                                  "[[files]]\nname = \"f\"\nsize = \"4KiB\"\n"
                                  "[[files]]\nname = \"g\"\nsize = \"4KiB\"\n",
                              {"files.0.size=8KiB"});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  ASSERT_EQ(lr.scenario->workload.files.size(), 2u);
  EXPECT_EQ(lr.scenario->workload.files[0].pages, 2u);
  EXPECT_EQ(lr.scenario->workload.files[1].pages, 1u);
}

TEST(ScenarioOverrides, ArrayIndexPastTheEndIsReported) {
  const LoadResult lr =
      parse(std::string(kBase) + "[[files]]\nname = \"f\"\nsize = \"4KiB\"\n", {"files.3.size=8KiB"});
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  EXPECT_EQ(lr.diagnostics[0].file, "--set files.3.size=8KiB");
  EXPECT_EQ(lr.diagnostics[0].key, "files.3.size");
}

TEST(ScenarioOverrides, OverrideWithoutAnEqualsSignIsReported) {
  const LoadResult lr = parse(kBase, {"kernel.version"});
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  EXPECT_EQ(lr.diagnostics[0].file, "--set kernel.version");
  EXPECT_NE(lr.diagnostics[0].message.find("key=value"), std::string::npos);
}

TEST(ScenarioParseSize, AcceptsPlainBytes) {
  uint64_t b = 0;
  ASSERT_TRUE(parse_size("4096", b));
  EXPECT_EQ(b, 4096u);
}

TEST(ScenarioParseSize, KiBIsAPowerOfTwo) {
  uint64_t b = 0;
  ASSERT_TRUE(parse_size("4KiB", b));
  EXPECT_EQ(b, 4096u);
}

TEST(ScenarioParseSize, MBIsAPowerOfTen) {
  uint64_t b = 0;
  ASSERT_TRUE(parse_size("4MB", b));
  EXPECT_EQ(b, 4000000u);
}

TEST(ScenarioParseSize, GiBIsAPowerOfTwo) {
  uint64_t b = 0;
  ASSERT_TRUE(parse_size("1GiB", b));
  EXPECT_EQ(b, uint64_t{1} << 30);
}

TEST(ScenarioParseSize, RejectsAnUnknownUnit) {
  uint64_t b = 0;
  EXPECT_FALSE(parse_size("4XB", b));
}

TEST(ScenarioParseSize, RejectsAnEmptyString) {
  uint64_t b = 0;
  EXPECT_FALSE(parse_size("", b));
}

TEST(ScenarioParseSize, RejectsANegativeNumber) {
  uint64_t b = 0;
  EXPECT_FALSE(parse_size("-1", b));
}

TEST(ScenarioParseDuration, AcceptsSeconds) {
  int64_t ns = 0;
  ASSERT_TRUE(parse_duration("10s", ns));
  EXPECT_EQ(ns, 10'000'000'000);
}

TEST(ScenarioParseDuration, AcceptsMilliseconds) {
  int64_t ns = 0;
  ASSERT_TRUE(parse_duration("5ms", ns));
  EXPECT_EQ(ns, 5'000'000);
}

TEST(ScenarioParseDuration, AcceptsMicroseconds) {
  int64_t ns = 0;
  ASSERT_TRUE(parse_duration("100us", ns));
  EXPECT_EQ(ns, 100'000);
}

TEST(ScenarioParseDuration, AcceptsNanoseconds) {
  int64_t ns = 0;
  ASSERT_TRUE(parse_duration("20ns", ns));
  EXPECT_EQ(ns, 20);
}

TEST(ScenarioParseDuration, RejectsANumberWithoutAUnit) {
  int64_t ns = 0;
  EXPECT_FALSE(parse_duration("10", ns));
}

TEST(ScenarioParseDuration, RejectsAnUnknownUnit) {
  int64_t ns = 0;
  EXPECT_FALSE(parse_duration("5 parsecs", ns));
}

TEST(ScenarioKernelVersion, Kernel3Point14HasNoFaultAround) {
  KernelConfig k;
  ASSERT_TRUE(apply_kernel_version("3.14", k));
  EXPECT_EQ(k.fault_around_kb, 0u);
}

TEST(ScenarioKernelVersion, Kernel3Point15FaultsAround64KiB) {
  KernelConfig k;
  k.fault_around_kb = 0;
  ASSERT_TRUE(apply_kernel_version("3.15", k));
  EXPECT_EQ(k.fault_around_kb, 64u);
  EXPECT_EQ(k.version, "3.15");
}

TEST(ScenarioKernelVersion, RejectsAFutureMajorVersion) {
  KernelConfig k;
  EXPECT_FALSE(apply_kernel_version("7.0", k));
}

TEST(ScenarioKernelVersion, RejectsAVersionWithoutAMinor) {
  KernelConfig k;
  EXPECT_FALSE(apply_kernel_version("4", k));
}

TEST(ScenarioKernelVersion, UnknownVersionInAFileIsReportedAtTheValue) {
  const LoadResult lr = parse(std::string(kBase) + "[kernel]\nversion = \"7.0\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "kernel.version");
  EXPECT_EQ(d.line, 10u);
  EXPECT_EQ(d.col, 11u);
}

TEST(ScenarioShipped, SeedALoadsWithoutDiagnostics) {
  const LoadResult lr = load_scenario(MMSIM_SOURCE_DIR "/scenarios/seed-a-numa-shared-cow.toml", {});
  EXPECT_TRUE(lr.ok()) << all_of(lr);
}

TEST(ScenarioShipped, SeedBLoadsWithoutDiagnostics) {
  const LoadResult lr = load_scenario(MMSIM_SOURCE_DIR "/scenarios/seed-b-memcg-fault-drop.toml", {});
  EXPECT_TRUE(lr.ok()) << all_of(lr);
}

TEST(ScenarioShipped, SeedBMapsA1GiBFileWithoutFaultAround) {
  const LoadResult lr = load_scenario(MMSIM_SOURCE_DIR "/scenarios/seed-b-memcg-fault-drop.toml", {});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  ASSERT_EQ(lr.scenario->workload.files.size(), 1u);
  EXPECT_EQ(lr.scenario->workload.files[0].pages, 262144u);
  EXPECT_EQ(lr.scenario->kernel.fault_around_kb, 0u);
}

TEST(ScenarioShipped, SeedArgumentReplacesTheScenarioSeed) {
  const LoadResult lr =
      load_scenario(MMSIM_SOURCE_DIR "/scenarios/seed-b-memcg-fault-drop.toml", {}, uint64_t{42});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(lr.scenario->seed, 42u);
}

TEST(ScenarioShipped, MissingFileIsReportedAtLineOneColumnOne) {
  const LoadResult lr = load_scenario("/nonexistent/nosuch.toml", {});
  ASSERT_EQ(lr.diagnostics.size(), 1u);
  EXPECT_TRUE(lr.diagnostics[0].str().starts_with("/nonexistent/nosuch.toml:1:1: error:"))
      << lr.diagnostics[0].str();
}

}  // namespace
}  // namespace mmsim::scenario

namespace mmsim::scenario {
namespace {

TEST(ScenarioDiagnostics, ACachedFileLargerThanTheMachineIsAnErrorNotACrash) {
  auto lr = parse_scenario(R"([machine]
preset = "2s-16c"
mem_per_node = "1MiB"
[[files]]
name = "big"
size = "4MiB"
cached = true
[run]
program = "m"
[[programs.m]]
op = "sleep"
duration = "1ms"
)",
                           "big.toml", {});
  ASSERT_EQ(lr.diagnostics.size(), 1u);
  EXPECT_EQ(lr.diagnostics[0].key, "files[0].cached");
  EXPECT_EQ(lr.diagnostics[0].line, 7u);
}

}  // namespace
}  // namespace mmsim::scenario
