// A/B comparison of scenario settings: every combination of the varied
// settings runs N times with consecutive seeds, on a few threads, and the
// results are set side by side with a confidence interval on the throughput
// change, as one would compare two kernels with repeated benchmark runs.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenario/scenario.h"
#include "scenario/simulation.h"
#include "topo/topology.h"

namespace mmsim::report {

// One `--vary KEY=V1,V2,...` argument.
struct Vary {
  std::string key;
  std::vector<std::string> values;
};

// Splits "KEY=V1,V2" at the first '=' and the values at commas. nullopt, with
// `error` set, when there is no '=', no key, or an empty value.
std::optional<Vary> parse_vary(const std::string& arg, std::string* error);

struct CompareOptions {
  std::string scenario;           // the TOML file
  std::vector<std::string> vary;  // "KEY=V1,V2,..." each; the first varies slowest
  std::vector<std::string> sets;  // "key.path=value", applied before the varied keys
  uint32_t repeat = 1;            // runs per combination; REQUIRES: >= 1
  std::optional<uint64_t> seed;   // the first run's seed; default scenario.seed
  std::string metric;  // a named counter or a time; empty: the first counter, else elapsed_s
  uint32_t jobs = 2;   // worlds run at once; REQUIRES: >= 1
  // Called (from a worker thread, one call at a time) after each run with the
  // runs done and the total: a progress display's hook.
  std::function<void(size_t, size_t)> on_run_done;
};

struct CompareReport {
  int exit_code = 0;            // 0 ok, 2 bad input (nothing ran)
  std::string out;              // the table
  std::string err;              // diagnostics and warnings, one per line
  nlohmann::ordered_json json;  // set when exit_code is 0
};

// Validates every combination first (nothing runs if any fails), then runs
// them all on `jobs` threads. The results do not depend on `jobs`. An
// exception from a run (a bug) propagates to the caller.
CompareReport compare(const CompareOptions& options);

// Checks a compare's arguments and prepares (but does not run) every
// combination's scenario: exit_code 2 and `err` when any is wrong.
CompareReport compare_check(const CompareOptions& options);

// `--shard K/N`: the K-th (from 1) of N shares of a compare's runs, those
// whose job number (combination x repeat + repeat index) is K - 1 modulo N.
struct Shard {
  uint32_t k = 1;
  uint32_t n = 1;
};
// "K/N" with 1 <= K <= N; nullopt, with `error` set, otherwise.
std::optional<Shard> parse_shard(const std::string& arg, std::string* error);

// Runs the shard's share of the compare and writes, into `dir` (made if
// missing), plan.json (the whole compare's arguments, the same from every
// shard) and run-J.json for each of its jobs J. `out` says what it wrote.
// exit_code 3: a file could not be written.
CompareReport compare_shard(const CompareOptions& options, Shard shard, const std::string& dir);

// The compare that `dir`'s shards ran, from their files: the same table and
// JSON as one unsharded compare (the scenario must be where, and what, it was
// when they ran). exit_code 2 when a run is missing or the files disagree.
CompareReport compare_merge(const std::string& dir);

// The statistics behind "change vs first", exposed for tests.
struct Sample {
  double mean = 0;
  double var = 0;  // unbiased sample variance; 0 with one value
  size_t n = 0;
};
Sample sample_of(const std::vector<double>& values);

// The change of x's mean relative to base's mean, in %, and Welch's 95%
// interval on the difference of the means, in % of base's mean.
struct Change {
  std::optional<double> pct;                    // none: base's mean is 0
  std::optional<std::pair<double, double>> ci;  // none: either has fewer than 2 values
};
Change change_vs(const Sample& base, const Sample& x);

// A text table: a label column, then one right-aligned column per header
// (long headers wrap at spaces), under a rule.
struct Row {
  std::string label;
  std::vector<std::string> cells;  // one per header
};
std::string format_table(const std::vector<std::string>& headers, const std::vector<Row>& rows);

// The two-sided 95% quantile of Student's t with `df` degrees of freedom
// (rounded down; df >= 1). Exposed for tests.
double t_quantile_975(double df);

}  // namespace mmsim::report
