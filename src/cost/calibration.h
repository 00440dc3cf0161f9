// Turns the host calibrators' measurements (tools/calibrate/*) into a cost
// profile: every value with the method it was derived by, its range over the
// runs, and the measurements that failed or were unstable, named.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mmsim::cost {

// One measurement as a calibrator reports it: the median of its runs and
// their range.
struct Measurement {
  double median = 0;
  double min = 0;
  double max = 0;
  // (max - min) / |median|: 0 when all runs agree, infinity when the median
  // is 0 but the runs differ.
  double spread() const;
};

// Measurements by name, as the calibrators print them.
using Measurements = std::map<std::string, Measurement>;

// The spread above which a measurement makes the host unstable (25%).
inline constexpr double kDefaultMaxSpread = 0.25;

struct DerivedCost {
  std::string name;  // a cost parameter (find_cost_param()) or a measured behaviour
  double value = 0;
  // The range the value takes over the runs of its inputs (interval
  // arithmetic: a difference a - b ranges over [a.min - b.max, a.max - b.min]).
  double min = 0;
  double max = 0;
  std::string method;
  // A value that holds by definition, not by measurement (exit_base_ns = 0:
  // fork_base_ns's measurement covers the exit).
  bool by_definition = false;
  double spread() const;
};

// A cost whose derivation came out zero or negative: not written, named here.
struct FailedCost {
  std::string name;
  std::string why;
};

// A measurement whose spread is above the threshold.
struct UnstableMeasurement {
  std::string name;
  Measurement m;
};

struct HostProfile {
  // [costs]: cost parameters this build knows (find_cost_param()), each > 0
  // unless by_definition.
  std::vector<DerivedCost> costs;
  // [measured]: behaviour of the host's kernel the scenarios take from it
  // (file_fault_pages), derived hardware values this build has no cost
  // parameter for, and every raw measurement (median and range), which
  // `mmsim calibrate --check` compares its predictions with.
  std::vector<DerivedCost> measured;
  std::vector<std::string> missing;  // measurements a derivation needed that were not there
  std::vector<FailedCost> failed;
  // Measurements a cost was derived from whose spread is above max_spread.
  std::vector<UnstableMeasurement> unstable;
};

// REQUIRES: max_spread >= 0. Missing measurements are named and their costs
// left out (the defaults then apply); a cost that would be zero or negative is
// named in `failed` and left out, never written as 0.
HostProfile derive_host_profile(const Measurements& m, double max_spread = kDefaultMaxSpread);

// The profile as TOML, `header` first. Each value's comment gives its spread,
// range and method; measurements are listed under [measured].
std::string host_profile_toml(const HostProfile& p, const std::string& header);

// "12.3% [min 1.2, max 3.4]", the spread and range as the profile and the
// terminal show them.
std::string spread_text(double spread, double min, double max);

}  // namespace mmsim::cost
