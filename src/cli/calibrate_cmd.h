// mmsim calibrate: runs the host calibrators and writes a cost profile, each
// value with its spread over the runs; refuses an unstable host; --check
// predicts the calibrators' own workloads with a profile.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "cost/calibration.h"

namespace mmsim::cli {

struct CalibrateArgs {
  std::string out = "host-costs.toml";
  std::string tools_dir;  // empty: next to the mmsim binary's build tree
  std::string bench_dir;  // empty: likewise
  int runs = 5;           // runs per measurement (the memcg calibrator takes at least 9)
  // A measurement a cost is derived from whose spread ((max - min) / median)
  // is above this makes the host unstable: the profile is not written.
  double max_spread = cost::kDefaultMaxSpread;
  bool force = false;  // write it anyway, its header saying unstable
  std::string check;   // --check PROFILE: predict the calibrators' workloads instead
};

int cmd_calibrate(const CalibrateArgs& a, std::ostream& out, std::ostream& err);

// Prints the profile's values with their spreads, then writes it to a.out,
// unless a measurement is unstable or nothing could be derived: then it names
// them and returns kExitHostRefused (3) without writing; with a.force it
// writes anyway and the header says so. `host` is the header's description of
// the host ("Linux 6.1.0 (x86_64), AMD EPYC, 2 CPUs"), `date` its date.
int write_host_profile(const cost::HostProfile& p, const CalibrateArgs& a, const std::string& host,
                       const std::string& date, std::ostream& out, std::ostream& err);

// Reads the [costs] tables of calibrator output files, with each value's
// [min, max] from their [spread] tables, into one set.
bool read_measurements(const std::string& path, cost::Measurements& m, std::string* error);

// The build tree's directory for a component ("tools/calibrate",
// "bench/programs"), found from /proc/self/exe (build/<preset>/src/cli/mmsim).
std::string build_dir_of(const std::string& component);

// One calibrator workload of `--check`: what the profile's [measured] says,
// what the simulation predicts with the profile, or why there is no
// prediction.
struct CheckRow {
  std::string key;   // the measurement's name in [measured]
  std::string unit;  // "ns/page", ...
  std::optional<double> measured;
  std::optional<double> predicted;
  std::string why_not;  // set when there is no prediction
};

// Predicts each calibrator workload with a simulator counterpart (a small
// scenario on machine preset "host" with `profile` as its costs, kernel
// `kernel_release`) and lists the rest with the reason. Returns an empty list
// and *error when the profile cannot be read.
std::vector<CheckRow> check_profile(const std::string& profile, const std::string& kernel_release,
                                    std::string* error);

// The rows as a table: measured, predicted and the relative error, then the
// workloads without a prediction and why.
std::string check_table(const std::vector<CheckRow>& rows);

}  // namespace mmsim::cli
