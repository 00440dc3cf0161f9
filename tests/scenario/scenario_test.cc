// Scenario loading: every problem diagnosed at its file:line:col with its key
// path, --set overrides, kernel-version presets and the switch tables. (The
// size and duration grammars are tested in tests/util/units_test.cc.)
#include "scenario/scenario.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "memcg/config.h"
#include "mm/config.h"
#include "numa/config.h"
#include "sim/switches.h"
#include "support/base_scenario.h"
#include "topo/topology.h"

namespace mmsim::scenario {
namespace {

constexpr const char* kBase = testing::kBaseScenario;

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
  const LoadResult lr =
      parse(std::string(kBase) + "[[programs.main]]\nop = \"map\"\nregion = \"b\"\n");
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
                              "[[programs.main]]\n"                                 // 9
                              "op = \"loop\"\n"                                     // 10
                              "duration = \"1s\"\n"                                 // 11
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
      "colour = \"red\"\n"       // 1: unknown key (found last, at the top level)
      "[machine]\n"              // 2
      "preset = \"2s-16c\"\n"    // 3
      "sockets = 0\n"            // 4: out of range
      "[run]\n"                  // 5
      "program = \"main\"\n"     // 6
      "[[programs.main]]\n"      // 7
      "op = \"touch\"\n"         // 8
      "region = \"ghost\"\n"     // 9: never mapped (found after every program)
      "mode = \"sideways\"\n");  // 10: unknown value
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
  EXPECT_EQ(lr.scenario->kernel.version.str(), "3.3");
  EXPECT_EQ(lr.scenario->kernel.mm.fault_around_kb, 0);
}

TEST(ScenarioOverrides, BareVersionOverrideIsTakenAsWrittenNotAsAFloat) {
  const LoadResult lr = parse(kBase, {"kernel.version=3.10"});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(lr.scenario->kernel.version.str(), "3.10");
  EXPECT_EQ(lr.scenario->kernel.mm.fault_around_kb, 0);
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
  const LoadResult lr = parse(std::string(kBase) + "[[files]]\nname = \"f\"\nsize = \"4KiB\"\n",
                              {"files.3.size=8KiB"});
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

TEST(ScenarioKernelVersion, Kernel3Point14HasNoFaultAround) {
  KernelConfig k;
  const auto v = KernelVersion::parse("3.14");
  ASSERT_TRUE(v.has_value());
  k.apply_version(*v);
  EXPECT_EQ(k.mm.fault_around_kb, 0);
}

TEST(ScenarioKernelVersion, Kernel3Point15FaultsAround64KiB) {
  KernelConfig k;
  k.mm.fault_around_kb = 0;
  const auto v = KernelVersion::parse("3.15");
  ASSERT_TRUE(v.has_value());
  k.apply_version(*v);
  EXPECT_EQ(k.mm.fault_around_kb, 64);
  EXPECT_EQ(k.version.str(), "3.15");
}

TEST(ScenarioKernelVersion, RejectsAFutureMajorVersion) {
  EXPECT_FALSE(KernelVersion::parse("7.0").has_value());
}

TEST(ScenarioKernelVersion, RejectsAVersionWithoutAMinor) {
  EXPECT_FALSE(KernelVersion::parse("4").has_value());
}

TEST(ScenarioKernelVersion, UnknownVersionInAFileIsReportedAtTheValue) {
  const LoadResult lr = parse(std::string(kBase) + "[kernel]\nversion = \"7.0\"\n");
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "kernel.version");
  EXPECT_EQ(d.line, 10u);
  EXPECT_EQ(d.col, 11u);
}

// Kernel switches ------------------------------------------------------------

