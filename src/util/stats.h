// Statistics and timing helpers for measurements repeated on the host: the
// median and range of the runs, percentiles, and a monotonic nanosecond clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mmsim::util {

// The usual summary of repeated measurements.
struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
  size_t n = 0;  // the number of samples

  // (max - min) / |median|, the width of the range relative to the median: 0
  // without samples or when all are equal, infinity when the median is 0 but
  // the samples differ.
  double spread() const;
};

// The median (as median() defines it), minimum and maximum of `samples`;
// all 0 (and n 0) when there are none.
// REQUIRES: no sample is NaN.
Summary summarize(std::vector<double> samples);

// The middle sample, or the mean of the middle two for an even count; 0 when
// there are no samples.
// REQUIRES: no sample is NaN.
double median(std::vector<double> samples);

// The q-quantile without interpolation: the sample at index floor(q * n) of
// the n sorted samples, i.e. the smallest sample x with more than q * n
// samples <= x. q = 0 gives the minimum and q >= 1 the maximum (q below 0 or
// NaN is taken as 0). For an even count, q = 0.5 gives the upper of the middle
// two, not median(). 0 when there are no samples.
// REQUIRES: no sample is NaN.
double percentile(std::vector<double> samples, double q);

// Nanoseconds on the steady clock (CLOCK_MONOTONIC on Linux). Only
// differences between two readings mean anything. Inline, so that timing
// code pays only for the clock read.
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace mmsim::util
