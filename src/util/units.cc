// The size and duration grammars of units.h: hand-written scanners that say
// exactly what is wrong with a malformed size or duration.
#include "util/units.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace mmsim::util {
namespace {

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kMaxI64 = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

constexpr std::string_view kSizeExamples = "e.g. 4096, 64K, 2MiB, 1GB";
constexpr std::string_view kSizeUnits =
    "known: B; K M G T P E (also lowercase) and KiB MiB GiB TiB PiB EiB are powers of 1024; "
    "KB MB GB TB PB EB are powers of 1000";
constexpr std::string_view kDurationUnits = "ns, us, ms, s, min, h";
constexpr std::string_view kTooLong =
    "longer than the maximum of 2^63-1 nanoseconds (about 292 years)";

// `text` in double quotes, with quotes, backslashes and control characters
// escaped so that a message quoting it stays on one line.
std::string quote(std::string_view text) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// The number of leading decimal digits of `text`, and their value unless it
// exceeds `max` (then `overflow` is set and `value` is meaningless).
struct Digits {
  size_t length = 0;
  uint64_t value = 0;
  bool overflow = false;
};

Digits scan_digits(std::string_view text, uint64_t max) {
  Digits d;
  while (d.length < text.size() && is_digit(text[d.length])) {
    const auto digit = static_cast<uint64_t>(text[d.length] - '0');
    if (d.overflow || d.value > (max - digit) / 10) {
      d.overflow = true;
    } else {
      d.value = d.value * 10 + digit;
    }
    ++d.length;
  }
  return d;
}

// The unit after the number: what follows it, less at most one space (the
// caller has rejected a trailing space). Sets *why and returns false when
// there is more than one space.
bool take_unit(std::string_view rest, std::string_view* unit, std::string* why) {
  if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (!rest.empty() && rest.front() == ' ') {
    *why = "at most one space is allowed between the number and the unit";
    return false;
  }
  *unit = rest;
  return true;
}

// Bytes per unit of a size, or 0 for an unknown unit.
uint64_t size_unit_bytes(std::string_view unit) {
  if (unit.empty() || unit == "B") return 1;
  constexpr std::string_view kLetters = "KMGTPE";
  constexpr std::string_view kLower = "kmgtpe";
  size_t power = kLetters.find(unit.front());
  if (power == std::string_view::npos) {
    power = kLower.find(unit.front());
    if (power == std::string_view::npos || unit.size() != 1) return 0;
  }
  const std::string_view suffix = unit.substr(1);
  uint64_t base;
  if (suffix.empty() || suffix == "iB") {
    base = 1024;
  } else if (suffix == "B") {
    base = 1000;
  } else {
    return 0;
  }
  uint64_t bytes = 1;
  for (size_t i = 0; i <= power; ++i) bytes *= base;
  return bytes;
}

// Nanoseconds per unit of a duration, or 0 for an unknown unit.
uint64_t duration_unit_ns(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us") return 1'000;
  if (unit == "ms") return 1'000'000;
  if (unit == "s") return 1'000'000'000;
  if (unit == "min") return 60'000'000'000;
  if (unit == "h") return 3'600'000'000'000;
  return 0;
}

// round(0.<digits> * ns_per_unit), halves up, computed exactly: the decimal
// fraction, read as an integer, is multiplied by ns_per_unit from its last
// digit on; what carries out of its first digit is the whole nanoseconds and
// the first digit of the product's fraction decides the rounding.
uint64_t fraction_ns(std::string_view digits, uint64_t ns_per_unit) {
  uint64_t carry = 0;
  uint64_t first_fraction_digit = 0;
  for (size_t i = digits.size(); i-- > 0;) {
    const uint64_t t = static_cast<uint64_t>(digits[i] - '0') * ns_per_unit + carry;
    carry = t / 10;
    if (i == 0) first_fraction_digit = t % 10;
  }
  return carry + (first_fraction_digit >= 5 ? 1 : 0);
}

std::string shortest(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

}  // namespace

std::optional<uint64_t> parse_size(std::string_view text, std::string* error) {
  auto fail = [&](std::string_view why) -> std::optional<uint64_t> {
    if (error) *error = quote(text) + ": " + std::string(why);
    return std::nullopt;
  };
  if (text.empty()) {
    return fail("empty, expected a number of bytes with an optional unit (" +
                std::string(kSizeExamples) + ")");
  }
  if (is_space(text.front()) || is_space(text.back())) {
    return fail("spaces before or after the size are not allowed");
  }
  if (text.front() == '-') return fail("negative sizes are not allowed");
  if (text.front() == '+') return fail("a sign is not allowed");
  if (text.size() > 1 && text[0] == '.' && is_digit(text[1])) {
    return fail("fractions are not allowed, use a smaller unit");
  }
  const Digits number = scan_digits(text, kMaxU64);
  if (number.length == 0) {
    return fail("expected a number of bytes with an optional unit (" + std::string(kSizeExamples) +
                ")");
  }
  const std::string_view rest = text.substr(number.length);
  if (!rest.empty() && rest.front() == '.') {
    return fail("fractions are not allowed, use a smaller unit");
  }
  std::string why;
  std::string_view unit;
  if (!take_unit(rest, &unit, &why)) return fail(why);
  const uint64_t unit_bytes = size_unit_bytes(unit);
  if (unit_bytes == 0) return fail("unknown unit (" + std::string(kSizeUnits) + ")");
  if (number.overflow || number.value > kMaxU64 / unit_bytes) {
    return fail("larger than 2^64-1 bytes");
  }
  return number.value * unit_bytes;
}

std::optional<int64_t> parse_duration(std::string_view text, std::string* error) {
  auto fail = [&](std::string_view why) -> std::optional<int64_t> {
    if (error) *error = quote(text) + ": " + std::string(why);
    return std::nullopt;
  };
  const std::string expected =
      "expected a number followed by a unit (" + std::string(kDurationUnits) + "), e.g. 10s, 1.5ms";
  if (text.empty()) return fail("empty, " + expected);
  if (is_space(text.front()) || is_space(text.back())) {
    return fail("spaces before or after the duration are not allowed");
  }
  if (text.front() == '-') return fail("negative durations are not allowed");
  if (text.front() == '+') return fail("a sign is not allowed");
  if (text.front() == '.') return fail("expected a digit before the decimal point (write 0.5s)");
  const Digits whole = scan_digits(text, kMaxI64);
  if (whole.length == 0) return fail(expected);
  std::string_view rest = text.substr(whole.length);
  std::string_view fraction;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    size_t n = 0;
    while (n < rest.size() && is_digit(rest[n])) ++n;
    fraction = rest.substr(0, n);
    rest.remove_prefix(n);
    if (!rest.empty() && rest.front() == '.') return fail("more than one decimal point");
    // As TOML's own floats: a point needs a digit on each side.
    if (fraction.empty())
      return fail("expected a digit after the decimal point (write 1s or 1.5s)");
  }
  std::string why;
  std::string_view unit;
  if (!take_unit(rest, &unit, &why)) return fail(why);
  if (unit.empty()) {
    return fail("missing unit (" + std::string(kDurationUnits) + ")");
  }
  const uint64_t unit_ns = duration_unit_ns(unit);
  if (unit_ns == 0) return fail("unknown unit (known: " + std::string(kDurationUnits) + ")");
  const uint64_t part_ns = fraction_ns(fraction, unit_ns);  // at most unit_ns
  if (whole.overflow || whole.value > (kMaxI64 - part_ns) / unit_ns) return fail(kTooLong);
  return static_cast<int64_t>(whole.value * unit_ns + part_ns);
}

std::optional<int64_t> seconds_to_ns(double seconds, std::string* error) {
  auto fail = [&](std::string_view why) -> std::optional<int64_t> {
    if (error) *error = shortest(seconds) + " s: " + std::string(why);
    return std::nullopt;
  };
  if (std::isnan(seconds)) return fail("not a number of seconds");
  if (seconds < 0) return fail("negative durations are not allowed");
  if (std::isinf(seconds)) return fail("infinite durations are not allowed");
  const double ns = std::round(seconds * 1e9);
  // 2^63 is exact in a double; every double below it converts without overflow.
  if (ns >= 9223372036854775808.0) return fail(kTooLong);
  return static_cast<int64_t>(ns);
}

}  // namespace mmsim::util