TEST(ScenarioSwitches, ReadAheadSetAfterVersion6Point16ChangesTheFolioSizeAReadFaultMaps) {
  // From 6.16 page-cache folios are as large as readahead makes them.
  const LoadResult base = parse(kBase, {"kernel.version=6.16"});
  const LoadResult wide = parse(kBase, {"kernel.version=6.16", "kernel.read_ahead_kb=512"});
  ASSERT_TRUE(base.ok()) << all_of(base);
  ASSERT_TRUE(wide.ok()) << all_of(wide);
  EXPECT_EQ(base.scenario->kernel.mm.pagecache_folio_kb, mm::kFolioFollowsReadahead);
  EXPECT_EQ(base.scenario->kernel.mm.fault_around_pages(), 128u / 4);
  EXPECT_EQ(wide.scenario->kernel.mm.pagecache_folio_kb, mm::kFolioFollowsReadahead);
  EXPECT_EQ(wide.scenario->kernel.mm.fault_around_pages(), 512u / 4);
}

TEST(ScenarioSwitches, AKeyInTheFileWinsOverThePresetOfAVersionSetOnTheCommandLine) {
  const LoadResult preset = parse(kBase, {"kernel.version=6.6"});
  const LoadResult lr =
      parse(std::string(kBase) + "[kernel]\nfault_around_kb = 16\n", {"kernel.version=6.6"});
  ASSERT_TRUE(preset.ok()) << all_of(preset);
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(preset.scenario->kernel.mm.fault_around_kb, 64);
  EXPECT_EQ(lr.scenario->kernel.mm.fault_around_kb, 16);
}

TEST(ScenarioSwitches, AKeyWinsOverThePresetOfTheVersionInTheSameTable) {
  const LoadResult lr =
      parse(std::string(kBase) + "[kernel]\nfault_around_kb = 32\nversion = \"3.3\"\n");
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(lr.scenario->kernel.version.str(), "3.3");
  EXPECT_EQ(lr.scenario->kernel.mm.fault_around_kb, 32);  // the 3.3 preset is 0
}

// A value the switch accepts that differs from `current`.
int64_t other_value(const SwitchInfo& sw, int64_t current) {
  switch (sw.kind) {
    case SwitchKind::kBool:
      return current ? 0 : 1;
    case SwitchKind::kChoice:
      for (const auto& w : sw.words)
        if (w.value != current) return w.value;
      break;
    case SwitchKind::kInt:
      for (int64_t v : {current + sw.multiple_of, current - sw.multiple_of, sw.lo, sw.hi}) {
        if (v != current && sw.check(v).empty()) return v;
      }
      break;
  }
  ADD_FAILURE() << sw.name() << ": no value other than " << current;
  return current;
}

// Sets every switch of `table` through --set to a value other than the one
// the base scenario gives it, and checks that its config field took it.
template <class Config>
void expect_every_switch_round_trips(std::span<const Switch<Config>> table,
                                     Config KernelConfig::*config) {
  const LoadResult base = parse(kBase);
  ASSERT_TRUE(base.ok()) << all_of(base);
  ASSERT_FALSE(table.empty());
  for (const auto& sw : table) {
    SCOPED_TRACE(sw.info.name());
    const int64_t before = sw.get(base.scenario->kernel.*config);
    const int64_t wanted = other_value(sw.info, before);
    ASSERT_NE(wanted, before);
    const std::string set = sw.info.name() + "=" + sw.info.format(wanted);
    const LoadResult lr = parse(kBase, {set});
    ASSERT_TRUE(lr.ok()) << set << ":\n" << all_of(lr);
    EXPECT_EQ(sw.get(lr.scenario->kernel.*config), wanted) << set;
  }
}

TEST(ScenarioSwitches, EveryMmSwitchSetOnTheCommandLineReachesItsConfigField) {
  expect_every_switch_round_trips(mm::mm_switches(), &KernelConfig::mm);
}

TEST(ScenarioSwitches, EveryNumaSwitchSetOnTheCommandLineReachesItsConfigField) {
  expect_every_switch_round_trips(numa::numa_switches(), &KernelConfig::numa);
}

TEST(ScenarioSwitches, EveryMemcgSwitchSetOnTheCommandLineReachesItsConfigField) {
  expect_every_switch_round_trips(memcg::memcg_switches(), &KernelConfig::memcg);
}

// Machines without a preset --------------------------------------------------

constexpr const char* kSleepProgram =
    "[run]\nprogram = \"m\"\n[[programs.m]]\nop = \"sleep\"\nduration = \"1ms\"\n";

