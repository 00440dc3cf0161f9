// A suite of scenarios compared across the same settings: autonuma-benchmark
// as mmtests reports it. Each scenario runs as one `compare` (its
// combinations x repeats), and the table sets, per program and combination,
// its elapsed and system time with intervals and its NUMA counters beside
// its HARD_BIND and INVERSE_BIND references (the scenarios named
// <program>_HARD_BIND and <program>_INVERSE_BIND), with the fraction of the
// gap between them that the program's placement closes.
#pragma once

#include <string>
#include <vector>

#include "report/compare.h"

namespace mmsim::report {

// `options.scenario` and `options.metric` are ignored: each of `scenarios`
// runs in turn, measured by its elapsed time. Every scenario and
// combination is checked before anything runs.
CompareReport compare_suite(const CompareOptions& options,
                            const std::vector<std::string>& scenarios);

// (inverse - x) / (inverse - hard) in %: 100 when x matches HARD_BIND, 0
// when it matches INVERSE_BIND, negative when worse than INVERSE_BIND. None
// when the references do not differ.
std::optional<double> gap_closed_pct(double x, double hard, double inverse);

}  // namespace mmsim::report
