// The project's grammars for amounts of memory and time: how command-line
// flags, scenario files, benchmark programs and calibrators spell a size or a
// duration.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mmsim::util {

// Sizes, in the convention of the kernel's memparse() and util-linux's
// parse_size():
//
//   size := digits [" "] [unit]
//   unit := "B"                                   bytes
//         | "K" "M" "G" "T" "P" "E"               powers of 1024 (also k m g t p e)
//         | "KiB" "MiB" "GiB" "TiB" "PiB" "EiB"   powers of 1024
//         | "KB" "MB" "GB" "TB" "PB" "EB"         powers of 1000
//
// A bare number is bytes. There is at most one space between the number and
// the unit and none before or after the whole. No sign, no fraction ("1.5G" is
// an error: write 1536M), no exponent. The bytes must fit in 64 bits, so 16E
// (2^64) is too large. Sysfs cache sizes ("32768K") read as powers of 1024.
//
// Returns the number of bytes. On malformed text returns nullopt and, if
// `error` is not null, sets *error to a one-line reason that quotes the text,
// e.g. "\"1.5G\": fractions are not allowed, use a smaller unit".
std::optional<uint64_t> parse_size(std::string_view text, std::string* error = nullptr);

// Durations:
//
//   duration := digits ["." [digits]] [" "] unit
//   unit     := "ns" | "us" | "ms" | "s" | "min" | "h"
//
// A non-negative decimal number (at least one digit before the point, at most
// one point) and a unit, with at most one space between them and none before
// or after the whole. No sign, no exponent, no "inf" or "nan". A bare number
// is an error here: callers that take plain numbers as seconds convert those
// with seconds_to_ns().
//
// Returns the duration in nanoseconds, rounded to the nearest nanosecond
// (halves up: "0.5ns" is 1). Durations longer than 2^63-1 ns (about 292
// years) are errors. On malformed text returns nullopt and, if `error` is not
// null, sets *error to a one-line reason that quotes the text.
std::optional<int64_t> parse_duration(std::string_view text, std::string* error = nullptr);

// A plain number of seconds in nanoseconds, rounded to the nearest (halves
// away from zero). Returns nullopt, with a one-line reason in *error if
// `error` is not null, for a negative number, NaN, infinity, or more than
// 2^63-1 ns.
std::optional<int64_t> seconds_to_ns(double seconds, std::string* error = nullptr);

}  // namespace mmsim::util