TEST(ScenarioMachine, AMachineWithoutAPresetIsBuiltFromItsShapeWithCountsDefaultingToOne) {
  const LoadResult lr = parse(std::string("[machine]\nmem_per_node = \"64MiB\"\n"
                                          "llc_per_socket = \"8MiB\"\ncores_per_socket = 4\n") +
                              kSleepProgram);
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  const topo::MachineSpec& m = lr.scenario->machine;
  EXPECT_FALSE(lr.scenario->host_machine);
  EXPECT_EQ(m.sockets, 1u);
  EXPECT_EQ(m.cores_per_socket, 4u);
  EXPECT_EQ(m.threads_per_core, 1u);
  EXPECT_EQ(m.nodes_per_socket, 1u);
  EXPECT_EQ(m.mem_per_node, uint64_t{64} << 20);
  EXPECT_EQ(m.llc_per_socket, uint64_t{8} << 20);
}

TEST(ScenarioMachine, AMachineWithoutAPresetOrMemPerNodeIsAnErrorNamingMemPerNode) {
  const LoadResult lr =
      parse(std::string("[machine]\nllc_per_socket = \"8MiB\"\nsockets = 2\n") + kSleepProgram);
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "machine.mem_per_node");
  EXPECT_EQ(d.line, 1u);
  EXPECT_NE(d.message.find("missing required key"), std::string::npos) << d.message;
  EXPECT_FALSE(lr.scenario.has_value());
}

TEST(ScenarioMachine, AMachineWithoutAPresetOrLlcPerSocketIsAnErrorNamingLlcPerSocket) {
  const LoadResult lr = parse(std::string("[machine]\nmem_per_node = \"64MiB\"\n") + kSleepProgram);
  ASSERT_EQ(lr.diagnostics.size(), 1u) << all_of(lr);
  const Diagnostic d = only_about(lr, "machine.llc_per_socket");
  EXPECT_NE(d.message.find("missing required key"), std::string::npos) << d.message;
}

TEST(ScenarioShipped, SeedALoadsWithoutDiagnostics) {
  const LoadResult lr =
      load_scenario(MMSIM_SOURCE_DIR "/scenarios/seed-a-numa-shared-cow.toml", {});
  EXPECT_TRUE(lr.ok()) << all_of(lr);
}

TEST(ScenarioShipped, SeedBLoadsWithoutDiagnostics) {
  const LoadResult lr =
      load_scenario(MMSIM_SOURCE_DIR "/scenarios/seed-b-memcg-fault-drop.toml", {});
  EXPECT_TRUE(lr.ok()) << all_of(lr);
}

