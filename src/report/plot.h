// Figures with gnuplot from the JSON of `mmsim run` or `mmsim compare`, as
// mmtests' reports draw them: a run's counter timeline (pages in use per node,
// hinting faults and migrations, reclaim and tiering, tasks in D) and its
// tasks' time split; a compare's throughput per combination with its 95%
// interval, beside the counters. Each figure is written as PNG and SVG, with
// the gnuplot script and data that made it.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace mmsim::report {

struct PlotResult {
  int exit_code = 0;                 // 0 ok, 2 bad input, 3 gnuplot failed or is missing
  std::vector<std::string> figures;  // the files written
};

// Draws the figures of `doc` (a run's or a compare's JSON) into `dir`.
PlotResult plot(const nlohmann::ordered_json& doc, const std::string& dir, std::ostream& err);

}  // namespace mmsim::report
