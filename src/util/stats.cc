// The summary statistics of stats.h: median, range, spread and percentiles of
// a set of samples.
#include "util/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mmsim::util {
namespace {

// The median of samples already sorted.
double sorted_median(const std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

}  // namespace

double Summary::spread() const {
  if (n == 0 || max == min) return 0;
  if (median == 0) return std::numeric_limits<double>::infinity();
  return (max - min) / std::abs(median);
}

Summary summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.n = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = sorted_median(samples);
  return s;
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return sorted_median(samples);
}

double percentile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  const size_t last = samples.size() - 1;
  size_t index = 0;
  if (q >= 1) {
    index = last;
  } else if (q > 0) {
    index = std::min(last, static_cast<size_t>(q * static_cast<double>(samples.size())));
  }
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(index),
                   samples.end());
  return samples[index];
}

}  // namespace mmsim::util
