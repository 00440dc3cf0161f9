#include "report/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "report/compare.h"
#include "report/report.h"

namespace mmsim::report {

namespace {

using nlohmann::ordered_json;

// A data file's string column: quoted, as gnuplot reads it.
std::string q(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? '\'' : c;
  return out + "\"";
}

double num(const ordered_json& o, const char* key) {
  return o.contains(key) && o.at(key).is_number() ? o.at(key).get<double>() : 0.0;
}

// Text inside a gnuplot single-quoted string ('' stands for ').
std::string gq(const std::string& s) {
  std::string out;
  for (const char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out;
}

// A shell word: single-quoted.
std::string sh(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The script draws `body` twice: to NAME.png and to NAME.svg.
std::string script(const std::string& name, const std::string& size, const std::string& body) {
  return fmt::format(
      "set terminal pngcairo noenhanced size {0} font 'DejaVu Sans,10'\n"
      "set output '{1}.png'\n{2}"
      "set terminal svg noenhanced size {0} dynamic font 'DejaVu Sans,10'\n"
      "set output '{1}.svg'\n{2}",
      size, name, body);
}

// The counter timeline: 2 x 2 panels from the run's timeline samples.
std::string timeline_figure(const ordered_json& run, std::ostringstream& data) {
  const auto& tl = run.at("timeline");
  size_t nodes = 0;
  for (const auto& s : tl)
    if (s.contains("node_used_pages")) nodes = std::max(nodes, s.at("node_used_pages").size());
  // Per-second rates over each interval, from the cumulative counters.
  static constexpr const char* kRates[] = {
      "numa_hint_faults", "numa_pages_migrated",     "pgmigrate_fail",
      "pgscan_kswapd",    "pgsteal_kswapd",          "pgpromote_success",
      "pgdemote_kswapd",  "workingset_refault_file", "numa_pte_updates"};
  data << "# t_s";
  for (size_t n = 0; n < nodes; ++n) data << " node" << n << "_MiB";
  for (const char* r : kRates) data << " " << r << "_per_s";
  data << " tasks_in_d\n";
  ordered_json prev = ordered_json::object();
  double prev_t = 0;
  for (const auto& s : tl) {
    const double t = num(s, "t_s");
    const double dt = t - prev_t > 0 ? t - prev_t : 1;
    data << fmt::format("{:.6f}", t);
    for (size_t n = 0; n < nodes; ++n) {
      const double pages = s.contains("node_used_pages") && n < s.at("node_used_pages").size()
                               ? s.at("node_used_pages")[n].get<double>()
                               : 0;
      data << fmt::format(" {:.3f}", pages * 4096 / (1 << 20));
    }
    for (const char* r : kRates) data << fmt::format(" {:.6g}", (num(s, r) - num(prev, r)) / dt);
    data << " " << num(s, "tasks_in_d") << "\n";
    prev = s;
    prev_t = t;
  }
  auto col = [&](const char* rate) {
    for (size_t i = 0; i < std::size(kRates); ++i)
      if (std::string(rate) == kRates[i]) return 2 + nodes + i;
    return size_t{0};
  };
  auto lines = [&](std::initializer_list<const char*> rates) {
    std::string p;
    for (const char* r : rates)
      p += fmt::format("{}'timeline.dat' using 1:{} with lines lw 2 title '{}'",
                       p.empty() ? "" : ", ", col(r), r);
    return p;
  };
  std::string nodes_plot;
  for (size_t n = 0; n < nodes; ++n)
    nodes_plot += fmt::format("{}'timeline.dat' using 1:{} with lines lw 2 title 'node {}'",
                              n ? ", " : "", 2 + n, n);
  const std::string name = gq(run.at("scenario").value("name", "run"));
  return fmt::format(
      "set multiplot layout 2,2 title '{} (seed {}): counters per sample interval'\n"
      "set grid\nset key top right\nset xlabel 'simulated time (s)'\n"
      "set ylabel 'MiB in use'\nset title 'Pages in use per node'\nplot {}\n"
      "set ylabel 'events per second'\nset title 'NUMA balancing'\nplot {}\n"
      "set ylabel 'pages per second'\nset title 'Reclaim and tiering'\nplot {}\n"
      "set ylabel 'tasks'\nset title 'Tasks in D state (at the sample)'\n"
      "plot 'timeline.dat' using 1:{} with steps lw 2 title 'tasks_in_d'\n"
      "unset multiplot\n",
      name, run.value("seed", 0), nodes ? nodes_plot : "0 notitle",
      lines({"numa_hint_faults", "numa_pages_migrated", "pgmigrate_fail"}),
      lines({"pgscan_kswapd", "pgsteal_kswapd", "pgpromote_success", "pgdemote_kswapd",
             "workingset_refault_file"}),
      2 + nodes + std::size(kRates));
}

// Each task's time split (or each program's, per task, past 32 tasks).
std::string tasks_figure(const ordered_json& run, std::ostringstream& data) {
  static constexpr const char* kParts[] = {"user_s", "sys_s", "iowait_s", "wait_s", "sleep_s"};
  const auto& tasks = run.at("tasks");
  data << "# who user_s sys_s iowait_s wait_s sleep_s\n";
  if (tasks.size() <= 32) {
    for (const auto& t : tasks) {
      data << q(fmt::format("{} {}", t.value("comm", ""), t.value("pid", 0)));
      for (const char* p : kParts) data << fmt::format(" {:.6f}", num(t, p));
      data << "\n";
    }
  } else {
    std::map<std::string, std::pair<size_t, std::array<double, 5>>> by;
    std::vector<std::string> order;
    for (const auto& t : tasks) {
      const std::string comm = t.value("comm", "");
      auto [it, fresh] = by.try_emplace(comm);
      if (fresh) order.push_back(comm);
      ++it->second.first;
      for (size_t i = 0; i < 5; ++i) it->second.second[i] += num(t, kParts[i]);
    }
    for (const auto& comm : order) {
      const auto& [n, sums] = by.at(comm);
      data << q(fmt::format("{} (mean of {})", comm, n));
      for (const double v : sums) data << fmt::format(" {:.6f}", v / static_cast<double>(n));
      data << "\n";
    }
  }
  const std::string name = gq(run.at("scenario").value("name", "run"));
  return fmt::format(
      "set title '{}: where the time of each task went'\nset grid ytics\n"
      "set style data histograms\nset style histogram rowstacked\n"
      "set style fill solid 0.8 border -1\nset boxwidth 0.7\nset key outside right\n"
      "set ylabel 'seconds (simulated)'\nset xtics rotate by -35\n"
      "plot 'tasks.dat' using 2:xtic(1) title 'user', '' using 3 title 'sys', "
      "'' using 4 title 'D (iowait)', '' using 5 title 'runnable (wait)', "
      "'' using 6 title 'sleeping'\n",
      name);
}

// A compare: the throughput metric per combination with its 95% interval,
// and the counters beside it.
std::string compare_figure(const ordered_json& cmp, std::ostringstream& data) {
  const std::string metric = cmp.at("metric");
  data << "# combination metric_mean metric_ci95_half numa_hint_faults numa_pages_migrated sys_s\n";
  for (const auto& c : cmp.at("combinations")) {
    std::string label;
    for (const auto& [k, v] : c.at("settings").items()) {
      const auto dot = k.rfind('.');
      if (!label.empty()) label += ' ';
      label += k.substr(dot == std::string::npos ? 0 : dot + 1);
      label += '=';
      label += v.is_string() ? v.get<std::string>() : v.dump();
    }
    if (label.empty()) label = "as given";
    std::vector<double> values;
    for (const auto& r : c.at("runs")) values.push_back(num(r.at("metrics"), metric.c_str()));
    const Sample s = sample_of(values);
    const double half =
        s.n > 1 ? t_quantile_975(static_cast<double>(s.n - 1)) * std::sqrt(s.var / s.n) : 0;
    const auto& mean = c.at("mean");
    data << fmt::format("{} {:.9g} {:.9g} {:.9g} {:.9g} {:.9g}\n", q(label), s.mean, half,
                        num(mean, "numa_hint_faults"), num(mean, "numa_pages_migrated"),
                        num(mean, "sys_s"));
  }
  const std::string name = gq(cmp.at("scenario").value("name", "compare"));
  const uint64_t repeat = cmp.value("repeat", 1);
  auto bars = [](const char* title, const char* ylabel, int column, bool errors) {
    return fmt::format(
        "set title '{2}'\nset ylabel '{3}'\nset style data histograms\n"
        "set style histogram {4}\nset style fill solid 0.7 border -1\nset boxwidth 0.7\n"
        "set yrange [0:*]\nplot 'compare.dat' using {0}{1}:xtic(1) notitle lc rgb '#4477aa', "
        "'' using ($0):{0}:(sprintf('%.4g', ${0})) with labels offset 0,0.8 notitle\n",
        column, errors ? ":3" : "", title, ylabel,
        errors ? "errorbars gap 1 lw 1.5" : "clustered gap 1");
  };
  return fmt::format(
      "set multiplot layout 1,3 title '{}: {} run(s) per combination, means; error bars: 95% "
      "interval of the mean'\nset grid ytics\nset xtics rotate by -30\n{}{}{}unset multiplot\n",
      name, repeat, bars(("throughput: " + metric).c_str(), metric.c_str(), 2, repeat > 1),
      bars("NUMA hinting faults", "numa_hint_faults", 4, false),
      bars("kernel time", "sys seconds", 6, false));
}

}  // namespace

PlotResult plot(const ordered_json& doc, const std::string& dir, std::ostream& err) {
  PlotResult res;
  const bool is_compare = doc.is_object() && doc.contains("combinations");
  const bool is_run = doc.is_object() && doc.contains("tasks") && doc.contains("scenario");
  if (!is_compare && !is_run) {
    err << "mmsim: error: plot: not the JSON of mmsim run or mmsim compare\n";
    res.exit_code = 2;
    return res;
  }
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    err << "mmsim: error: plot: gnuplot is missing (apt-get install gnuplot-nox)\n";
    res.exit_code = 3;
    return res;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << fmt::format("mmsim: error: plot: {}: {}\n", dir, ec.message());
    res.exit_code = 3;
    return res;
  }
  std::vector<std::tuple<std::string, std::string, std::string, std::string>> figures;
  if (is_compare) {
    std::ostringstream d;
    const std::string body = compare_figure(doc, d);
    figures.emplace_back("compare", "1500,600", body, d.str());
  } else {
    if (doc.contains("timeline") && !doc.at("timeline").empty()) {
      std::ostringstream d;
      const std::string body = timeline_figure(doc, d);
      figures.emplace_back("timeline", "1400,900", body, d.str());
    } else {
      err << "mmsim: warning: plot: the run has no timeline (scenario.sample_interval is 0)\n";
    }
    std::ostringstream d;
    const std::string body = tasks_figure(doc, d);
    figures.emplace_back("tasks", "1200,650", body, d.str());
  }
  for (const auto& fig : figures) {
    const std::string& name = std::get<0>(fig);
    const std::string& size = std::get<1>(fig);
    const std::string& body = std::get<2>(fig);
    const std::string& data = std::get<3>(fig);
    const auto file = [&](const char* ext) { return fmt::format("{}/{}{}", dir, name, ext); };
    if (!write_atomically(file(".dat"), data, err) ||
        !write_atomically(file(".gp"), script(name, size, body), err)) {
      res.exit_code = 3;
      return res;
    }
    const std::string cmd =
        fmt::format("cd {} && gnuplot {}.gp 2>{}.gnuplot.log", sh(dir), name, name);
    if (std::system(cmd.c_str()) != 0) {
      err << fmt::format("mmsim: error: plot: gnuplot failed on {}/{}.gp (see {}.gnuplot.log)\n",
                         dir, name, name);
      res.exit_code = 3;
      return res;
    }
    std::filesystem::remove(file(".gnuplot.log"), ec);
    res.figures.push_back(file(".png"));
    res.figures.push_back(file(".svg"));
  }
  return res;
}

}  // namespace mmsim::report
