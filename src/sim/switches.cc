#include "sim/switches.h"

#include <algorithm>
#include <charconv>

namespace mmsim {

std::optional<KernelVersion> KernelVersion::parse(std::string_view text) {
  KernelVersion v;
  // Digits, one dot, digits: from_chars would take a sign ("4.-1").
  const size_t dot = text.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 3 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string_view::npos || !digits(text.substr(0, dot)) ||
      !digits(text.substr(dot + 1)))
    return std::nullopt;
  const char* p = text.data();
  const char* end = p + text.size();
  auto [after_major, e1] = std::from_chars(p, end, v.major);
  if (e1 != std::errc() || after_major == end || *after_major != '.') return std::nullopt;
  auto [after_minor, e2] = std::from_chars(after_major + 1, end, v.minor);
  if (e2 != std::errc() || after_minor != end || after_major + 1 == after_minor)
    return std::nullopt;
  if (v.major == 2 && v.minor != 6) return std::nullopt;
  if (v < kOldestKernel || v > kNewestKernel || v.minor > 99) return std::nullopt;
  return v;
}

std::string KernelVersion::str() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

int64_t SwitchInfo::value_for(KernelVersion v) const {
  for (const auto& p : presets) {
    if (v >= p.from && v <= p.until) return p.value;
  }
  return default_value;
}

std::string SwitchInfo::format(int64_t value) const {
  if (kind == SwitchKind::kBool) return value ? "true" : "false";
  for (const auto& w : words) {
    if (w.value == value) return std::string(w.word);
  }
  return std::to_string(value);
}

std::optional<int64_t> SwitchInfo::from_word(std::string_view word) const {
  for (const auto& w : words) {
    if (w.word == word) return w.value;
  }
  return std::nullopt;
}

std::string SwitchInfo::check(int64_t value) const {
  if (kind != SwitchKind::kInt) return {};
  for (const auto& w : words) {
    if (w.value == value) return {};
  }
  if (value < lo || value > hi) {
    return std::to_string(value) + " is out of range [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]";
  }
  if (value % multiple_of != 0) return "must be a multiple of " + std::to_string(multiple_of);
  if (power_of_two) {
    const int64_t n = value / multiple_of;
    if (n != 0 && (n & (n - 1)) != 0) {
      return "must be 0 or a power of two times " + std::to_string(multiple_of);
    }
  }
  return {};
}

std::string SwitchInfo::name() const { return std::string(section) + "." + std::string(key); }

std::string SwitchInfo::presets_text() const {
  if (presets.empty()) return format(default_value);
  std::string out;
  for (const auto& p : presets) {
    if (!out.empty()) out += ", ";
    out += format(p.value);
    if (p.from > kOldestKernel && p.until < kNewestKernel) {
      out += " in " + p.from.str() + "-" + p.until.str();
    } else if (p.from > kOldestKernel) {
      out += " from " + p.from.str();
    } else if (p.until < kNewestKernel) {
      out += " up to " + p.until.str();
    }
  }
  return out + " (else " + format(default_value) + ")";
}

}  // namespace mmsim
