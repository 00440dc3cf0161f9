// libFuzzer target: arbitrary bytes as scenario TOML through the loader
// (scenario::prepare with in-memory text: parse, validate every key, build
// the machine). The loader must answer with diagnostics or a Scenario; it
// must never crash, leak, hang or throw. Nothing runs here
// (fuzz_scenario_run runs generated scenarios).
//
// Comment lines "#set KEY=VALUE" are passed as --set overrides, and a line
// "#seed N" as --seed, so that the fuzzer reaches those paths too (they stay
// comments to the TOML parser).
//
//   build/fuzz/fuzz/fuzz_scenario_load -dict=fuzz/scenario.dict CORPUS_DIR
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "scenario/simulation.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& text) {
  std::fprintf(stderr, "fuzz_scenario_load: %s\n--- input ---\n%s\n--- end ---\n", what,
               text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Scenario files are small; a huge input only slows the fuzzer down.
  if (size > 64 * 1024) return -1;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // A costs.profile names a file to read: keep the fuzzer off the host's
  // files (/dev/zero, /proc/...) by refusing such inputs.
  if (text.find("profile") != std::string::npos) return -1;

  mmsim::scenario::Source source;
  source.path = "fuzz.toml";
  source.text = text;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + at, end - at);
    if (line.starts_with("#set ") && source.overrides.size() < 8) {
      source.overrides.emplace_back(line.substr(5));
    } else if (line.starts_with("#seed ")) {
      uint64_t seed = 0;
      const auto digits = line.substr(6);
      if (std::from_chars(digits.data(), digits.data() + digits.size(), seed).ec == std::errc())
        source.seed = seed;
    }
    at = end + 1;
  }
  const mmsim::scenario::PrepareResult r = mmsim::scenario::prepare(source);

  // Exactly one of the two, as simulation.h promises.
  if (r.run.has_value() == !r.diagnostics.empty()) {
    fail(r.run ? "a prepared scenario with diagnostics" : "neither a scenario nor a diagnostic",
         text);
  }
  for (const auto& d : r.diagnostics) {
    // Every diagnostic renders and says something.
    const std::string s = d.str();
    if (d.message.empty()) fail(("a diagnostic without a message: " + s).c_str(), text);
  }
  if (r.run) {
    // What a run would build from it, short of running.
    const auto wc = mmsim::scenario::world_config(r.run->scenario, r.run->topology);
    if (wc.time_limit.ns <= 0) fail("a scenario with a time limit <= 0", text);
  }
  return 0;
}
