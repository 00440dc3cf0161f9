// `mmsim switches` and the README's switch reference, both made from the
// subsystems' switch tables.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli.h"
#include "scenario/scenario.h"

namespace mmsim {
namespace {

std::string readme() {
  std::ifstream in(std::string(MMSIM_SOURCE_DIR) + "/README.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Switches, ReadmeReferenceIsTheGeneratedTable) {
  const std::string text = readme();
  const std::string begin = "<!-- switches:begin -->\n", end = "<!-- switches:end -->";
  const auto b = text.find(begin), e = text.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  const std::string in_readme = text.substr(b + begin.size(), e - b - begin.size());
  EXPECT_EQ(in_readme, cli::switches_text(scenario::KernelConfig{}, true, false))
      << "regenerate with: build/release/src/cli/mmsim switches --markdown";
}

TEST(Switches, ListsEverySwitchOfEveryTable) {
  const std::string text = cli::switches_text(scenario::KernelConfig{}, false, false);
  size_t n = 0;
  scenario::for_each_switch(scenario::KernelConfig{}, [&](const SwitchInfo& sw, int64_t) {
    ++n;
    EXPECT_NE(text.find(sw.name()), std::string::npos) << sw.name();
  });
  EXPECT_GE(n, 20u);
}

TEST(Switches, ShowTheValuesOfTheGivenKernelVersion) {
  scenario::KernelConfig k;
  k.apply_version(*KernelVersion::parse("4.15"));
  const std::string text = cli::switches_text(k, false, true);
  const auto at = text.find("numa.skip_shared_cow");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(text.substr(at, 60).find("false"), std::string::npos);
  k.apply_version(*KernelVersion::parse("4.16"));
  const std::string later = cli::switches_text(k, false, true);
  EXPECT_NE(later.substr(later.find("numa.skip_shared_cow"), 60).find("true"), std::string::npos);
}

TEST(Switches, PlainTextShowsAChoicesWordsWithoutTheTablesEscapes) {
  const std::string text = cli::switches_text(scenario::KernelConfig{}, false, false);
  EXPECT_NE(text.find("never | madvise | always"), std::string::npos);
  EXPECT_EQ(text.find("\\|"), std::string::npos);
}

TEST(Switches, RejectAKernelVersionThatIsNotOne) {
  std::ostringstream out, err;
  const char* argv[] = {"mmsim", "switches", "--kernel-version", "4.x"};
  EXPECT_EQ(cli::run_cli(4, argv, out, err), 2);
  EXPECT_NE(err.str().find("--kernel-version"), std::string::npos);
}

TEST(KernelVersionParse, AcceptsTheReleasesThePresetsKnow) {
  EXPECT_TRUE(KernelVersion::parse("2.6"));
  EXPECT_TRUE(KernelVersion::parse("3.13"));
  EXPECT_TRUE(KernelVersion::parse("6.19"));
  EXPECT_FALSE(KernelVersion::parse("2.4"));
  EXPECT_FALSE(KernelVersion::parse("6.20"));
  EXPECT_FALSE(KernelVersion::parse("4.15.1"));
  EXPECT_FALSE(KernelVersion::parse("4."));
  EXPECT_FALSE(KernelVersion::parse(".4"));
}

TEST(SwitchPresets, TheFirstPresetCoveringAVersionWins) {
  SwitchInfo sw{.section = "numa",
                .key = "x",
                .kind = SwitchKind::kBool,
                .default_value = 0,
                .presets = {{.from = {3, 8}, .until = {4, 18}, .value = 1}}};
  EXPECT_EQ(sw.value_for({3, 7}), 0);
  EXPECT_EQ(sw.value_for({3, 8}), 1);
  EXPECT_EQ(sw.value_for({4, 18}), 1);
  EXPECT_EQ(sw.value_for({4, 19}), 0);
}

}  // namespace
}  // namespace mmsim
