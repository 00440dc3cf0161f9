// Tests of the size and duration grammars (util/units.h): what each accepts,
// how it rounds, and the one-line reason it gives for what it rejects.
#include "util/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace mmsim::util {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// The reason parse_size() gives for `text`, or "accepted".
std::string size_error(const std::string& text) {
  std::string error;
  return parse_size(text, &error) ? "accepted" : error;
}

// The reason parse_duration() gives for `text`, or "accepted".
std::string duration_error(const std::string& text) {
  std::string error;
  return parse_duration(text, &error) ? "accepted" : error;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// ------------------------------------------------------------------ sizes

TEST(ParseSize, APlainNumberIsBytes) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("007"), 7u);
}

TEST(ParseSize, BIsBytes) { EXPECT_EQ(parse_size("512B"), 512u); }

TEST(ParseSize, KiBAndKAreBothPowersOf1024) {
  EXPECT_EQ(parse_size("4K"), 4 * kKiB);
  EXPECT_EQ(parse_size("4k"), 4 * kKiB);
  EXPECT_EQ(parse_size("4KiB"), 4 * kKiB);
}

TEST(ParseSize, EachLetterIsTheNextPowerOf1024) {
  const char* letters[] = {"K", "M", "G", "T", "P", "E"};
  const char* lower[] = {"k", "m", "g", "t", "p", "e"};
  const char* binary[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  uint64_t unit = 1;
  for (int i = 0; i < 6; ++i) {
    unit *= 1024;
    EXPECT_EQ(parse_size(std::string("3") + letters[i]), 3 * unit) << letters[i];
    EXPECT_EQ(parse_size(std::string("3") + lower[i]), 3 * unit) << lower[i];
    EXPECT_EQ(parse_size(std::string("3") + binary[i]), 3 * unit) << binary[i];
  }
}

TEST(ParseSize, KBIsAPowerOf1000) { EXPECT_EQ(parse_size("4KB"), 4000u); }

TEST(ParseSize, EachLetterBeforeBIsTheNextPowerOf1000) {
  const char* decimal[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
  uint64_t unit = 1;
  for (const char* name : decimal) {
    unit *= 1000;
    EXPECT_EQ(parse_size(std::string("7") + name), 7 * unit) << name;
  }
}

TEST(ParseSize, ReadsSysfsCacheSizesAsPowersOf1024) {
  EXPECT_EQ(parse_size("32768K"), 32 * kMiB);
  EXPECT_EQ(parse_size("45M"), 45 * kMiB);
}

TEST(ParseSize, AllowsOneSpaceBetweenTheNumberAndTheUnit) {
  EXPECT_EQ(parse_size("1 GiB"), kGiB);
  EXPECT_EQ(parse_size("1024 KB"), 1024'000u);
}

TEST(ParseSize, RejectsTwoSpacesWithAReason) {
  EXPECT_EQ(size_error("1  GiB"),
            "\"1  GiB\": at most one space is allowed between the number and the unit");
}

TEST(ParseSize, RejectsSpacesAroundTheSize) {
  EXPECT_EQ(size_error(" 4K"), "\" 4K\": spaces before or after the size are not allowed");
  EXPECT_EQ(size_error("4K "), "\"4K \": spaces before or after the size are not allowed");
  EXPECT_EQ(size_error("4K\n"), "\"4K\\n\": spaces before or after the size are not allowed");
}

TEST(ParseSize, RejectsAFractionWithAReason) {
  EXPECT_EQ(size_error("1.5G"), "\"1.5G\": fractions are not allowed, use a smaller unit");
  EXPECT_EQ(size_error(".5G"), "\".5G\": fractions are not allowed, use a smaller unit");
}

TEST(ParseSize, RejectsASign) {
  EXPECT_EQ(size_error("-1"), "\"-1\": negative sizes are not allowed");
  EXPECT_EQ(size_error("+1"), "\"+1\": a sign is not allowed");
}

TEST(ParseSize, RejectsAnUnknownUnitListingTheKnownOnes) {
  const std::string e = size_error("20Q");
  EXPECT_TRUE(starts_with(e, "\"20Q\": unknown unit (known: B; K M G T P E")) << e;
  EXPECT_NE(e.find("KiB MiB GiB TiB PiB EiB are powers of 1024"), std::string::npos) << e;
  EXPECT_NE(e.find("KB MB GB TB PB EB are powers of 1000"), std::string::npos) << e;
}

TEST(ParseSize, RejectsSpellingsOutsideTheGrammar) {
  for (const char* text : {"4kB", "4kiB", "4KIB", "4Kb", "4b", "4KiBB", "4 K B", "1e3", "0x10"})
    EXPECT_FALSE(parse_size(text)) << text;
}

TEST(ParseSize, RejectsEmptyTextAndAUnitWithoutANumber) {
  EXPECT_TRUE(starts_with(size_error(""), "\"\": empty")) << size_error("");
  EXPECT_TRUE(starts_with(size_error("K"), "\"K\": expected a number of bytes")) << size_error("K");
}

TEST(ParseSize, AcceptsTheLargest64BitValue) {
  EXPECT_EQ(parse_size("18446744073709551615"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(parse_size("15E"), 15ull << 60);
}

TEST(ParseSize, RejectsMoreThan2To64Minus1BytesWithAReason) {
  EXPECT_EQ(size_error("99999999999999999999"),
            "\"99999999999999999999\": larger than 2^64-1 bytes");
  EXPECT_EQ(size_error("18446744073709551616"),
            "\"18446744073709551616\": larger than 2^64-1 bytes");
  EXPECT_EQ(size_error("16E"), "\"16E\": larger than 2^64-1 bytes");
  EXPECT_EQ(size_error("18446744073709552KB"), "\"18446744073709552KB\": larger than 2^64-1 bytes");
}

TEST(ParseSize, EscapesControlCharactersSoTheReasonStaysOnOneLine) {
  EXPECT_EQ(size_error("4\x01K"),
            "\"4\\x01K\": unknown unit (known: B; K M G T P E (also "
            "lowercase) and KiB MiB GiB TiB PiB EiB are powers of 1024; "
            "KB MB GB TB PB EB are powers of 1000)");
}

TEST(ParseSize, LeavesTheErrorAloneOnSuccess) {
  std::string error = "untouched";
  EXPECT_EQ(parse_size("1K", &error), kKiB);
  EXPECT_EQ(error, "untouched");
}

// ------------------------------------------------------------------ durations

TEST(ParseDuration, ReadsEveryUnit) {
  EXPECT_EQ(parse_duration("7ns"), 7);
  EXPECT_EQ(parse_duration("7us"), 7'000);
  EXPECT_EQ(parse_duration("7ms"), 7'000'000);
  EXPECT_EQ(parse_duration("7s"), 7'000'000'000);
  EXPECT_EQ(parse_duration("7min"), 420'000'000'000);
  EXPECT_EQ(parse_duration("7h"), 25'200'000'000'000);
}

TEST(ParseDuration, ReadsADecimalFraction) {
  EXPECT_EQ(parse_duration("1.5ms"), 1'500'000);
  EXPECT_EQ(parse_duration("0.25s"), 250'000'000);
  EXPECT_EQ(parse_duration("1.000000001s"), 1'000'000'001);
  EXPECT_EQ(parse_duration("0.1h"), 360'000'000'000);
}

TEST(ParseDuration, RejectsADecimalPointWithNoDigitAfterIt) {
  EXPECT_EQ(duration_error("2.s"),
            "\"2.s\": expected a digit after the decimal point (write 1s or 1.5s)");
}

TEST(ParseDuration, AllowsOneSpaceBetweenTheNumberAndTheUnit) {
  EXPECT_EQ(parse_duration("10 ms"), 10'000'000);
  EXPECT_EQ(duration_error("10  ms"),
            "\"10  ms\": at most one space is allowed between the number and the unit");
}

TEST(ParseDuration, RoundsToTheNearestNanosecond) {
  EXPECT_EQ(parse_duration("1.4ns"), 1);
  EXPECT_EQ(parse_duration("1.6ns"), 2);
  EXPECT_EQ(parse_duration("0.0000000014s"), 1);
  EXPECT_EQ(parse_duration("0.0000000016s"), 2);
}

TEST(ParseDuration, RoundsHalvesUp) {
  EXPECT_EQ(parse_duration("0.5ns"), 1);
  EXPECT_EQ(parse_duration("2.5ns"), 3);
  EXPECT_EQ(parse_duration("0.0000000005s"), 1);
}

TEST(ParseDuration, RoundsExactlyHoweverManyDigitsTheFractionHas) {
  EXPECT_EQ(parse_duration("0.49999999999999999999999999999ns"), 0);
  EXPECT_EQ(parse_duration("0.50000000000000000000000000000ns"), 1);
  // 1/120 h = 30 s exactly; 0.00833... h just below it.
  EXPECT_EQ(parse_duration("0.0083333333333333333333h"), 30'000'000'000);
}

TEST(ParseDuration, RejectsABareNumber) {
  EXPECT_EQ(duration_error("10"), "\"10\": missing unit (ns, us, ms, s, min, h)");
}

TEST(ParseDuration, RejectsTwoDecimalPoints) {
  EXPECT_EQ(duration_error("1.2.3s"), "\"1.2.3s\": more than one decimal point");
  EXPECT_EQ(duration_error("1..2s"), "\"1..2s\": more than one decimal point");
}

TEST(ParseDuration, RejectsAFractionWithNoDigitBeforeThePoint) {
  EXPECT_EQ(duration_error(".5s"),
            "\".5s\": expected a digit before the decimal point (write 0.5s)");
}

TEST(ParseDuration, RejectsInfinityAndNaN) {
  const std::string reason = ": expected a number followed by a unit";
  EXPECT_TRUE(starts_with(duration_error("inf"), "\"inf\"" + reason)) << duration_error("inf");
  EXPECT_TRUE(starts_with(duration_error("infs"), "\"infs\"" + reason)) << duration_error("infs");
  EXPECT_TRUE(starts_with(duration_error("nan"), "\"nan\"" + reason)) << duration_error("nan");
  EXPECT_TRUE(starts_with(duration_error("NaNs"), "\"NaNs\"" + reason)) << duration_error("NaNs");
}

TEST(ParseDuration, RejectsANegativeDuration) {
  EXPECT_EQ(duration_error("-1s"), "\"-1s\": negative durations are not allowed");
  EXPECT_EQ(duration_error("+1s"), "\"+1s\": a sign is not allowed");
}

TEST(ParseDuration, RejectsEmptyText) {
  EXPECT_TRUE(starts_with(duration_error(""), "\"\": empty")) << duration_error("");
}

TEST(ParseDuration, RejectsAnUnknownUnitListingTheKnownOnes) {
  EXPECT_EQ(duration_error("5m"), "\"5m\": unknown unit (known: ns, us, ms, s, min, h)");
  EXPECT_FALSE(parse_duration("5S"));
  EXPECT_FALSE(parse_duration("1e3s"));
}

TEST(ParseDuration, RejectsSpacesAroundTheDuration) {
  EXPECT_FALSE(parse_duration(" 1s"));
  EXPECT_FALSE(parse_duration("1s "));
}

TEST(ParseDuration, AcceptsUpToInt64MaxNanoseconds) {
  EXPECT_EQ(parse_duration("9223372036854775807ns"), kInt64Max);
  EXPECT_EQ(parse_duration("2562047h"), 2562047 * 3'600'000'000'000);
  EXPECT_EQ(parse_duration("9223372036.854775807s"), kInt64Max);
}

TEST(ParseDuration, RejectsMoreThanInt64MaxNanosecondsWithAReason) {
  const std::string reason = ": longer than the maximum of 2^63-1 nanoseconds (about 292 years)";
  EXPECT_EQ(duration_error("9223372036854775808ns"), "\"9223372036854775808ns\"" + reason);
  EXPECT_EQ(duration_error("2562048h"), "\"2562048h\"" + reason);
  EXPECT_EQ(duration_error("9223372036.8547758075s"), "\"9223372036.8547758075s\"" + reason);
  EXPECT_EQ(duration_error("99999999999999999999999s"), "\"99999999999999999999999s\"" + reason);
}

TEST(ParseDuration, SecondsToNsRoundsToTheNearestNanosecond) {
  EXPECT_EQ(seconds_to_ns(1.5), 1'500'000'000);
  EXPECT_EQ(seconds_to_ns(0), 0);
  EXPECT_EQ(seconds_to_ns(1e-9), 1);
  EXPECT_EQ(seconds_to_ns(0.4e-9), 0);
  EXPECT_EQ(seconds_to_ns(9e9), 9'000'000'000'000'000'000);
}

TEST(ParseDuration, SecondsToNsRejectsNegativeNaNAndInfinity) {
  std::string error;
  EXPECT_FALSE(seconds_to_ns(-1, &error));
  EXPECT_EQ(error, "-1 s: negative durations are not allowed");
  EXPECT_FALSE(seconds_to_ns(std::nan(""), &error));
  EXPECT_EQ(error, "nan s: not a number of seconds");
  EXPECT_FALSE(seconds_to_ns(std::numeric_limits<double>::infinity(), &error));
  EXPECT_EQ(error, "inf s: infinite durations are not allowed");
}

TEST(ParseDuration, SecondsToNsRejectsMoreThanInt64MaxNanoseconds) {
  std::string error;
  EXPECT_FALSE(seconds_to_ns(1e10, &error));
  EXPECT_EQ(error, "1e+10 s: longer than the maximum of 2^63-1 nanoseconds (about 292 years)");
  EXPECT_FALSE(seconds_to_ns(9223372036.854775807));  // rounds to 2^63 ns as a double
}

}  // namespace
}  // namespace mmsim::util
