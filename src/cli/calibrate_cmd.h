// mmsim calibrate: runs the host calibrators and writes a cost profile.
#pragma once

#include <iosfwd>
#include <string>

#include "cost/calibration.h"

namespace mmsim::cli {

struct CalibrateArgs {
  std::string out = "host-costs.toml";
  std::string tools_dir;  // empty: next to the mmsim binary's build tree
  std::string bench_dir;  // empty: likewise
  int runs = 0;           // 0: the calibrators' defaults
};

int cmd_calibrate(const CalibrateArgs& a, std::ostream& out, std::ostream& err);

// Reads the [costs] tables of calibrator output files into one set.
bool read_measurements(const std::string& path, cost::Measurements& m, std::string* error);

// The build tree's directory for a component ("tools/calibrate",
// "bench/programs"), found from /proc/self/exe (build/<preset>/src/cli/mmsim).
std::string build_dir_of(const std::string& component);

}  // namespace mmsim::cli
