// Kernel behaviour switches as data. Every behaviour that changed between
// kernel versions, and every tunable a scenario may set, is one row of its
// subsystem's table (mm/config.h, numa/config.h, memcg/config.h): the scenario
// key, its type and range, its default, the kernel versions that preset it,
// one line of doc and the config field it sets. The tables drive parsing,
// version presets, the JSON and text reports, `mmsim switches` and the
// README's switch reference; nothing else lists switches by hand.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mmsim {

// A kernel release as "major.minor" (the stable patch level is not modelled).
struct KernelVersion {
  int major = 0;
  int minor = 0;
  // "X.Y" from 2.6 to 6.19 (the releases the presets know); nullopt otherwise.
  static std::optional<KernelVersion> parse(std::string_view text);
  std::string str() const;
  friend constexpr auto operator<=>(const KernelVersion&, const KernelVersion&) = default;
};

inline constexpr KernelVersion kOldestKernel{2, 6};
inline constexpr KernelVersion kNewestKernel{6, 19};

// The value a switch takes for the kernels from `from` to `until`, inclusive.
struct SwitchPreset {
  KernelVersion from = kOldestKernel;
  KernelVersion until = kNewestKernel;
  int64_t value = 0;
};

// A word a switch accepts and prints for a value (choices, named specials).
struct SwitchWord {
  std::string_view word;
  int64_t value = 0;
};

enum class SwitchKind : uint8_t {
  kBool,    // true/false (also "on"/"off" in scenarios); stored as 0/1
  kInt,     // an integer in [lo, hi], or one of `words`
  kChoice,  // one of `words` only
};

// Everything about a switch but the field it sets.
struct SwitchInfo {
  std::string_view section;  // the scenario table: "kernel", "numa" or "memcg"
  std::string_view key;      // the key in that table, also its JSON name
  SwitchKind kind = SwitchKind::kBool;
  std::string_view doc;               // one line: what it models, and its kernel source
  int64_t default_value = 0;          // for kernels no preset covers
  std::vector<SwitchPreset> presets;  // the first that covers a version wins
  int64_t lo = 0, hi = 0;             // kInt: the accepted range
  int64_t multiple_of = 1;            // kInt: values must be multiples of this
  bool power_of_two = false;          // kInt: values / multiple_of must be 0 or a power of two
  std::vector<SwitchWord> words;
  std::string_view unit;  // for the docs ("ms", "KiB", "pages")

  // The value for a kernel version: its preset, else the default.
  int64_t value_for(KernelVersion v) const;
  // The value as a scenario would write it: a word, "true"/"false", or a number.
  std::string format(int64_t value) const;
  std::optional<int64_t> from_word(std::string_view word) const;
  // Why `value` is not allowed (kInt range and steps), or empty.
  std::string check(int64_t value) const;
  // "section.key".
  std::string name() const;
  // The presets in words: "64 from 3.15 (0 before)".
  std::string presets_text() const;
};

// A switch of a subsystem whose configuration is `Config`.
template <class Config>
struct Switch {
  SwitchInfo info;
  int64_t (*get)(const Config&);
  void (*set)(Config&, int64_t);
};

// Sets every switch of the table to its value for `v`.
template <class Config>
void apply_presets(std::span<const Switch<Config>> table, KernelVersion v, Config& config) {
  for (const auto& s : table) s.set(config, s.info.value_for(v));
}

}  // namespace mmsim
