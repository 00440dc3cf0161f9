// CSV views of a run's and a compare's JSON, for pandas, R or a spreadsheet:
// one header line of column names (the JSON's keys, nested ones joined by
// '.', so vmstat and metric columns keep the kernel's counter names), one
// row per task, timeline sample or run, RFC 4180 quoting.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mmsim::report {

// One row per object: a column per leaf value, in the order the leaves first
// appear; a row without a column leaves its cell empty. Numbers as JSON
// writes them (the shortest text that reads back the same), strings quoted
// when they hold a comma, a quote or a line break, null empty.
std::string csv_table(const std::vector<nlohmann::ordered_json>& rows);

// `mmsim run --csv`: the run's tasks (run_json's "tasks"), and its timeline
// (one row per sample) for the second file.
std::string run_tasks_csv(const nlohmann::ordered_json& run);
std::string run_timeline_csv(const nlohmann::ordered_json& run);
// Where the timeline goes: FILE.csv -> FILE.timeline.csv (else FILE.timeline.csv
// after the whole name).
std::string timeline_csv_path(const std::string& csv_path);

// `mmsim compare --csv`: one row per run: the combination's varied settings,
// the seed, the metrics and every vmstat counter.
std::string compare_runs_csv(const nlohmann::ordered_json& compare);

}  // namespace mmsim::report
