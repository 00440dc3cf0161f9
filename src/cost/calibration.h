// Turns the host calibrators' measurements (tools/calibrate/*) into a cost
// profile: every value with the method it was derived by.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mmsim::cost {

// Measurements by name, as the calibrators print them (median values).
using Measurements = std::map<std::string, double>;

struct DerivedCost {
  std::string name;  // a cost parameter (cost_params()) or a measured behaviour
  double value = 0;
  std::string method;
};

struct HostProfile {
  std::vector<DerivedCost> costs;     // [costs]
  std::vector<DerivedCost> measured;  // [measured]: kernel behaviour seen on the host
  std::vector<std::string> missing;   // measurements that were not there
};

// REQUIRES: `m` holds the calibrators' keys; missing ones are reported and
// their parameters left out (the defaults then apply).
HostProfile derive_host_profile(const Measurements& m);

// The profile as TOML, with a header naming the host and the date.
std::string host_profile_toml(const HostProfile& p, const std::string& header);

}  // namespace mmsim::cost
