// Golden outputs: every shipped scenario (scenarios/**/*.toml) is run through the
// mmsim command, in-process, as
//
//   mmsim run scenarios/<name>.toml --check --no-timing --json <tmp>
//
// from the project root, and must exit 0, print nothing on stderr, write the
// JSON report tests/golden/<name>.json byte for byte and print the summary
// tests/golden/<name>.txt byte for byte. A change that moves any figure fails
// here, with a line diff of the first differences.
//
// To accept new figures, rewrite the references and review them:
//
//   MMSIM_UPDATE_GOLDEN=1 build/release/tests/mmsim_tests --gtest_filter='Golden*'
//   git diff tests/golden/
//
// With MMSIM_UPDATE_GOLDEN=1 the tests write the outputs over the references
// instead of comparing (they still require exit code 0 and an empty stderr),
// remove references whose scenario is gone, print which files they rewrote,
// and pass. Read the diff of the references before committing them: it is
// the review of every figure the change moved. See tests/golden/README.md.
//
// The scenario is given as the relative path scenarios/<name>.toml with the
// working directory set to the project root for the run (and restored after),
// so the report's scenario.path is the same on every checkout and the
// references are exactly what the command writes when run by hand from the
// project root.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "support/cli_run.h"

namespace mmsim::cli {
namespace {

namespace fs = std::filesystem;
using testing::Cli;
using testing::slurp;

const fs::path kSourceDir = MMSIM_SOURCE_DIR;
const fs::path kScenarioDir = kSourceDir / "scenarios";
const fs::path kGoldenDir = kSourceDir / "tests" / "golden";
constexpr const char* kUpdateCommand =
    "MMSIM_UPDATE_GOLDEN=1 build/release/tests/mmsim_tests --gtest_filter='Golden*'";

bool updating() {
  const char* v = std::getenv("MMSIM_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// A file's path below `dir` without its extension ("autonumabench/numa01").
std::string relative_stem(const fs::path& file, const fs::path& dir) {
  return fs::relative(file, dir).replace_extension().generic_string();
}

// The shipped scenarios (scenarios/ and its subdirectories, such as
// scenarios/autonumabench/), by path below scenarios/ without .toml, sorted.
std::vector<std::string> scenario_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(kScenarioDir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".toml")
      names.push_back(relative_stem(e.path(), kScenarioDir));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A gtest parameter name: alphanumerics and underscores only.
std::string param_name(const std::string& scenario) {
  std::string s = scenario;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// A fresh directory under the system temp dir, removed with everything in it.
// (Not testing::TempDir: that one is named after the test, and a
// parameterised test's name holds a '/', which would leave a directory behind.)
class ScratchDir {
 public:
  ScratchDir() {
    static int n = 0;
    path_ = fs::temp_directory_path() /
            ("mmsim-golden-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Sets the working directory for its lifetime.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const fs::path& dir) : saved_(fs::current_path()) {
    fs::current_path(dir);
  }
  ~WorkingDirectory() {
    std::error_code ec;
    fs::current_path(saved_, ec);
  }
  WorkingDirectory(const WorkingDirectory&) = delete;
  WorkingDirectory& operator=(const WorkingDirectory&) = delete;

 private:
  fs::path saved_;
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string::size_type start = 0;
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(start) + "  [no newline at end]");
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

// "lines 3-5", "line 3", or "no lines (after line 2)", 0-based [begin, end).
std::string line_range(size_t begin, size_t end) {
  if (begin == end) return "no lines (after line " + std::to_string(begin) + ")";
  if (end == begin + 1) return "line " + std::to_string(begin + 1);
  return "lines " + std::to_string(begin + 1) + "-" + std::to_string(end);
}

// A short line diff of two different texts, with line numbers: the region
// from the first to the last differing line, of which at most about kShown
// lines are printed, with kContext lines of context around the changes.
// Reference lines are marked -, output lines +.
std::string line_diff(const std::string& expected, const std::string& actual) {
  constexpr size_t kContext = 3;
  constexpr size_t kShown = 20;
  const std::vector<std::string> e = split_lines(expected);
  const std::vector<std::string> a = split_lines(actual);
  size_t first = 0;
  while (first < e.size() && first < a.size() && e[first] == a[first]) ++first;
  size_t e_end = e.size(), a_end = a.size();  // one past the last differing line
  while (e_end > first && a_end > first && e[e_end - 1] == a[a_end - 1]) --e_end, --a_end;
  const size_t e_count = e_end - first, a_count = a_end - first;

  std::ostringstream os;
  os << "--- reference (" << e.size() << " lines)\n+++ output (" << a.size() << " lines)\n";
  os << "@@ first difference at line " << first + 1 << "; differing region: reference "
     << line_range(first, e_end) << ", output " << line_range(first, a_end) << " @@\n";
  // Each line with its number in the reference and in the output: a context
  // line (' ', reference index i) has both, a - line the first, a + line the
  // second.
  auto line = [&](char mark, size_t i, const std::string& text) {
    os << mark << ' ';
    if (mark == '+')
      os << std::setw(6) << "";
    else
      os << std::setw(6) << i + 1;
    os << ' ';
    if (mark == '-')
      os << std::setw(6) << "";
    else if (mark == '+')
      os << std::setw(6) << i + 1;
    else
      os << std::setw(6) << (i >= e_end ? i + a_end - e_end : i) + 1;  // after the region: shifted
    os << " | " << text << "\n";
  };
  os << "    ref#   out#\n";
  const size_t context_begin = first > kContext ? first - kContext : 0;
  if (e_count == a_count) {
    // As many lines on both sides: pair them and print each changed line with
    // kContext lines around it, eliding longer runs of unchanged lines.
    std::vector<size_t> changed;
    for (size_t i = first; i < e_end; ++i)
      if (e[i] != a[i]) changed.push_back(i);
    size_t printed = 0, next = context_begin, k = 0;
    for (; k < changed.size() && printed < kShown; ++k) {
      const size_t c = changed[k];
      const size_t from = std::max(next, c > kContext ? c - kContext : 0);
      if (from > next) os << "  ...\n";
      for (size_t i = from; i < c; ++i, ++printed) line(' ', i, e[i]);
      line('-', c, e[c]);
      line('+', c, a[c]);
      printed += 2;
      next = c + 1;
      // Trailing context, up to the next change (which the loop prints).
      const size_t stop = std::min(e.size(), c + 1 + kContext);
      const size_t upto = k + 1 < changed.size() ? std::min(stop, changed[k + 1]) : stop;
      for (; next < upto; ++next, ++printed) line(' ', next, e[next]);
    }
    if (k < changed.size()) {
      os << "  ... and " << changed.size() - k << " more changed lines, up to line " << e_end
         << "\n";
    }
  } else {
    for (size_t i = context_begin; i < first; ++i) line(' ', i, e[i]);
    const size_t e_shown =
        std::min(e_count, std::max(kShown / 2, kShown - std::min(kShown, a_count)));
    const size_t a_shown = std::min(a_count, kShown - e_shown);
    for (size_t i = first; i < first + e_shown; ++i) line('-', i, e[i]);
    if (e_shown < e_count) os << "  ... and " << e_count - e_shown << " more - lines\n";
    for (size_t i = first; i < first + a_shown; ++i) line('+', i, a[i]);
    if (a_shown < a_count) os << "  ... and " << a_count - a_shown << " more + lines\n";
    if (e_shown == e_count && a_shown == a_count) {
      for (size_t i = e_end; i < std::min(e.size(), e_end + kContext); ++i) line(' ', i, e[i]);
    }
  }
  return os.str();
}

// Writes text to path if it differs; true if it wrote.
bool rewrite(const fs::path& path, const std::string& text) {
  if (fs::exists(path) && slurp(path.string()) == text) return false;
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      ADD_FAILURE() << "cannot write " << tmp;
      return false;
    }
  }
  fs::rename(tmp, path);
  return true;
}

// Compares an output with its reference, or rewrites the reference.
void check_against_reference(const std::string& scenario, const std::string& what,
                             const fs::path& reference, const std::string& actual) {
  const std::string rel = "tests/golden/" + fs::relative(reference, kGoldenDir).generic_string();
  if (updating()) {
    fs::create_directories(reference.parent_path());
    if (rewrite(reference, actual))
      std::cout << "[ golden   ] rewrote " << rel << "\n";
    else
      std::cout << "[ golden   ] unchanged " << rel << "\n";
    return;
  }
  if (!fs::exists(reference)) {
    ADD_FAILURE() << "no reference " << rel << " for the " << what << " of scenarios/" << scenario
                  << ".toml; create it with\n  " << kUpdateCommand
                  << "\nand review it before committing it (see tests/golden/README.md)";
    return;
  }
  const std::string expected = slurp(reference.string());
  if (expected != actual) {
    ADD_FAILURE() << "the " << what << " of scenarios/" << scenario << ".toml differs from " << rel
                  << ":\n"
                  << line_diff(expected, actual)
                  << "If the change is intended, regenerate the references with\n  "
                  << kUpdateCommand << "\nand review `git diff tests/golden/` before committing.";
  }
}

class GoldenScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenScenario, MatchesItsReference) {
  const std::string& name = GetParam();
  ScratchDir dir;
  const std::string json = dir.file(param_name(name) + ".json");  // absolute
  Cli r;
  {
    WorkingDirectory wd(kSourceDir);
    r = testing::mmsim(
        {"run", "scenarios/" + name + ".toml", "--check", "--no-timing", "--json", json});
  }
  ASSERT_EQ(r.code, 0) << "mmsim run scenarios/" << name << ".toml failed; stderr:\n" << r.err;
  ASSERT_EQ(r.err, "") << "mmsim run scenarios/" << name << ".toml wrote on stderr";
  ASSERT_TRUE(fs::exists(json)) << "no JSON report written";
  check_against_reference(name, "JSON report", kGoldenDir / (name + ".json"), slurp(json));
  check_against_reference(name, "summary", kGoldenDir / (name + ".txt"), r.out);
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenScenario, ::testing::ValuesIn(scenario_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return param_name(info.param);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GoldenScenario);

// Every scenario has both references and every reference has its scenario.
TEST(GoldenReferences, CoverExactlyTheShippedScenarios) {
  const std::vector<std::string> names = scenario_names();
  ASSERT_FALSE(names.empty()) << "no scenarios found in " << kScenarioDir;
  const std::set<std::string> scenarios(names.begin(), names.end());

  std::set<std::string> params;
  for (const auto& n : names) {
    EXPECT_TRUE(params.insert(param_name(n)).second)
        << "two scenarios give the test name " << param_name(n) << "; rename one";
  }

  std::vector<std::string> orphans;  // references without a scenario
  std::set<std::string> have_json, have_txt;
  for (const auto& e : fs::recursive_directory_iterator(kGoldenDir)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".json" && ext != ".txt") continue;
    const std::string stem = relative_stem(e.path(), kGoldenDir);
    if (!scenarios.count(stem)) {
      orphans.push_back(fs::relative(e.path(), kGoldenDir).generic_string());
      continue;
    }
    (ext == ".json" ? have_json : have_txt).insert(stem);
  }
  std::sort(orphans.begin(), orphans.end());

  if (updating()) {
    for (const auto& o : orphans) {
      fs::remove(kGoldenDir / o);
      std::cout << "[ golden   ] removed tests/golden/" << o << " (no scenarios/"
                << fs::path(o).replace_extension().generic_string() << ".toml)\n";
    }
    return;  // the scenarios' tests write the missing references
  }

  std::ostringstream problems;
  for (const auto& o : orphans) {
    problems << "  tests/golden/" << o << " has no scenario scenarios/"
             << fs::path(o).replace_extension().generic_string() << ".toml\n";
  }
  for (const auto& n : names) {
    if (!have_json.count(n))
      problems << "  scenarios/" << n << ".toml has no tests/golden/" << n << ".json\n";
    if (!have_txt.count(n))
      problems << "  scenarios/" << n << ".toml has no tests/golden/" << n << ".txt\n";
  }
  if (!problems.str().empty()) {
    ADD_FAILURE() << "the golden references do not match the shipped scenarios:\n"
                  << problems.str() << "Regenerate them with\n  " << kUpdateCommand
                  << "\nand review `git diff tests/golden/` before committing.";
  }
}

}  // namespace
}  // namespace mmsim::cli
