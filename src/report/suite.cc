#include "report/suite.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>

namespace mmsim::report {

namespace {

using nlohmann::ordered_json;

constexpr std::string_view kHard = "_HARD_BIND";
constexpr std::string_view kInverse = "_INVERSE_BIND";

// The NUMA balancing counters each program shows (mmtests' "AutoNUMA cost"
// inputs), in this order.
constexpr std::array<const char*, 4> kCounters = {"numa_pte_updates", "numa_hint_faults",
                                                  "numa_hint_faults_local", "numa_pages_migrated"};

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// One scenario's values in one combination, over its runs.
struct Cell {
  Sample elapsed, sys, user;
  std::array<Sample, kCounters.size()> counters;
};

// "mean +-half" (the 95% interval of the mean) or the mean alone with one run.
std::string with_interval(const Sample& s, int decimals) {
  if (s.n < 2) return fmt::format("{:.{}f}", s.mean, decimals);
  const double half =
      t_quantile_975(static_cast<double>(s.n - 1)) * std::sqrt(s.var / static_cast<double>(s.n));
  return fmt::format("{:.{}f} +-{:.{}f}", s.mean, decimals, half, decimals);
}

std::string count_text(double v) { return fmt::format("{:.0f}", v); }

}  // namespace

std::optional<double> gap_closed_pct(double x, double hard, double inverse) {
  if (!(std::fabs(inverse - hard) > 0)) return std::nullopt;
  return (inverse - x) / (inverse - hard) * 100.0;
}

CompareReport compare_suite(const CompareOptions& options,
                            const std::vector<std::string>& scenarios) {
  CompareReport rep;
  std::vector<CompareOptions> each;
  for (const std::string& path : scenarios) {
    CompareOptions o = options;
    o.scenario = path;
    o.metric = "elapsed_s";
    const CompareReport check = compare_check(o);
    rep.err += check.err;
    if (check.exit_code) rep.exit_code = check.exit_code;
    each.push_back(std::move(o));
  }
  if (rep.exit_code) return rep;

  // Run them all, one scenario after another.
  std::vector<std::string> names;
  std::vector<std::vector<Cell>> cells;  // [scenario][combination]
  std::vector<std::string> headers;
  ordered_json jscenarios = ordered_json::array();
  std::string machine;
  for (const CompareOptions& o : each) {
    const CompareReport r = compare(o);
    rep.err += r.err;
    if (r.exit_code) {
      rep.exit_code = r.exit_code;
      return rep;
    }
    names.push_back(r.json.at("scenario").at("name").get<std::string>());
    std::vector<Cell> row;
    std::vector<std::string> labels;
    for (const ordered_json& c : r.json.at("combinations")) {
      std::vector<double> e, s, u;
      std::array<std::vector<double>, kCounters.size()> k;
      for (const ordered_json& run : c.at("runs")) {
        const ordered_json& m = run.at("metrics");
        e.push_back(m.at("elapsed_s").get<double>());
        s.push_back(m.at("sys_s").get<double>());
        u.push_back(m.at("user_s").get<double>());
        const ordered_json& vm = run.at("vmstat");
        for (size_t i = 0; i < kCounters.size(); ++i)
          k[i].push_back(vm.contains(kCounters[i]) ? vm.at(kCounters[i]).get<double>() : 0.0);
      }
      Cell cell{sample_of(e), sample_of(s), sample_of(u), {}};
      for (size_t i = 0; i < kCounters.size(); ++i) cell.counters[i] = sample_of(k[i]);
      row.push_back(cell);
      std::string label;
      for (const auto& [key, value] : c.at("settings").items()) {
        if (!label.empty()) label += ' ';
        label += key + "=" + value.get<std::string>();
      }
      labels.push_back(label.empty() ? "as given" : label);
    }
    if (headers.empty()) headers = labels;
    cells.push_back(std::move(row));
    jscenarios.push_back({{"name", names.back()}, {"path", o.scenario}, {"compare", r.json}});
  }

  // Programs and their references, in the order given.
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < names.size(); ++i) index.emplace(names[i], i);
  auto reference = [&](const std::string& program, std::string_view tail) -> std::optional<size_t> {
    const auto it = index.find(program + std::string(tail));
    if (it == index.end()) return std::nullopt;
    return it->second;
  };
  auto is_reference_of_listed = [&](const std::string& n) {
    for (const std::string_view tail : {kHard, kInverse}) {
      if (ends_with(n, tail) && index.count(n.substr(0, n.size() - tail.size()))) return true;
    }
    return false;
  };

  std::vector<Row> rows;
  ordered_json jprograms = ordered_json::array();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (is_reference_of_listed(name)) continue;
    const std::optional<size_t> hard = reference(name, kHard);
    const std::optional<size_t> inverse = reference(name, kInverse);
    rows.push_back({name, std::vector<std::string>(headers.size())});
    auto add = [&](const std::string& label, auto text_of) {
      Row r{"  " + label, {}};
      for (size_t c = 0; c < headers.size(); ++c) r.cells.push_back(text_of(c));
      rows.push_back(std::move(r));
    };
    add("Elapsed s", [&](size_t c) { return with_interval(cells[i][c].elapsed, 2); });
    add("System s", [&](size_t c) { return with_interval(cells[i][c].sys, 2); });
    add("User s", [&](size_t c) { return with_interval(cells[i][c].user, 1); });
    for (size_t k = 0; k < kCounters.size(); ++k)
      add(kCounters[k], [&](size_t c) { return count_text(cells[i][c].counters[k].mean); });
    if (hard)
      add("HARD_BIND elapsed s",
          [&](size_t c) { return with_interval(cells[*hard][c].elapsed, 2); });
    if (inverse)
      add("INVERSE_BIND elapsed s",
          [&](size_t c) { return with_interval(cells[*inverse][c].elapsed, 2); });
    ordered_json jgap = ordered_json::array();
    if (hard && inverse) {
      add("gap closed %", [&](size_t c) -> std::string {
        const auto g = gap_closed_pct(cells[i][c].elapsed.mean, cells[*hard][c].elapsed.mean,
                                      cells[*inverse][c].elapsed.mean);
        return g ? fmt::format("{:.1f}", *g) : "n/a";
      });
      for (size_t c = 0; c < headers.size(); ++c) {
        const auto g = gap_closed_pct(cells[i][c].elapsed.mean, cells[*hard][c].elapsed.mean,
                                      cells[*inverse][c].elapsed.mean);
        jgap.push_back(g ? ordered_json(*g) : ordered_json(nullptr));
      }
    }
    jprograms.push_back(
        {{"name", name},
         {"hard_bind", hard ? ordered_json(names[*hard]) : ordered_json(nullptr)},
         {"inverse_bind", inverse ? ordered_json(names[*inverse]) : ordered_json(nullptr)},
         {"gap_closed_pct", jgap}});
  }

  rep.out += fmt::format("compare suite: {} scenario(s) x {} combination(s) x {} run(s)\n",
                         names.size(), headers.size(), options.repeat);
  rep.out += "\n" + format_table(headers, rows) + "\n";
  rep.out +=
      "Means over the runs; +-: half the 95% interval of the mean (Student's t; none with one\n"
      "run). gap closed: (INVERSE_BIND - program) / (INVERSE_BIND - HARD_BIND) of the elapsed\n"
      "times, in %: 100 is the hard-bound placement, 0 the inverse, below 0 worse than it.\n";
  rep.json = {{"suite", jscenarios}, {"programs", jprograms}, {"repeat", options.repeat}};
  return rep;
}

}  // namespace mmsim::report