TEST(ScenarioShipped, SeedBMapsA1GiBFileWithoutFaultAround) {
  const LoadResult lr =
      load_scenario(MMSIM_SOURCE_DIR "/scenarios/seed-b-memcg-fault-drop.toml", {});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  ASSERT_EQ(lr.scenario->workload.files.size(), 1u);
  EXPECT_EQ(lr.scenario->workload.files[0].pages, 262144u);
  EXPECT_EQ(lr.scenario->kernel.mm.fault_around_kb, 0);
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

TEST(ScenarioNoise, DefaultsAreOnWithEverySourceMeasured) {
  const LoadResult lr = parse(kBase);
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_TRUE(lr.scenario->noise.enabled);
  EXPECT_GT(lr.scenario->noise.wakeup_latency_ns, 0);
}

TEST(ScenarioNoise, DurationsTakeUnitsAndNumbersAreChecked) {
  const LoadResult lr =
      parse(std::string(kBase) + "\n[noise]\nwakeup_latency = \"12us\"\ncost_jitter_cv = 0.1\n");
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(lr.scenario->noise.wakeup_latency_ns, 12000);
  EXPECT_EQ(lr.scenario->noise.cost_jitter_cv, 0.1);
}

TEST(ScenarioNoise, UnknownKeyIsAnError) {
  const LoadResult lr = parse(std::string(kBase) + "\n[noise]\njitter = 0.1\n");
  EXPECT_NE(only_about(lr, "noise.jitter").message.find("unknown key"), std::string::npos);
}

TEST(ScenarioNoise, JitterAboveHalfIsOutOfRange) {
  const LoadResult lr = parse(std::string(kBase) + "\n[noise]\ncost_jitter_cv = 0.9\n");
  EXPECT_NE(only_about(lr, "noise.cost_jitter_cv").message.find("out of range"), std::string::npos);
}

TEST(ScenarioNoise, HostCpusMustBeAWholeNumber) {
  const LoadResult lr = parse(std::string(kBase) + "\n[noise]\nhost_cpus = 1.5\n");
  EXPECT_NE(only_about(lr, "noise.host_cpus").message.find("whole number"), std::string::npos);
}

TEST(ScenarioNoise, EnabledFalseTurnsItOff) {
  const LoadResult lr = parse(kBase, {"noise.enabled=false"});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_FALSE(lr.scenario->noise.enabled);
}

// --- Task counts given by the machine (the field's benchmarks size their
// threads by it). 2s-16c: 16 CPUs on 2 nodes.

std::string threads_count(const std::string& count) {
  return std::string(kBase) + "[[programs.main]]\nop = \"threads\"\ncount = " + count +
         "\nprogram = \"w\"\n[[programs.w]]\nop = \"count\"\ncounter = \"x\"\n";
}

uint64_t main_threads_count(const LoadResult& lr) {
  return lr.scenario->workload.programs[lr.scenario->workload.init_program].ops[1].count;
}

TEST(ScenarioMachineCounts, CpusIsTheMachinesLogicalCpus) {
  const LoadResult lr = parse(threads_count("\"cpus\""));
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(main_threads_count(lr), 16u);
}

TEST(ScenarioMachineCounts, CpusOverTwoIsHalfTheCpus) {
  const LoadResult lr = parse(threads_count("\"cpus/2\""));
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(main_threads_count(lr), 8u);
}

TEST(ScenarioMachineCounts, NodesTimesTwoIsTwiceTheNodesWithCpus) {
  const LoadResult lr = parse(threads_count("\"nodes*2\""));
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(main_threads_count(lr), 4u);
}

TEST(ScenarioMachineCounts, FactorsMayBeCpusOrNodesAppliedInTurn) {
  const LoadResult per_node = parse(threads_count("\"cpus/nodes\""));
  ASSERT_TRUE(per_node.ok()) << all_of(per_node);
  EXPECT_EQ(main_threads_count(per_node), 8u);
  const LoadResult half = parse(threads_count("\"cpus/nodes/2\""));
  ASSERT_TRUE(half.ok()) << all_of(half);
  EXPECT_EQ(main_threads_count(half), 4u);
  const LoadResult twice = parse(threads_count("\"cpus/nodes*2\""));
  ASSERT_TRUE(twice.ok()) << all_of(twice);
  EXPECT_EQ(main_threads_count(twice), 16u);
}

// --- [run] convergence (perf bench numa mem -m).

std::string convergence_programs(const std::string& main_op) {
  return std::string(kBase) + main_op +
         "[[programs.p]]\nop = \"threads\"\ncount = \"cpus/nodes/2\"\nprogram = \"w\"\n"
         "[[programs.w]]\nop = \"count\"\ncounter = \"x\"\n";
}

TEST(ScenarioConvergence, CountsEveryTaskThatWillRunTheProgram) {
  // 2 processes of 4 threads (half a node's 8 CPUs).
  const LoadResult lr =
      parse(convergence_programs("[[programs.main]]\nop = \"fork\"\ncount = 2\nprogram = \"p\"\n"),
            {"run.convergence=\"w\""});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(lr.scenario->workload.convergence_tasks, 8u);
}

TEST(ScenarioConvergence, AProgramStartedFromALoopHasNoKnownCountAndIsAnError) {
  const LoadResult lr =
      parse(convergence_programs("[[programs.main]]\nop = \"loop\"\ncount = 2\nbody = [{ op = "
                                 "\"fork\", count = 1, program = \"p\" }]\n"),
            {"run.convergence=\"w\""});
  const Diagnostic d = only_about(lr, "run.convergence");
  EXPECT_NE(d.message.find("outside loops"), std::string::npos) << d.message;
}

TEST(ScenarioConvergence, AProgramNothingStartsIsAnError) {
  const LoadResult lr = parse(convergence_programs(""), {"run.convergence=\"w\""});
  const Diagnostic d = only_about(lr, "run.convergence");
  EXPECT_NE(d.message.find("no task runs this program"), std::string::npos) << d.message;
}

TEST(ScenarioConvergence, AnUnknownProgramIsAnError) {
  const LoadResult lr = parse(kBase, {"run.convergence=\"nosuch\""});
  const Diagnostic d = only_about(lr, "run.convergence");
  EXPECT_NE(d.message.find("no program is named \"nosuch\""), std::string::npos) << d.message;
}

TEST(ScenarioMachineCounts, FollowsAMachineOverride) {
  const LoadResult lr = parse(threads_count("\"cpus\""), {"machine.preset=xeon-8s-144c"});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(main_threads_count(lr), 288u);
}

TEST(ScenarioMachineCounts, ANativeRunTakesThemFromThisHostWhateverTheScenariosMachine) {
  std::string why;
  const auto host = topo::load_host("/sys", &why);
  ASSERT_TRUE(host) << why;
  const LoadResult lr = parse_scenario(threads_count("\"cpus\""), "t.toml", {}, std::nullopt,
                                       /*counts_from_host=*/true);
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(main_threads_count(lr), host->nr_cpus());
  EXPECT_EQ(lr.scenario->machine.name, "2s-16c") << "the scenario's machine stays as written";
}

TEST(ScenarioMachineCounts, ASetIntegerReplacesAMachineCount) {
  // --set keeps a string key a string: "200" must still count as 200.
  const LoadResult lr = parse(threads_count("\"cpus\""), {"programs.main.1.count=12"});
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(main_threads_count(lr), 12u);
}

TEST(ScenarioMachineCounts, AnIntegerBaseTakesFactors) {
  const LoadResult lr = parse(threads_count("\"12/nodes\""));
  ASSERT_TRUE(lr.ok()) << all_of(lr);
  EXPECT_EQ(main_threads_count(lr), 6u);
}

TEST(ScenarioMachineCounts, AnUnknownNameIsReportedWithTheForms) {
  const LoadResult lr = parse(threads_count("\"cores\""));
  const Diagnostic d = only_about(lr, "programs.main[1].count");
  EXPECT_EQ(d.line, 11u);
  EXPECT_NE(d.message.find("\"cores\" is not a count"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("cpus/2"), std::string::npos) << d.message;
}

TEST(ScenarioMachineCounts, ADivisorThatLeavesNoTaskIsOutOfRange) {
  const LoadResult lr = parse(threads_count("\"nodes/4\""));
  const Diagnostic d = only_about(lr, "programs.main[1].count");
  EXPECT_NE(d.message.find("comes to 0 on this machine (16 CPUs, 2 nodes with CPUs)"),
            std::string::npos)
      << d.message;
}

TEST(ScenarioMachineCounts, AMissingOrZeroFactorIsReported) {
  for (const char* bad : {"\"cpus/\"", "\"cpus*0\"", "\"cpus/x\""}) {
    const LoadResult lr = parse(threads_count(bad));
    const Diagnostic d = only_about(lr, "programs.main[1].count");
    EXPECT_NE(d.message.find("needs a positive integer, cpus or nodes after"), std::string::npos)
        << bad << ": " << d.message;
  }
}

TEST(ScenarioMachineCounts, AHugeFactorIsOutOfRangeNotWrapped) {
  const LoadResult lr = parse(threads_count("\"cpus*18446744073709551615\""));
  const Diagnostic d = only_about(lr, "programs.main[1].count");
  EXPECT_NE(d.message.find("more than 100000"), std::string::npos) << d.message;
}

}  // namespace
}  // namespace mmsim::scenario
