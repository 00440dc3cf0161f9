#include "report/csv.h"

#include <map>
#include <utility>

namespace mmsim::report {

namespace {

using nlohmann::ordered_json;

// Adds the leaves of `v` under `prefix` to `row`. An array of objects that
// each name a node is keyed by it (numa_faults: node0, node1 ...), other
// arrays by index.
void flatten(const ordered_json& v, const std::string& prefix,
             std::vector<std::pair<std::string, const ordered_json*>>& row) {
  auto join = [&](const std::string& key) { return prefix.empty() ? key : prefix + "." + key; };
  if (v.is_object()) {
    for (const auto& [key, value] : v.items()) flatten(value, join(key), row);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const ordered_json& e = v[i];
      const bool by_node = e.is_object() && e.contains("node") && e.at("node").is_number();
      const std::string key = by_node ? "node" + e.at("node").dump() : std::to_string(i);
      if (!by_node) {
        flatten(e, join(key), row);
        continue;
      }
      for (const auto& [k, value] : e.items()) {
        if (k != "node") flatten(value, join(key) + "." + k, row);
      }
    }
  } else {
    row.emplace_back(prefix, &v);
  }
}

std::string cell(const ordered_json& v) {
  if (v.is_null()) return "";
  if (!v.is_string()) return v.dump();
  const std::string& s = v.get_ref<const std::string&>();
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string quote_name(const std::string& name) { return cell(ordered_json(name)); }

}  // namespace

std::string csv_table(const std::vector<ordered_json>& rows) {
  std::vector<std::string> columns;
  std::map<std::string, size_t> column_of;
  std::vector<std::vector<std::pair<std::string, const ordered_json*>>> flat(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    flatten(rows[r], "", flat[r]);
    for (const auto& [name, value] : flat[r]) {
      if (column_of.emplace(name, columns.size()).second) columns.push_back(name);
    }
  }
  std::string out;
  for (size_t c = 0; c < columns.size(); ++c) {
    if (c) out += ',';
    out += quote_name(columns[c]);
  }
  out += '\n';
  for (const auto& row : flat) {
    std::vector<std::string> cells(columns.size());
    for (const auto& [name, value] : row) cells[column_of.at(name)] = cell(*value);
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) out += ',';
      out += cells[c];
    }
    out += '\n';
  }
  return out;
}

std::string run_tasks_csv(const ordered_json& run) {
  std::vector<ordered_json> rows;
  for (const auto& t : run.at("tasks")) rows.push_back(t);
  return csv_table(rows);
}

std::string run_timeline_csv(const ordered_json& run) {
  std::vector<ordered_json> rows;
  if (run.contains("timeline")) {
    for (const auto& s : run.at("timeline")) rows.push_back(s);
  }
  return csv_table(rows);
}

std::string timeline_csv_path(const std::string& csv_path) {
  const std::string ext = ".csv";
  if (csv_path.size() > ext.size() && csv_path.ends_with(ext))
    return csv_path.substr(0, csv_path.size() - ext.size()) + ".timeline.csv";
  return csv_path + ".timeline.csv";
}

std::string compare_runs_csv(const ordered_json& compare) {
  std::vector<ordered_json> rows;
  for (const auto& c : compare.at("combinations")) {
    for (const auto& r : c.at("runs")) {
      ordered_json row = ordered_json::object();
      for (const auto& [key, value] : c.at("settings").items()) row[key] = value;
      row["seed"] = r.at("seed");
      for (const auto& [key, value] : r.at("metrics").items()) row[key] = value;
      for (const auto& [key, value] : r.at("vmstat").items())
        row[row.contains(key) ? "vmstat." + key : key] = value;  // a counter named like one
      rows.push_back(std::move(row));
    }
  }
  return csv_table(rows);
}

}  // namespace mmsim::report
