// Scenario loading: TOML parse, --set overrides, validation of every key, and
// kernel-version presets. Unknown keys are errors, never ignored.
#include "scenario/scenario.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "util/units.h"

namespace mmsim::scenario {

namespace {

// Control characters of user text, escaped so that a diagnostic stays one
// line and cannot drive the terminal.
std::string one_line(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

std::string Diagnostic::str() const {
  return fmt::format("{}:{}:{}: error: {}: {}", one_line(file), line, col, one_line(key),
                     one_line(message));
}

namespace {

// A scenario or profile file's text, or nullopt with the reason in *why.
// Files larger than this are not scenarios.
constexpr uintmax_t kMaxScenarioBytes = uintmax_t{64} << 20;

std::optional<std::string> read_text_file(const std::string& path, std::string* why) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec) {
    *why = "cannot open the file: " + ec.message();
    return std::nullopt;
  }
  if (std::filesystem::is_directory(status)) {
    *why = "is a directory, not a file";
    return std::nullopt;
  }
  if (std::filesystem::is_regular_file(status) &&
      std::filesystem::file_size(path, ec) > kMaxScenarioBytes) {
    *why = "is larger than 64 MiB: not a scenario";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = std::string("cannot open the file: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxScenarioBytes) {
      *why = "is larger than 64 MiB: not a scenario";
      return std::nullopt;
    }
  }
  if (in.bad()) {
    *why = "cannot read the file";
    return std::nullopt;
  }
  return text;
}

using workload::Op;
using workload::OpKind;

// Where diagnostics go, and the names that ops refer to.
struct Ctx {
  std::string file;
  std::vector<Diagnostic>* diags;
  // Keys set by --set: (key path, where to point, column of the value).
  std::vector<std::tuple<std::string, std::string, uint32_t>> overridden;
  // "programs.main[0].region" as --set spells it: "programs.main.0.region".
  static std::string dotted(const std::string& key) {
    std::string norm = key;
    for (auto& ch : norm) ch = (ch == '[' || ch == ']') ? '.' : ch;
    std::string nk;
    for (size_t i = 0; i < norm.size(); ++i)
      if (!(norm[i] == '.' && (i + 1 == norm.size() || norm[i + 1] == '.'))) nk += norm[i];
    return nk;
  }
  // The text after '=' of the --set that gave `key` its value, if one did.
  std::optional<std::string> override_text(const std::string& key) const {
    const std::string nk = dotted(key);
    std::optional<std::string> text;
    for (const auto& [k, arg, col] : overridden)
      if (k == nk) text = arg.substr(col - 1 + 6);  // col is 1-based within arg, after "--set "
    return text;
  }
  void error(const toml::source_region& where, const std::string& key, const std::string& msg) {
    Diagnostic d;
    d.file = where.path && !where.path->empty() ? *where.path : file;
    d.line = where.begin.line ? where.begin.line : 1;
    d.col = where.begin.column ? where.begin.column : 1;
    for (const auto& [k, arg, col] : overridden) {
      // A key set on the command line, or one inside a table set there.
      // (or a table the --set made on its way to its key).
      const std::string nk = dotted(key);
      if (nk == k || nk.starts_with(k + ".") || k.starts_with(nk + ".")) {
        d.file = arg;
        d.line = 1;
        d.col = col;
      }
    }
    d.key = key;
    d.message = msg;
    diags->push_back(std::move(d));
  }
};

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    default:
      return "a date or time";
  }
}

// Reads the keys of one table, each at most once, and reports the rest as unknown.
class TableReader {
 public:
  TableReader(const toml::table& t, std::string prefix, Ctx& ctx)
      : t_(t), prefix_(std::move(prefix)), ctx_(ctx) {}

  std::string path(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }
  const toml::node* get(const std::string& key) {
    known_.push_back(key);
    return t_.get(key);
  }
  void error(const toml::node* n, const std::string& key, const std::string& msg) {
    ctx_.error(n ? n->source() : t_.source(), path(key), msg);
  }
  void missing(const std::string& key) { error(nullptr, key, "missing required key"); }

  std::optional<std::string> string(const std::string& key) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    if (!n->is_string()) {
      // --set kernel.version=3.10 means the string "3.10", not the float 3.1.
      if (auto text = ctx_.override_text(path(key))) return *text;
      error(n, key, fmt::format("expected a string, got {}", type_name(*n)));
      return std::nullopt;
    }
    return n->as_string()->get();
  }
  // A string of two words: false for `off`, true for `on`; else an error
  // naming both with what they mean.
  std::optional<bool> either(const std::string& key, std::string_view off, std::string_view off_doc,
                             std::string_view on, std::string_view on_doc) {
    const std::optional<std::string> v = string(key);
    if (!v) return std::nullopt;
    if (*v == off) return false;
    if (*v == on) return true;
    error(get(key), key,
          fmt::format("\"{}\": expected \"{}\" ({}) or \"{}\" ({})", *v, off, off_doc, on, on_doc));
    return std::nullopt;
  }
  std::optional<bool> boolean(const std::string& key) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    if (n->is_boolean()) return n->as_boolean()->get();
    if (n->is_string()) {
      const std::string s = n->as_string()->get();
      if (s == "on" || s == "true") return true;
      if (s == "off" || s == "false") return false;
    }
    error(n, key, fmt::format("expected a boolean (true/false, on/off), got {}", type_name(*n)));
    return std::nullopt;
  }
  std::optional<int64_t> integer(const std::string& key, int64_t lo, int64_t hi) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    if (!n->is_integer()) {
      error(n, key, fmt::format("expected an integer, got {}", type_name(*n)));
      return std::nullopt;
    }
    const int64_t v = n->as_integer()->get();
    if (v < lo || v > hi) {
      error(n, key, fmt::format("{} is out of range [{}, {}]", v, lo, hi));
      return std::nullopt;
    }
    return v;
  }
  std::optional<double> number(const std::string& key, double lo, double hi) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    double v;
    if (n->is_integer()) {
      v = static_cast<double>(n->as_integer()->get());
    } else if (n->is_floating_point()) {
      v = n->as_floating_point()->get();
    } else {
      error(n, key, fmt::format("expected a number, got {}", type_name(*n)));
      return std::nullopt;
    }
    if (!(v >= lo && v <= hi)) {
      error(n, key, fmt::format("{} is out of range [{}, {}]", v, lo, hi));
      return std::nullopt;
    }
    return v;
  }
  // An integer of bytes or a string with a unit ("4MiB", "1GB"; util/units.h).
  std::optional<uint64_t> size(const std::string& key) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    if (n->is_integer() && n->as_integer()->get() >= 0) {
      return static_cast<uint64_t>(n->as_integer()->get());
    }
    std::string why;
    if (n->is_string()) {
      if (auto bytes = util::parse_size(n->as_string()->get(), &why)) return bytes;
      error(n, key, why + " (a size is bytes, or a string like \"4KiB\", \"4MiB\", \"1GB\")");
    } else if (n->is_integer()) {
      error(n, key, fmt::format("{} is negative; a size is at least 0", n->as_integer()->get()));
    } else {
      error(n, key, fmt::format("expected a size, got {}", type_name(*n)));
    }
    return std::nullopt;
  }
  // Whether a duration's value, as written, is above zero.
  static bool positive(const toml::node& n) {
    if (n.is_floating_point()) return n.as_floating_point()->get() > 0;
    if (n.is_integer()) return n.as_integer()->get() > 0;
    const std::string& s = n.as_string()->get();
    return std::any_of(s.begin(), s.end(), [](char c) { return c >= '1' && c <= '9'; });
  }
  // A string with a unit ("10s", "5ms") or a number of seconds.
  std::optional<int64_t> duration(const std::string& key) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    std::string why;
    std::optional<int64_t> ns;
    if (n->is_integer()) {
      ns = util::seconds_to_ns(static_cast<double>(n->as_integer()->get()), &why);
    } else if (n->is_floating_point()) {
      ns = util::seconds_to_ns(n->as_floating_point()->get(), &why);
    } else if (n->is_string()) {
      ns = util::parse_duration(n->as_string()->get(), &why);
    } else {
      why = fmt::format("expected a duration, got {}", type_name(*n));
    }
    if (ns && *ns == 0 && positive(*n)) {
      error(n, key, "rounds to 0 ns (the clock counts whole nanoseconds)");
      return std::nullopt;
    }
    if (ns && *ns > workload::kMaxDurationNs) {
      error(n, key,
            fmt::format("{} ns is longer than the longest duration mmsim simulates, 2^62 ns "
                        "(about 146 years)",
                        *ns));
      return std::nullopt;
    }
    if (ns) return ns;
    error(n, key, why + " (a duration is seconds, or a string like \"10s\", \"5ms\", \"100us\")");
    return std::nullopt;
  }
  // A switch's value: a boolean, one of its words, or an integer it allows.
  std::optional<int64_t> switch_value(const SwitchInfo& sw) {
    const std::string key(sw.key);
    if (sw.kind == SwitchKind::kBool) {
      if (auto b = boolean(key)) return *b ? 1 : 0;
      return std::nullopt;
    }
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    std::vector<std::string> words;
    for (const auto& w : sw.words) words.emplace_back(w.word);
    const std::string known = fmt::format("{}", fmt::join(words, ", "));
    if (sw.kind == SwitchKind::kInt && n->is_integer()) {
      const int64_t v = n->as_integer()->get();
      if (const std::string why = sw.check(v); !why.empty()) {
        error(n, key, why);
        return std::nullopt;
      }
      return v;
    }
    if (sw.kind == SwitchKind::kInt && !n->is_string()) {
      error(n, key,
            fmt::format("expected an integer{}, got {}", words.empty() ? "" : " or one of " + known,
                        type_name(*n)));
      return std::nullopt;
    }
    // A word; --set kernel.x=3.13 means the string "3.13", not a float.
    std::optional<std::string> word;
    if (n->is_string()) {
      word = n->as_string()->get();
    } else if (auto text = ctx_.override_text(path(key))) {
      word = *text;
    } else {
      error(n, key, fmt::format("expected one of {}, got {}", known, type_name(*n)));
      return std::nullopt;
    }
    if (auto v = sw.from_word(*word)) return v;
    if (sw.kind == SwitchKind::kInt) {
      error(n, key,
            fmt::format("expected an integer{}, got \"{}\"",
                        words.empty() ? "" : " or one of " + known, *word));
    } else {
      error(n, key, fmt::format("unknown value \"{}\" (known: {})", *word, known));
    }
    return std::nullopt;
  }
  // One of the given words.
  std::optional<std::string> choice(const std::string& key, std::vector<std::string> words) {
    auto s = string(key);
    if (!s) return std::nullopt;
    if (std::find(words.begin(), words.end(), *s) == words.end()) {
      error(t_.get(key), key,
            fmt::format("unknown value \"{}\" (known: {})", *s, fmt::join(words, ", ")));
      return std::nullopt;
    }
    return s;
  }
  const toml::table* table(const std::string& key) {
    const toml::node* n = get(key);
    if (!n) return nullptr;
    if (!n->is_table()) {
      error(n, key, fmt::format("expected a table, got {}", type_name(*n)));
      return nullptr;
    }
    return n->as_table();
  }
  void finish() {
    for (auto&& [k, v] : t_) {
      const std::string key(k.str());
      if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
      std::vector<std::string> known = known_;
      std::sort(known.begin(), known.end());
      known.erase(std::unique(known.begin(), known.end()), known.end());
      ctx_.error(k.source().begin.line ? k.source() : v.source(), path(key),
                 fmt::format("unknown key (known: {})", fmt::join(known, ", ")));
    }
  }
  const toml::table& raw() const { return t_; }

 private:
  const toml::table& t_;
  std::string prefix_;
  Ctx& ctx_;
  std::vector<std::string> known_;
};

// Names that ops use, resolved to ids after every program is read.
struct Names {
  std::map<std::string, uint32_t> programs;
  std::map<std::string, uint32_t> regions;
  std::map<std::string, uint32_t> counters;
  std::map<std::string, uint32_t> files;
  std::set<uint32_t> mapped_regions;
  std::map<uint32_t, std::vector<uint32_t>> forks;  // program -> programs it starts
  struct Ref {
    std::string name;
    toml::source_region where;
    std::string key;
    uint32_t program;
  };
  std::vector<Ref> program_refs;
  std::vector<std::pair<uint32_t, Ref>> region_refs;
  std::map<uint32_t, uint64_t> region_pages;  // the largest mapping of each region
  struct RangeRef {
    uint32_t region;
    uint64_t first_page;
    uint64_t nr_pages;  // 0: to the end
    toml::source_region where;
    std::string key;
  };
  std::vector<RangeRef> range_refs;  // sub-ranges of regions (offset, size)
  // The region maps and uses of every program, in program order.
  struct Step {
    uint32_t program;
    enum Kind { kMap, kUse, kThreads } kind;
    uint32_t region;
    toml::source_region where;
    std::string key;
  };
  std::vector<Step> steps;
  uint32_t region(const std::string& n) {
    auto [it, inserted] = regions.emplace(n, static_cast<uint32_t>(regions.size()));
    return it->second;
  }
  uint32_t counter(const std::string& n) {
    auto [it, inserted] = counters.emplace(n, static_cast<uint32_t>(counters.size()));
    return it->second;
  }
};

const std::vector<std::string> kOpNames = {"map",   "unmap", "fork",   "threads", "wait",
                                           "loop",  "sweep", "touch",  "madvise", "mlock",
                                           "sleep", "count", "cgroup", "pin",     "mempolicy"};

// What is wrong with the name of a program, region, counter or file, or "":
// names show up in summaries, tables and JSON keys, so they are short and
// plain.
std::string name_problem(const std::string& name) {
  if (name.empty()) return "a name may not be empty";
  if (name.size() > 64) return "a name may be 64 characters at the most";
  for (const char ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.' &&
        ch != '+')
      return fmt::format("\"{}\": a name may hold only letters, digits and _ - . +", name);
  }
  return "";
}

// What is wrong with a [[cgroups]] path, or "": absolute, no empty, "." or
// ".." component, no control character, each name at most NAME_MAX (255)
// bytes, and its parent made first (mkdir of /a/b fails with ENOENT when /a
// does not exist).
std::string cgroup_path_problem(const std::string& path,
                                const std::vector<memcg::CgroupSpec>& made) {
  const std::string shown = fmt::format("\"{}\"", path);
  for (const char ch : path) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f)
      return fmt::format("a cgroup path may not hold control characters (byte 0x{:02x})", u);
  }
  if (path.size() < 2 || path[0] != '/' || path.back() == '/')
    return shown + " is not a cgroup path like \"/bench\" or \"/bench/a\"";
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string name = path.substr(start, end - start);
    if (name.empty()) return shown + " has an empty name between two slashes";
    if (name == "." || name == "..") return shown + " may not name \".\" or \"..\"";
    if (name.size() > 255) return shown + " has a name longer than 255 bytes (NAME_MAX)";
    start = end + 1;
  }
  const std::string parent = path.substr(0, path.rfind('/'));
  if (!parent.empty() &&
      std::none_of(made.begin(), made.end(), [&](const auto& c) { return c.path == parent; })) {
    return fmt::format(
        "{}: its parent \"{}\" is not an earlier [[cgroups]] entry (mkdir would fail with "
        "ENOENT)",
        shown, parent);
  }
  return "";
}

// A cgroup path as the id World uses (0 is the root "/").
std::optional<uint32_t> cgroup_id(const Scenario& sc, const std::string& path) {
  if (path == "/") return 0u;
  for (size_t i = 0; i < sc.cgroups.size(); ++i) {
    if (sc.cgroups[i].path == path) return static_cast<uint32_t>(i + 1);
  }
  return std::nullopt;
}

// Bytes to pages, rounding up, without wrapping near 2^64.
uint64_t bytes_to_pages(uint64_t bytes) { return bytes / kPageSize + (bytes % kPageSize != 0); }

// A task count given by the machine, as the field's benchmarks size
// themselves: "cpus" (logical CPUs), "nodes" (nodes with CPUs), either
// optionally followed by factors "/N" or "*N", N an integer, cpus or nodes
// (autonuma-benchmark's numa01 runs "cpus/2" threads in each of two
// processes; mmtests' perfnuma "cpus/nodes" in each of "nodes"). For machine.preset = "host",
// the host's, and for a native run (Scenario::counts_from_host).
std::optional<uint64_t> machine_count(TableReader& r, const Scenario& sc, const std::string& key,
                                      const toml::node& n, uint64_t hi) {
  const std::string text = n.as_string()->get();
  const auto fail = [&](const std::string& why) -> std::optional<uint64_t> {
    r.error(&n, key, fmt::format("\"{}\" {}", text, why));
    return std::nullopt;
  };
  uint64_t cpus = 0, nodes = 0;
  if (sc.host_machine || sc.counts_from_host) {
    std::string why;
    const std::optional<topo::Topology> host = topo::load_host("/sys", &why);
    if (!host) return fail("cannot be read from this host: " + why);
    cpus = host->nr_cpus();
    for (size_t i = 0; i < host->nr_nodes(); ++i)
      nodes += host->node(NodeId(static_cast<uint16_t>(i))).cpus.empty() ? 0 : 1;
  } else {
    cpus = sc.machine.nr_cpus();
    nodes = sc.machine.nr_cpu_nodes();
  }
  // cpus or nodes, then factors each applied in turn: "/" or "*" and an
  // integer, cpus or nodes ("cpus/nodes/2": half of a node's CPUs).
  size_t at = text.find_first_of("/*");
  const std::string base = text.substr(0, at);
  // An integer base too: --set gives a key that holds "cpus" a string, so
  // --set programs.main.3.count=200 arrives as "200".
  uint64_t count = 0;
  const auto [base_end, base_ec] = std::from_chars(base.data(), base.data() + base.size(), count);
  const bool integer =
      !base.empty() && base_ec == std::errc() && base_end == base.data() + base.size();
  if (!integer && base != "cpus" && base != "nodes")
    return fail(
        "is not a count: give an integer, or cpus or nodes, optionally with /N or *N (e.g. "
        "\"cpus/2\", \"cpus/nodes\")");
  if (!integer) count = base == "cpus" ? cpus : nodes;
  bool too_many = false;
  while (at != std::string::npos) {
    const char op = text[at];
    const size_t next = text.find_first_of("/*", at + 1);
    const std::string factor =
        text.substr(at + 1, next == std::string::npos ? next : next - at - 1);
    uint64_t k = 0;
    if (factor == "cpus") {
      k = cpus;
    } else if (factor == "nodes") {
      k = nodes;
    } else {
      const auto [end, ec] = std::from_chars(factor.data(), factor.data() + factor.size(), k);
      if (factor.empty() || ec != std::errc() || end != factor.data() + factor.size() || k == 0)
        return fail(fmt::format("needs a positive integer, cpus or nodes after '{}'", op));
    }
    if (op == '/') {
      count /= std::max<uint64_t>(k, 1);
    } else if (count > hi / k) {
      too_many = true;
      count = hi + 1;
    } else {
      count *= k;
    }
    at = next;
  }
  if (count < 1 || count > hi)
    return fail(fmt::format(
        "comes to {} on this machine ({} CPUs, {} nodes with CPUs): out of "
        "range [1, {}]",
        too_many ? fmt::format("more than {}", hi) : fmt::to_string(count), cpus, nodes, hi));
  return count;
}

void read_range(TableReader& r, Op& op, Names& names, bool named) {
  if (auto off = r.size("offset")) {
    if (*off % kPageSize) r.error(r.raw().get("offset"), "offset", "must be a multiple of 4096");
    op.first_page = *off / kPageSize;
  }
  if (auto sz = r.size("size")) {
    if (*sz == 0) r.error(r.raw().get("size"), "size", "must be positive");
    op.nr_pages = bytes_to_pages(*sz);
  }
  const toml::node* at = r.raw().get("size") ? r.raw().get("size") : r.raw().get("offset");
  if (named && at)
    names.range_refs.push_back({op.region, op.first_page, op.nr_pages, at->source(),
                                r.path(r.raw().get("size") ? "size" : "offset")});
}

std::optional<Op> read_op(const toml::table& t, const std::string& prefix, uint32_t program,
                          Names& names, const Scenario& sc, Ctx& ctx, int depth);

std::vector<Op> read_body(const toml::node* n, TableReader& r, uint32_t program, Names& names,
                          const Scenario& sc, Ctx& ctx, int depth) {
  std::vector<Op> body;
  const toml::array* a = n ? n->as_array() : nullptr;
  if (!a) {
    if (n) r.error(n, "body", fmt::format("expected an array of op tables, got {}", type_name(*n)));
    return body;
  }
  if (a->empty()) r.error(n, "body", "a loop needs at least one op");
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::node& e = *a->get(i);
    const std::string p =
        fmt::format("{}.body[{}]", r.path("").substr(0, r.path("").size() - 1), i);
    if (!e.is_table()) {
      ctx.error(e.source(), p, fmt::format("expected an op table, got {}", type_name(e)));
      continue;
    }
    if (auto op = read_op(*e.as_table(), p, program, names, sc, ctx, depth + 1))
      body.push_back(std::move(*op));
  }
  return body;
}

// `nodes = "own"` or `"mirror"` on a pin or a mempolicy: the task's share of
// the nodes with CPUs, by its place among the tasks its threads or fork op
// started (util::node_share), or the share of the task at the other end;
// `"all"`: every node with CPUs.
void read_node_share(TableReader& r, Op& op) {
  if (auto s = r.choice("nodes", {"own", "mirror", "all"}))
    op.node_share = *s == "own"      ? workload::NodeShare::kOwn
                    : *s == "mirror" ? workload::NodeShare::kMirror
                                     : workload::NodeShare::kAll;
}

std::optional<Op> read_op(const toml::table& t, const std::string& prefix, uint32_t program,
                          Names& names, const Scenario& sc, Ctx& ctx, int depth) {
  TableReader r(t, prefix, ctx);
  Op op;
  auto kind = r.choice("op", kOpNames);
  if (!kind) {
    if (!t.get("op")) r.missing("op");
    return std::nullopt;
  }
  const size_t before = ctx.diags->size();
  auto region_ref = [&](bool defines) -> bool {
    auto name = r.string("region");
    if (!name) {
      if (!t.get("region")) r.missing("region");
      return false;
    }
    if (const std::string why = name_problem(*name); !why.empty())
      r.error(t.get("region"), "region", why);
    op.region = names.region(*name);
    names.steps.push_back({program, defines ? Names::Step::kMap : Names::Step::kUse, op.region,
                           t.get("region")->source(), r.path("region")});
    if (defines) {
      names.mapped_regions.insert(op.region);
    } else {
      names.region_refs.push_back(
          {op.region, {*name, t.get("region")->source(), r.path("region"), program}});
    }
    return true;
  };
  auto mode = [&]() {
    if (auto m = r.choice("mode", {"read", "write"})) op.write = (*m == "write");
  };
  // A memory policy: `policy` and `nodes` (map's mbind; set_mempolicy's, where
  // the nodes may also be the task's share, "own" or "mirror").
  auto read_policy = [&](bool shares) {
    const size_t nodes = sc.host_machine ? 1024 : static_cast<size_t>(sc.machine.nr_nodes());
    if (auto pol = r.choice("policy", {"default", "bind", "preferred", "interleave"})) {
      using Mode = mm::MemPolicy::Mode;
      op.policy.mode = *pol == "bind"         ? Mode::kBind
                       : *pol == "preferred"  ? Mode::kPreferred
                       : *pol == "interleave" ? Mode::kInterleave
                                              : Mode::kDefault;
    }
    const toml::node* n = r.get("nodes");
    if (n && n->is_string() && shares) {
      read_node_share(r, op);
    } else if (n) {
      const toml::array* a = n->as_array();
      if (!a) {
        r.error(n, "nodes",
                shares ? "expected an array of node numbers, \"own\", \"mirror\" or \"all\""
                       : "expected an array of node numbers");
      } else {
        for (const auto& e : *a) {
          if (!e.is_integer() || e.as_integer()->get() < 0 ||
              static_cast<size_t>(e.as_integer()->get()) >= nodes) {
            r.error(&e, "nodes", fmt::format("not a node of this machine (0 to {})", nodes - 1));
          } else {
            op.policy.nodes.push_back(NodeId(static_cast<uint16_t>(e.as_integer()->get())));
          }
        }
      }
    }
    const bool needs_nodes = op.policy.mode != mm::MemPolicy::Mode::kDefault;
    const toml::array* given = n ? n->as_array() : nullptr;
    if (needs_nodes && op.policy.nodes.empty() && op.node_share == workload::NodeShare::kNone &&
        (!n || (given && given->empty())))
      r.error(n ? n : t.get("policy"), "nodes", "this policy needs a non-empty nodes list");
    if (!needs_nodes && n) r.error(n, "nodes", "the default policy takes no nodes");
    if (op.policy.mode == mm::MemPolicy::Mode::kPreferred &&
        (op.policy.nodes.size() > 1 || op.node_share != workload::NodeShare::kNone))
      r.error(n, "nodes", "preferred takes exactly one node");
  };
  const std::string& k = *kind;
  if (k == "map") {
    op.kind = OpKind::kMap;
    const bool named = region_ref(true);
    uint64_t file_pages = 0;
    if (auto f = r.string("file")) {
      auto it = names.files.find(*f);
      if (it == names.files.end()) {
        r.error(t.get("file"), "file", fmt::format("no [[files]] entry is named \"{}\"", *f));
      } else {
        op.file = static_cast<int32_t>(it->second);
        file_pages = sc.workload.files[it->second].pages;
      }
    }
    if (auto off = r.size("offset")) {
      if (*off % kPageSize) r.error(t.get("offset"), "offset", "must be a multiple of 4096");
      op.file_offset_pages = *off / kPageSize;
      if (op.file < 0) r.error(t.get("offset"), "offset", "only a file mapping has an offset");
    }
    if (auto sz = r.size("size")) {
      if (*sz == 0) r.error(t.get("size"), "size", "must be positive");
      if (*sz > workload::kMaxMapBytes)
        r.error(t.get("size"), "size",
                fmt::format("{} bytes is more than the {}-byte user address space of x86-64 "
                            "(TASK_SIZE_MAX): mmap would fail with ENOMEM",
                            *sz, workload::kMaxMapBytes));
      op.pages = bytes_to_pages(*sz);
    } else if (op.file >= 0) {
      op.pages = file_pages > op.file_offset_pages ? file_pages - op.file_offset_pages : 0;
      if (op.pages == 0 && t.get("offset"))
        r.error(t.get("offset"), "offset",
                fmt::format("is at or past the end of file \"{}\" ({} pages), so the mapping "
                            "would be empty (mmap of length 0 fails with EINVAL); give a size",
                            sc.workload.files[static_cast<size_t>(op.file)].name, file_pages));
    } else if (!t.get("size")) {
      r.missing("size");
    }
    if (auto prot = r.choice("prot", {"r", "rw", "rx", "rwx"})) {
      op.writable = prot->find('w') != std::string::npos;
      op.exec = prot->find('x') != std::string::npos;
    } else if (!t.get("prot")) {
      op.writable = true;
    }
    if (auto fl = r.choice("flags", {"private", "shared"})) op.shared = (*fl == "shared");
    read_policy(false);
    if (named) {
      uint64_t& largest = names.region_pages[op.region];
      largest = std::max(largest, op.pages);
    }
  } else if (k == "unmap") {
    op.kind = OpKind::kUnmap;
    if (region_ref(false)) names.steps.pop_back();  // munmap of nothing succeeds: not a use
  } else if (k == "fork" || k == "threads") {
    op.kind = k == "fork" ? OpKind::kFork : OpKind::kThreads;
    if (op.kind == OpKind::kThreads)
      names.steps.push_back({program, Names::Step::kThreads, 0, t.source(), prefix});
    constexpr int64_t kMaxTasks = 100000;
    const toml::node* cn = r.get("count");
    if (cn && cn->is_string()) {
      op.count = machine_count(r, sc, "count", *cn, kMaxTasks).value_or(1);
    } else {
      op.count = static_cast<uint64_t>(r.integer("count", 1, kMaxTasks).value_or(1));
    }
    if (auto p = r.string("program")) {
      names.program_refs.push_back({*p, t.get("program")->source(), r.path("program"), program});
      auto it = names.programs.find(*p);
      if (it != names.programs.end()) {
        op.program = it->second;
        names.forks[program].push_back(it->second);
      }
    } else if (!t.get("program")) {
      r.missing("program");
    }
  } else if (k == "wait") {
    op.kind = OpKind::kWait;
  } else if (k == "loop") {
    op.kind = OpKind::kLoop;
    auto count = r.integer("count", 1, INT64_MAX);
    auto dur = r.duration("duration");
    if (count) op.count = static_cast<uint64_t>(*count);
    if (dur) op.duration = Tick(*dur);
    if (t.get("count") && t.get("duration"))
      r.error(t.get("duration"), "duration", "give count or duration, not both");
    if (!t.get("count") && !t.get("duration"))
      r.error(nullptr, "count", "a loop needs count or duration");
    if (depth >= workload::kMaxLoopDepth)
      r.error(nullptr, "body",
              fmt::format("loops nest too deeply ({} levels at most)", workload::kMaxLoopDepth));
    op.body = read_body(r.get("body"), r, program, names, sc, ctx, depth);
    if (!t.get("body")) r.missing("body");
    if (dur && !std::any_of(op.body.begin(), op.body.end(), workload::takes_time))
      r.error(t.get("duration"), "duration", "the body takes no time, so the loop would never end");
  } else if (k == "sweep" || k == "touch") {
    op.kind = k == "sweep" ? OpKind::kSweep : OpKind::kTouch;
    const bool named = region_ref(false);
    mode();
    read_range(r, op, names, named);
    if (auto s = r.choice("slice", {"all", "own"})) op.own_slice = *s == "own";
    if (k == "sweep") {
      if (auto es = r.integer("elem_size", 1, 4096)) {
        if (4096 % *es) r.error(t.get("elem_size"), "elem_size", "must divide 4096");
        op.elem_size = static_cast<uint32_t>(*es);
      }
      if (auto c = r.number("compute_ns", 0, 1e9)) op.compute_ns = *c;
      if (auto b = r.choice("build", {"O2", "O0", "memset"})) {
        op.unoptimised = *b == "O0";
        op.memset = *b == "memset";
      }
      if (op.memset && !op.write)
        r.error(t.get("build"), "build", "memset writes: it needs mode = \"write\"");
      for (const char* key : {"elem_size", "compute_ns"}) {
        if (op.memset && t.get(key))
          r.error(t.get(key), key, "a memset has no elements of its own (build = \"memset\")");
      }
    }
  } else if (k == "madvise") {
    op.kind = OpKind::kMadvise;
    const bool named = region_ref(false);
    read_range(r, op, names, named);
    if (auto a = r.choice("advice", {"dontneed", "hugepage", "nohugepage"})) {
      op.advice = *a == "hugepage"     ? Op::Advice::kHugepage
                  : *a == "nohugepage" ? Op::Advice::kNohugepage
                                       : Op::Advice::kDontneed;
    }
    if (!t.get("advice")) r.missing("advice");
  } else if (k == "mlock") {
    op.kind = OpKind::kMlock;
    const bool named = region_ref(false);
    read_range(r, op, names, named);
  } else if (k == "sleep") {
    op.kind = OpKind::kSleep;
    if (auto d = r.duration("duration")) {
      op.duration = Tick(*d);
    } else if (!t.get("duration")) {
      r.missing("duration");
    }
  } else if (k == "cgroup") {
    op.kind = OpKind::kCgroup;
    if (auto p = r.string("path")) {
      if (auto id = cgroup_id(sc, *p)) {
        op.cgroup = *id;
      } else {
        r.error(t.get("path"), "path", fmt::format("no [[cgroups]] entry has path \"{}\"", *p));
      }
    } else if (!t.get("path")) {
      r.missing("path");
    }
  } else if (k == "pin") {
    op.kind = OpKind::kPin;
    // sched_setaffinity(0, ...): a list of CPUs, or of nodes whose CPUs.
    const size_t nr_cpus = sc.host_machine ? 65535 : static_cast<size_t>(sc.machine.nr_cpus());
    const size_t nr_nodes = sc.host_machine ? 1024 : static_cast<size_t>(sc.machine.nr_nodes());
    auto id_list = [&](const char* key, const char* what, size_t n) {
      std::vector<uint16_t> ids;
      const toml::node* node = r.get(key);
      if (!node) return ids;
      const toml::array* a = node->as_array();
      if (!a) {
        r.error(node, key,
                fmt::format("expected an array of {} numbers, got {}", what, type_name(*node)));
        return ids;
      }
      if (a->empty()) {
        r.error(node, key,
                fmt::format("must name at least one {} (sched_setaffinity with an empty mask fails "
                            "with EINVAL)",
                            what));
      }
      for (const auto& e : *a) {
        if (!e.is_integer() || e.as_integer()->get() < 0 ||
            static_cast<uint64_t>(e.as_integer()->get()) >= n) {
          r.error(&e, key,
                  e.is_integer() ? fmt::format("{} {} is not a {} of this machine (0 to {})", what,
                                               e.as_integer()->get(), what, n - 1)
                                 : fmt::format("expected {} numbers, got {}", what, type_name(e)));
        } else {
          ids.push_back(static_cast<uint16_t>(e.as_integer()->get()));
        }
      }
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      return ids;
    };
    for (const uint16_t c : id_list("cpus", "CPU", nr_cpus)) op.cpus.push_back(CpuId(c));
    if (t.get("nodes") && t.get("nodes")->is_string()) {
      read_node_share(r, op);
    } else {
      for (const uint16_t n : id_list("nodes", "node", nr_nodes)) op.cpu_nodes.push_back(NodeId(n));
    }
    if (t.get("cpus") && t.get("nodes")) {
      r.error(t.get("nodes"), "nodes", "give cpus or nodes, not both");
    } else if (!t.get("cpus") && !t.get("nodes")) {
      r.error(nullptr, "cpus", "a pin needs cpus (a list of CPUs) or nodes (a list of nodes)");
    }
  } else if (k == "mempolicy") {
    op.kind = OpKind::kMempolicy;
    read_policy(true);
    if (!t.get("policy")) r.missing("policy");
  } else if (k == "count") {
    op.kind = OpKind::kCount;
    if (auto c = r.string("counter")) {
      for (const char* metric : workload::kTimeMetrics) {
        if (*c == metric)
          r.error(t.get("counter"), "counter",
                  fmt::format("\"{}\" is a metric mmsim reports; name the counter otherwise", *c));
      }
      if (const std::string why = name_problem(*c); !why.empty())
        r.error(t.get("counter"), "counter", why);
      op.counter = names.counter(*c);
    } else if (!t.get("counter")) {
      r.missing("counter");
    }
    op.count = static_cast<uint64_t>(r.integer("by", 1, INT64_MAX).value_or(1));
  }
  r.finish();
  if (ctx.diags->size() != before) return std::nullopt;
  return op;
}

void read_machine(TableReader& r, Scenario& sc) {
  auto preset = r.string("preset");
  if (!preset && !r.raw().get("preset")) {
    // No preset: the machine is its shape. Counts default to 1; memory and
    // cache sizes have no sensible default.
    sc.machine = topo::MachineSpec{};
    sc.machine.name = "custom";
    for (const char* key : {"mem_per_node", "llc_per_socket"}) {
      if (!r.raw().get(key)) {
        r.error(nullptr, key,
                "missing required key (a machine without a preset is given by its "
                "shape: sockets, cores_per_socket, threads_per_core, "
                "nodes_per_socket, mem_per_node, llc_per_socket, distance)");
      }
    }
    if (!r.raw().get("mem_per_node")) sc.machine.mem_per_node = kPageSize;
    if (!r.raw().get("llc_per_socket")) sc.machine.llc_per_socket = 1;
  } else if (!preset) {
    sc.machine = *topo::preset("2s-16c");  // so that only the keys given are checked below
  } else if (*preset == "host") {
    sc.host_machine = true;
  } else if (auto spec = topo::preset(*preset)) {
    sc.machine = *spec;
  } else {
    r.error(r.raw().get("preset"), "preset",
            fmt::format("unknown machine \"{}\" (known: {})", *preset,
                        fmt::join(topo::preset_names(), ", ")));
    sc.machine = *topo::preset("2s-16c");  // so that only the keys given are checked below
  }
  topo::MachineSpec& m = sc.machine;
  const size_t before_overrides = m.distance.size();
  bool changed = false;
  auto u16 = [&](const char* key, uint16_t& field) {
    if (auto v = r.integer(key, 1, 65535)) {
      field = static_cast<uint16_t>(*v);
      changed = true;
    }
  };
  u16("sockets", m.sockets);
  u16("cores_per_socket", m.cores_per_socket);
  u16("threads_per_core", m.threads_per_core);
  u16("nodes_per_socket", m.nodes_per_socket);
  if (auto v = r.size("mem_per_node")) {
    m.mem_per_node = *v;
    changed = true;
  }
  if (auto v = r.size("llc_per_socket")) {
    m.llc_per_socket = *v;
    changed = true;
  }
  // CPU-less memory nodes (before the matrix, whose expected size they set).
  if (auto v = r.integer("memory_nodes_per_socket", 0, 65535)) {
    m.memory_nodes_per_socket = static_cast<uint16_t>(*v);
    changed = true;
  }
  if (auto v = r.size("memory_node_mem")) {
    m.memory_node_mem = *v;
    changed = true;
  }
  auto u32 = [&](const char* key, uint32_t& field) {
    if (auto v = r.integer(key, 1, 1000000)) {
      field = static_cast<uint32_t>(*v);
      changed = true;
    }
  };
  u32("memory_node_latency_ns", m.memory_node_latency_ns);
  u32("dram_latency_ns", m.dram_latency_ns);
  auto mbps = [&](const char* key, uint64_t& field) {
    if (auto v = r.integer(key, 1, int64_t{1} << 40)) {
      field = static_cast<uint64_t>(*v);
      changed = true;
    }
  };
  mbps("memory_node_bandwidth_mbps", m.memory_node_bandwidth_mbps);
  mbps("dram_bandwidth_mbps", m.dram_bandwidth_mbps);
  if (const toml::node* n = r.get("memory_node_online")) {
    const auto* str = n->as_string();
    if (str && str->get() == "boot") {
      m.memory_node_online = topo::MemoryOnline::kBoot;
      changed = true;
    } else if (str && str->get() == "kmem") {
      m.memory_node_online = topo::MemoryOnline::kKmem;
      changed = true;
    } else {
      r.error(n, "memory_node_online",
              "expected \"boot\" (ordinary memory at boot) or \"kmem\" (onlined by dax/kmem)");
    }
  }
  if (const toml::node* n = r.get("distance")) {
    std::vector<std::vector<int>> d;
    bool ok = n->is_array();
    bool in_range = true;
    if (ok) {
      for (const auto& row : *n->as_array()) {
        if (!row.is_array()) {
          ok = false;
          break;
        }
        d.emplace_back();
        for (const auto& x : *row.as_array()) {
          if (!x.is_integer()) {
            ok = false;
            break;
          }
          // A SLIT entry is a byte: anything wider is refused here, before
          // it could be narrowed.
          const int64_t v = x.as_integer()->get();
          if (v < 0 || v > 255) {
            r.error(&x, "distance",
                    fmt::format("entry [{}][{}] is {}, must be in 10..255 (a SLIT entry is a byte)",
                                d.size() - 1, d.back().size(), v));
            in_range = false;
          }
          d.back().push_back(static_cast<int>(std::clamp<int64_t>(v, 0, 255)));
        }
      }
    }
    if (!ok) {
      r.error(n, "distance", "expected an array of arrays of integers (the SLIT matrix)");
    } else if (in_range) {
      m.distance = std::move(d);
      changed = true;
    } else {
      m.distance.clear();  // said above; the default matrix keeps other checks quiet
    }
  } else if (changed && before_overrides) {
    // A preset's matrix no longer fits a changed shape; use the default one.
    // (A preset's matrix is over its CPU nodes; memory nodes' entries follow.)
    if (m.distance.size() != m.nr_cpu_nodes()) m.distance.clear();
  }
  if (sc.host_machine && changed) {
    r.error(r.raw().get("preset"), "preset", "the host machine cannot be reshaped");
  } else if (!sc.host_machine) {
    for (const auto& msg : topo::validate_machine_spec(m)) {
      const auto colon = msg.find(':');
      const std::string key = msg.substr(0, colon);
      r.error(r.raw().get(key) ? r.raw().get(key) : r.raw().get("preset"), key,
              colon == std::string::npos ? msg : msg.substr(colon + 2));
    }
  }
  r.finish();
}

// The switches of one scenario table, from the subsystems' tables.
template <class C>
void read_switches(TableReader& r, std::string_view section, std::span<const Switch<C>> table,
                   C& config) {
  for (const auto& sw : table) {
    if (sw.info.section != section) continue;
    if (auto v = r.switch_value(sw.info)) sw.set(config, *v);
  }
}

// [kernel]: the version first (it presets every switch), then its keys.
void read_kernel(TableReader& r, Scenario& sc) {
  if (auto v = r.string("version")) {
    if (auto kv = KernelVersion::parse(*v)) {
      sc.kernel.apply_version(*kv);
    } else {
      r.error(r.raw().get("version"), "version",
              fmt::format("\"{}\" is not a kernel version from {} to {} (\"X.Y\")", *v,
                          kOldestKernel.str(), kNewestKernel.str()));
    }
  }
  read_switches(r, "kernel", mm::mm_switches(), sc.kernel.mm);
  read_switches(r, "kernel", numa::numa_switches(), sc.kernel.numa);
  read_switches(r, "kernel", reclaim::reclaim_switches(), sc.kernel.reclaim);
  r.finish();
}

// Checks across switches, once every key is read.
void check_kernel(const toml::table& root, Scenario& sc, Ctx& ctx) {
  const numa::NumaConfig& n = sc.kernel.numa;
  const toml::node* kernel = root.get("kernel");
  auto where = [&](const char* key) -> const toml::source_region& {
    const toml::node* at = kernel && kernel->is_table() ? kernel->as_table()->get(key) : nullptr;
    return at ? at->source() : (kernel ? kernel->source() : root.source());
  };
  if (n.numa_balancing >= 1 && !numa::has_numa_balancing(sc.kernel.version)) {
    ctx.error(where("numa_balancing"), "kernel.numa_balancing",
              fmt::format("automatic NUMA balancing arrived in 3.8; kernel {} has none",
                          sc.kernel.version.str()));
  } else if (n.numa_balancing >= 2 && !numa::has_tiering_mode(sc.kernel.version)) {
    ctx.error(where("numa_balancing"), "kernel.numa_balancing",
              fmt::format("{}: the memory-tiering mode (2, 3) arrived in 5.18; kernel {} takes 0 "
                          "or 1",
                          n.numa_balancing, sc.kernel.version.str()));
  }
  if (n.numa_balancing_scan_period_min_ms > n.numa_balancing_scan_period_max_ms) {
    ctx.error(where("numa_balancing_scan_period_min_ms"),
              "kernel.numa_balancing_scan_period_min_ms",
              "must not exceed numa_balancing_scan_period_max_ms");
  }
}

// [memcg]: the page-stat protocol and the hierarchy's names.
void read_memcg(TableReader& r, Scenario& sc) {
  read_switches(r, "memcg", memcg::memcg_switches(), sc.kernel.memcg);
  r.finish();
}

// [numa]: the version rules of NUMA balancing, each a switch.
void read_numa(TableReader& r, Scenario& sc) {
  read_switches(r, "numa", numa::numa_switches(), sc.kernel.numa);
  r.finish();
}

void read_costs(TableReader& r, Scenario& sc, Ctx& ctx);

// [noise]: the sources of run-to-run variation (sim/noise.h).
void read_noise(TableReader& r, Scenario& sc) {
  if (auto b = r.boolean("enabled")) sc.noise.enabled = *b;
  if (auto b = r.boolean("tick_phase")) sc.noise.tick_phase = *b;
  if (auto b = r.boolean("launch_cpu")) sc.noise.launch_cpu = *b;
  for (const auto& p : sim::noise_params()) {
    const std::string key(p.key);
    if (p.unit == "ns") {
      if (auto d = r.duration(key)) {
        if (static_cast<double>(*d) < p.lo || static_cast<double>(*d) > p.hi) {
          r.error(r.raw().get(key), key,
                  fmt::format("{} ns is out of range [{}, {}] ns", *d, p.lo, p.hi));
        }
        sc.noise.*(p.field) = static_cast<double>(*d);
      }
    } else if (auto v = r.number(key, p.lo, p.hi)) {
      if (p.whole && *v != std::floor(*v)) {
        r.error(r.raw().get(key), key, fmt::format("{} is not a whole number of CPUs", *v));
      }
      sc.noise.*(p.field) = *v;
    }
  }
  r.finish();
}

void apply_cost_table(TableReader& r, Scenario& sc) {
  for (const auto& p : cost::cost_params()) {
    if (auto v = r.number(std::string(p.name), 0, 1e12)) sc.costs.*(p.field) = *v;
  }
}

void read_costs(TableReader& r, Scenario& sc, Ctx& ctx) {
  if (auto f = r.string("profile")) {
    std::string path = *f;
    if (!path.empty() && path[0] != '/') {
      const auto slash = ctx.file.rfind('/');
      if (slash != std::string::npos) path = ctx.file.substr(0, slash + 1) + path;
    }
    std::string why;
    const std::optional<std::string> text = read_text_file(path, &why);
    if (!text) {
      r.error(r.raw().get("profile"), "profile",
              fmt::format("cannot read cost profile \"{}\": {}", path, why));
    } else {
      try {
        toml::table prof = toml::parse(*text, path);
        Ctx pctx{path, ctx.diags, {}};
        TableReader top(prof, "", pctx);
        sc.costs_file = path;
        top.table("measured");  // host behaviour recorded by mmsim calibrate (for --predict)
        if (const toml::table* c = top.table("costs")) {
          TableReader cr(*c, "costs", pctx);
          apply_cost_table(cr, sc);
          cr.finish();
        }
        top.finish();
      } catch (const toml::parse_error& e) {
        ctx.error(e.source(), "costs.profile", std::string(e.description()));
      }
    }
  }
  apply_cost_table(r, sc);
  r.finish();
}

// A tolerance as written: "10%" (relative, 0..1000%) or "±200" / "+-200"
// (absolute, at least 0). Returns nullopt with *why.
std::optional<ValidateSpec::Tolerance> parse_tolerance(const std::string& text, std::string* why) {
  ValidateSpec::Tolerance tol;
  std::string_view num = text;
  if (num.ends_with('%')) {
    tol.relative = true;
    num.remove_suffix(1);
  } else if (num.starts_with("\u00b1")) {
    num.remove_prefix(std::string_view("\u00b1").size());
  } else if (num.starts_with("+-")) {
    num.remove_prefix(2);
  } else {
    *why = fmt::format(
        "\"{}\" is not a tolerance: a percentage (\"10%\") or an absolute count (\"\u00b1200\" "
        "or \"+-200\")",
        text);
    return std::nullopt;
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (num.empty() || ec != std::errc() || end != num.data() + num.size() || !std::isfinite(v) ||
      num.front() == '-' || num.front() == '+') {
    *why = fmt::format("\"{}\": \"{}\" is not a number", text, num);
    return std::nullopt;
  }
  if (tol.relative && !(v >= 0 && v <= 1000)) {
    *why = fmt::format("\"{}\": a relative tolerance is 0% to 1000%", text);
    return std::nullopt;
  }
  tol.value = tol.relative ? v / 100 : v;
  return tol;
}

// [validate]: the validate tool's settings, checked here, unused by the run.
void read_validate(TableReader& r, Scenario& sc, Ctx& ctx) {
  ValidateSpec& v = sc.validate;
  v.present = true;
  if (const toml::node* n = r.get("kernels")) {
    const toml::array* a = n->as_array();
    if (!a) {
      r.error(n, "kernels",
              fmt::format("expected an array of kernel versions, got {}", type_name(*n)));
    } else {
      if (a->empty()) r.error(n, "kernels", "must name at least one kernel (\"6.1\", \"6.12\")");
      std::vector<std::string> kernels;
      for (const auto& e : *a) {
        if (!e.is_string()) {
          r.error(&e, "kernels",
                  fmt::format("expected a kernel version string (\"6.1\" or \"6.12\"), got {}",
                              type_name(e)));
          continue;
        }
        const std::string k = e.as_string()->get();
        if (k != "6.1" && k != "6.12") {
          r.error(&e, "kernels", fmt::format("unknown kernel \"{}\" (known: 6.1, 6.12)", k));
        } else if (std::find(kernels.begin(), kernels.end(), k) != kernels.end()) {
          r.error(&e, "kernels", fmt::format("kernel \"{}\" is listed twice", k));
        } else {
          kernels.push_back(k);
        }
      }
      v.kernels = std::move(kernels);
    }
  }
  if (auto n = r.integer("repeat", 1, 100)) v.repeat = static_cast<int>(*n);
  if (auto d = r.string("disk")) {
    if (*d == "ram" || *d == "virtio") {
      v.disk = *d;
    } else {
      r.error(r.raw().get("disk"), "disk",
              fmt::format("\"{}\" is not a disk (\"ram\" or \"virtio\")", *d));
    }
  }
  if (const toml::table* t = r.table("tolerance")) {
    // toml++ keeps keys sorted: put them back in file order (keys a --set
    // added, which have no place in the file, after, in key order).
    std::vector<std::pair<const toml::key*, const toml::node*>> entries;
    for (auto&& [k, node] : *t) entries.emplace_back(&k, &node);
    auto pos = [](const toml::key* k) {
      const auto& b = k->source().begin;
      return b.line ? std::pair<uint32_t, uint32_t>(b.line, b.column)
                    : std::pair<uint32_t, uint32_t>(UINT32_MAX, UINT32_MAX);
    };
    std::stable_sort(entries.begin(), entries.end(),
                     [&](const auto& a, const auto& b) { return pos(a.first) < pos(b.first); });
    for (const auto& [k, node] : entries) {
      const std::string name(k->str());
      const std::string key = "validate.tolerance." + name;
      if (!node->is_string()) {
        ctx.error(node->source(), key,
                  fmt::format("expected a string like \"10%\" or \"\u00b1200\", got {}",
                              type_name(*node)));
        continue;
      }
      std::string why;
      auto tol = parse_tolerance(node->as_string()->get(), &why);
      if (!tol) {
        ctx.error(node->source(), key, why);
        continue;
      }
      tol->counter = name;
      const auto& at = k->source().begin.line ? k->source().begin : node->source().begin;
      tol->line = at.line ? at.line : 1;
      tol->col = at.column ? at.column : 1;
      for (const auto& [okey, arg, col] : ctx.overridden) {
        if (okey == Ctx::dotted(key)) {
          tol->line = 1;
          tol->col = col;
        }
      }
      v.tolerances.push_back(std::move(*tol));
    }
  }
  r.finish();
}

// Applies one --set: "a.b.c=value".
void apply_override(toml::table& root, const std::string& arg, Ctx& ctx) {
  const toml::source_region where{
      {1, 1}, {1, 1}, std::make_shared<const std::string>("--set " + arg)};
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) {
    ctx.error(where, arg, "expected key=value");
    return;
  }
  const std::string key = arg.substr(0, eq);
  const std::string value = arg.substr(eq + 1);
  std::vector<std::string> parts;
  std::stringstream ks(key);
  for (std::string part; std::getline(ks, part, '.');) parts.push_back(part);
  // Walk tables by name and arrays by index ("files.0.size").
  toml::node* cur = &root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string& part = parts[i];
    toml::node* next = nullptr;
    if (toml::array* arr = cur->as_array()) {
      size_t index = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
      if (part.empty() || ec != std::errc() || end != part.data() + part.size() ||
          index >= arr->size()) {
        ctx.error(where, key,
                  arr->empty() ? fmt::format("\"{}\" is not an index: that array is empty", part)
                               : fmt::format("\"{}\" is not an index of that array (0 to {})", part,
                                             arr->size() - 1));
        return;
      }
      next = arr->get(index);
    } else if (toml::table* tbl = cur->as_table()) {
      next = tbl->get(part);
      if (!next) {
        tbl->insert(part, toml::table{});
        next = tbl->get(part);
      }
    }
    if (!next || !(next->is_table() || next->is_array())) {
      ctx.error(where, key, fmt::format("\"{}\" is not a table or an array", part));
      return;
    }
    cur = next;
  }
  toml::table* t = cur->as_table();
  if (!t) {
    ctx.error(where, key, "the last part must name a key of a table");
    return;
  }
  // The value is TOML; a bare word, or any value for a key that holds a
  // string, is taken as a string.
  const toml::node* existing = t->get(parts.back());
  const bool quoted = value.size() >= 2 && value.front() == '"' && value.back() == '"';
  if (existing && existing->is_string() && !quoted) {
    t->insert_or_assign(parts.back(), value);
  } else {
    toml::table parsed;
    try {
      parsed = toml::parse("v = " + value, "--set " + arg);
    } catch (const toml::parse_error&) {
      parsed = toml::table{};
      parsed.insert("v", value);
    }
    t->insert_or_assign(parts.back(), *parsed.get("v"));
  }
  ctx.overridden.emplace_back(key, "--set " + arg, static_cast<uint32_t>(eq + 2));
}

void check_programs(Names& names, Scenario& sc, Ctx& ctx) {
  for (const auto& ref : names.program_refs) {
    if (!names.programs.count(ref.name)) {
      std::vector<std::string> known;
      for (const auto& [n, id] : names.programs) known.push_back(n);
      ctx.error(
          ref.where, ref.key,
          fmt::format("no program is named \"{}\" (known: {})", ref.name, fmt::join(known, ", ")));
    }
  }
  for (const auto& [region, ref] : names.region_refs) {
    if (!names.mapped_regions.count(region))
      ctx.error(ref.where, ref.key, fmt::format("no map op creates region \"{}\"", ref.name));
  }
  // A range past the end of every mapping of its region: a touch there is a
  // SIGSEGV and madvise or mlock fail with ENOMEM, whatever the run does.
  std::vector<std::string> region_names(names.regions.size());
  for (const auto& [n, id] : names.regions) region_names[id] = n;
  for (const auto& ref : names.range_refs) {
    const auto it = names.region_pages.find(ref.region);
    if (it == names.region_pages.end() || it->second == 0) continue;
    const uint64_t pages = it->second;
    if (ref.first_page >= pages || ref.nr_pages > pages - ref.first_page) {
      ctx.error(ref.where, ref.key,
                fmt::format("the range reaches past the end of region \"{}\" ({} bytes at the "
                            "most): a touch there is SIGSEGV, madvise and mlock fail with ENOMEM",
                            region_names[ref.region], pages * kPageSize));
    }
  }
  // A program may not start itself, directly or not: that would never end.
  std::vector<int> state(names.programs.size(), 0);
  std::function<bool(uint32_t)> cyclic = [&](uint32_t p) {
    if (state[p] == 1) return true;
    if (state[p] == 2) return false;
    state[p] = 1;
    for (uint32_t q : names.forks[p]) {
      if (cyclic(q)) return true;
    }
    state[p] = 2;
    return false;
  };
  for (const auto& [name, id] : names.programs) {
    std::fill(state.begin(), state.end(), 0);
    if (cyclic(id)) {
      for (const auto& ref : names.program_refs) {
        if (ref.program == id) {
          ctx.error(ref.where, ref.key,
                    fmt::format("program \"{}\" starts itself (fork cycle)", name));
          break;
        }
      }
    }
  }
}

// How many tasks run `target` over the run: the first process if it runs
// it, and for each fork or threads op that starts it, the op's count times
// the tasks running the op's program. nullopt if an op in a loop starts it,
// or one of the programs on the way. A fork cycle (reported on its own)
// stops the count at `depth` programs.
std::optional<uint64_t> tasks_running(const workload::Workload& w, uint32_t target,
                                      size_t depth = 0) {
  if (depth > w.programs.size()) return 0;
  using workload::Op;
  using workload::OpKind;
  auto starts = [&](const Op& op) {
    return (op.kind == OpKind::kFork || op.kind == OpKind::kThreads) && op.program == target;
  };
  std::function<bool(const std::vector<Op>&)> in_loop = [&](const std::vector<Op>& body) {
    return std::any_of(body.begin(), body.end(),
                       [&](const Op& op) { return starts(op) || in_loop(op.body); });
  };
  uint64_t n = target == w.init_program ? 1 : 0;
  for (uint32_t q = 0; q < w.programs.size(); ++q) {
    for (const Op& op : w.programs[q].ops) {
      if (op.kind == OpKind::kLoop && in_loop(op.body)) return std::nullopt;
      if (!starts(op)) continue;
      const auto m = tasks_running(w, q, depth + 1);
      if (!m) return std::nullopt;
      // Saturating: the task limits report a count this large on their own.
      const uint64_t add = *m != 0 && op.count > UINT64_MAX / *m ? UINT64_MAX : op.count * *m;
      n = add > UINT64_MAX - n ? UINT64_MAX : n + add;
    }
  }
  return n;
}

LoadResult parse_table(toml::table root, const std::string& file,
                       const std::vector<std::string>& overrides, std::optional<uint64_t> seed,
                       bool counts_from_host) {
  LoadResult out;
  const toml::node* convergence_where = nullptr;
  Ctx ctx{file, &out.diagnostics, {}};
  for (const auto& o : overrides) apply_override(root, o, ctx);
  Scenario sc;
  sc.counts_from_host = counts_from_host;
  sc.path = file;
  sc.overrides = overrides;
  TableReader top(root, "", ctx);

  if (const toml::table* t = top.table("scenario")) {
    TableReader r(*t, "scenario", ctx);
    sc.name = r.string("name").value_or("");
    sc.description = r.string("description").value_or("");
    if (auto s = r.integer("seed", 0, INT64_MAX)) sc.seed = static_cast<uint64_t>(*s);
    if (auto d = r.duration("time_limit")) {
      if (*d <= 0) r.error(t->get("time_limit"), "time_limit", "must be positive");
      sc.time_limit = Tick(*d);
    }
    if (auto d = r.duration("sample_interval")) {
      if (*d < 1000000)
        r.error(t->get("sample_interval"), "sample_interval", "must be at least 1ms");
      sc.sample_interval = Tick(*d);
    }
    r.finish();
  }
  if (const toml::table* t = top.table("limits")) {
    TableReader r(*t, "limits", ctx);
    if (auto v = r.integer("tasks", 1, static_cast<int64_t>(workload::kMaxTasksCeiling)))
      sc.limits.tasks = static_cast<uint64_t>(*v);
    if (auto v =
            r.integer("timeline_rows", 1, static_cast<int64_t>(workload::kMaxTimelineRowsCeiling)))
      sc.limits.timeline_rows = static_cast<uint64_t>(*v);
    if (auto v = r.integer("page_tables", 1, static_cast<int64_t>(workload::kMaxPageTablesCeiling)))
      sc.limits.page_tables = static_cast<uint64_t>(*v);
    if (auto v = r.integer("ops", 1, static_cast<int64_t>(workload::kMaxOpsCeiling)))
      sc.limits.ops = static_cast<uint64_t>(*v);
    if (auto v = r.size("memory")) {
      if (*v < kPageSize || *v > workload::kMaxMemoryCeiling) {
        r.error(t->get("memory"), "memory",
                fmt::format("{} bytes is out of range [4096, {}] (16 TiB)", *v,
                            workload::kMaxMemoryCeiling));
      }
      sc.limits.memory_bytes = *v;
    }
    r.finish();
  }
  if (const toml::table* t = top.table("validate")) {
    TableReader r(*t, "validate", ctx);
    read_validate(r, sc, ctx);
  }
  if (seed) sc.seed = *seed;
  if (sc.name.empty()) {
    const auto slash = file.rfind('/');
    std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
    if (base.size() > 5 && base.ends_with(".toml")) base.resize(base.size() - 5);
    sc.name = base;
  }
  if (const toml::table* t = top.table("machine")) {
    TableReader r(*t, "machine", ctx);
    read_machine(r, sc);
  } else {
    if (!root.get("machine")) top.missing("machine");
  }
  // The machine's own cost profile; a custom machine (or the host, before its
  // calibrated profile is applied) takes the default machine's, and says so.
  sc.costs_machine = !sc.host_machine && cost::find_machine_costs(sc.machine.name)
                         ? sc.machine.name
                         : std::string(cost::kDefaultCostMachine);
  sc.costs = cost::default_costs(sc.costs_machine);
  if (const toml::table* t = top.table("kernel")) {
    TableReader r(*t, "kernel", ctx);
    read_kernel(r, sc);
  }
  if (const toml::table* t = top.table("numa")) {
    TableReader r(*t, "numa", ctx);
    read_numa(r, sc);
  }
  if (const toml::table* t = top.table("memcg")) {
    TableReader r(*t, "memcg", ctx);
    read_memcg(r, sc);
  }
  if (const toml::table* t = top.table("swap")) {
    // [swap]: a swap device of `size` bytes (a partition or file; no
    // readahead, asynchronous writes).
    TableReader r(*t, "swap", ctx);
    if (auto v = r.size("size")) {
      if (*v % kPageSize != 0 || *v > (uint64_t{1} << 44)) {
        r.error(t->get("size"), "size",
                fmt::format("{} bytes is not a whole number of 4 KiB pages up to 16 TiB", *v));
      } else {
        sc.kernel.swap_bytes = *v;
      }
    }
    r.finish();
  }
  check_kernel(root, sc, ctx);
  if (const toml::node* n = top.get("cgroups")) {
    const toml::array* a = n->as_array();
    if (!a || !a->is_array_of_tables()) {
      top.error(n, "cgroups", "expected [[cgroups]] tables");
    } else if (a->size() + 1 >= mm::kMaxMemcgs) {
      // Ids: the root, the scenario's cgroups, and the memcg outside the run.
      top.error(n, "cgroups",
                fmt::format("{} cgroups; at most {} (a page's memcg id is 16 bits)", a->size(),
                            mm::kMaxMemcgs - 2));
    } else {
      for (size_t i = 0; i < a->size(); ++i) {
        const toml::table& ct = *a->get(i)->as_table();
        TableReader r(ct, fmt::format("cgroups[{}]", i), ctx);
        memcg::CgroupSpec c;
        if (auto p = r.string("path")) {
          const bool dup = std::any_of(sc.cgroups.begin(), sc.cgroups.end(),
                                       [&](const auto& x) { return x.path == *p; });
          if (const std::string why = cgroup_path_problem(*p, sc.cgroups); !why.empty()) {
            r.error(ct.get("path"), "path", why);
          } else if (dup) {
            r.error(ct.get("path"), "path", fmt::format("a cgroup \"{}\" exists already", *p));
          }
          c.path = *p;
        } else if (!ct.get("path")) {
          r.missing("path");
        }
        if (auto l = r.size("limit")) {
          if (*l < kPageSize) r.error(ct.get("limit"), "limit", "must be at least one page");
          c.limit_bytes = *l;
        }
        if (auto mv = r.integer("move_charge_at_immigrate", 0, 3)) {
          c.move_charge_at_immigrate = static_cast<uint32_t>(*mv);
          if (*mv && sc.kernel.memcg.hierarchy == memcg::Hierarchy::kV2) {
            r.error(ct.get("move_charge_at_immigrate"), "move_charge_at_immigrate",
                    "cgroup v2 has no memory.move_charge_at_immigrate: its charges never move "
                    "(use memcg.hierarchy = \"v1\")");
          }
        }
        r.finish();
        sc.cgroups.push_back(c);
        sc.workload.cgroup_paths.push_back(c.path);
      }
    }
  }
  if (const toml::table* t = top.table("costs")) {
    TableReader r(*t, "costs", ctx);
    read_costs(r, sc, ctx);
  }
  if (const toml::table* t = top.table("noise")) {
    TableReader r(*t, "noise", ctx);
    read_noise(r, sc);
  }

  Names names;
  if (const toml::node* n = top.get("files")) {
    const toml::array* a = n->as_array();
    if (!a || !a->is_array_of_tables()) {
      top.error(n, "files", "expected [[files]] tables");
    } else {
      uint64_t cached_pages = 0;
      for (size_t i = 0; i < a->size(); ++i) {
        TableReader r(*a->get(i)->as_table(), fmt::format("files[{}]", i), ctx);
        workload::FileSpec f;
        if (auto name = r.string("name")) {
          if (const std::string why = name_problem(*name); !why.empty())
            r.error(a->get(i)->as_table()->get("name"), "name", why);
          f.name = *name;
          if (!names.files.emplace(f.name, static_cast<uint32_t>(sc.workload.files.size())).second)
            r.error(a->get(i)->as_table()->get("name"), "name",
                    fmt::format("a file \"{}\" exists already", f.name));
        } else if (!a->get(i)->as_table()->get("name")) {
          r.missing("name");
        }
        if (auto sz = r.size("size")) {
          if (*sz == 0) r.error(a->get(i)->as_table()->get("size"), "size", "must be positive");
          if (*sz > workload::kMaxFileBytes)
            r.error(a->get(i)->as_table()->get("size"), "size",
                    fmt::format("{} bytes is more than {} (16 TiB, ext4's largest file with 4 KiB "
                                "blocks)",
                                *sz, workload::kMaxFileBytes));
          f.pages = bytes_to_pages(*sz);
        } else if (!a->get(i)->as_table()->get("size")) {
          r.missing("size");
        }
        // fs = "tmpfs": a shmem file (under /dev/shm when run natively).
        if (auto fs = r.choice("fs", {"disk", "tmpfs"})) f.tmpfs = *fs == "tmpfs";
        f.cached = r.boolean("cached").value_or(false);
        if (f.cached && !sc.host_machine) {
          const uint64_t machine_pages = sc.machine.total_mem_bytes() / kPageSize;
          cached_pages = workload::add_sat(cached_pages, f.pages);
          if (f.pages > machine_pages) {
            r.error(a->get(i)->as_table()->get("cached"), "cached",
                    fmt::format("a cached file of {} pages does not fit the machine's {} pages",
                                f.pages, machine_pages));
          } else if (cached_pages > machine_pages) {
            r.error(a->get(i)->as_table()->get("cached"), "cached",
                    fmt::format("the cached files so far hold {} pages, more than the machine's "
                                "{} pages",
                                cached_pages, machine_pages));
          }
        }
        const int64_t max_node =
            sc.host_machine ? 1023 : static_cast<int64_t>(sc.machine.nr_nodes()) - 1;
        f.cached_node =
            static_cast<uint16_t>(r.integer("node", 0, std::max<int64_t>(0, max_node)).value_or(0));
        r.finish();
        sc.workload.files.push_back(f);
      }
    }
  }

  const toml::table* programs = top.table("programs");
  if (!programs) {
    if (!root.get("programs")) top.missing("programs");
  } else {
    // Names first, so that ops can refer to programs defined later.
    for (auto&& [k, v] : *programs) {
      names.programs.emplace(std::string(k.str()), static_cast<uint32_t>(names.programs.size()));
      sc.workload.programs.push_back(workload::Program{std::string(k.str()), {}});
    }
    for (auto&& [k, v] : *programs) {
      const std::string pname(k.str());
      const uint32_t pid = names.programs[pname];
      if (const std::string why = name_problem(pname); !why.empty())
        ctx.error(k.source().begin.line ? k.source() : v.source(), "programs." + pname, why);
      const toml::array* a = v.as_array();
      if (!a || !a->is_array_of_tables() || a->empty()) {
        ctx.error(v.source(), "programs." + pname, "expected [[programs." + pname + "]] op tables");
        continue;
      }
      for (size_t i = 0; i < a->size(); ++i) {
        const std::string prefix = fmt::format("programs.{}[{}]", pname, i);
        if (auto op = read_op(*a->get(i)->as_table(), prefix, pid, names, sc, ctx, 0))
          sc.workload.programs[pid].ops.push_back(std::move(*op));
      }
    }
  }
  if (const toml::table* t = top.table("run")) {
    TableReader r(*t, "run", ctx);
    if (auto p = r.string("program")) {
      auto it = names.programs.find(*p);
      if (it == names.programs.end()) {
        r.error(t->get("program"), "program", fmt::format("no program is named \"{}\"", *p));
      } else {
        sc.workload.init_program = it->second;
        sc.workload.init_comm = *p;
      }
    } else if (!t->get("program")) {
      r.missing("program");
    }
    if (auto c = r.string("cgroup")) {
      if (auto id = cgroup_id(sc, *c)) {
        sc.workload.init_cgroup = *id;
      } else {
        r.error(t->get("cgroup"), "cgroup",
                fmt::format("no [[cgroups]] entry has path \"{}\"", *c));
      }
    }
    if (auto m = r.either("process_image", "mapped", "the image's VMAs, no pages", "in-use",
                          "and the pages its tasks keep resident"))
      sc.workload.image_in_use = *m;
    if (auto m = r.either("executable_fs", "disk", "a native run's", "tmpfs",
                          "a validate guest's initramfs"))
      sc.workload.executable_on_tmpfs = *m;
    // perf bench numa's convergence: the program whose tasks, in each
    // process, must come onto one node (metrics converged_s, converged).
    if (auto c = r.string("convergence")) {
      convergence_where = t->get("convergence");
      auto it = names.programs.find(*c);
      if (it == names.programs.end()) {
        r.error(t->get("convergence"), "convergence",
                fmt::format("no program is named \"{}\"", *c));
      } else {
        sc.workload.convergence_program = it->second;
      }
    }
    r.finish();
  } else if (!root.get("run")) {
    top.missing("run");
  }
  top.finish();
  check_programs(names, sc, ctx);
  // perf's threads all start before any is judged: the count must be known.
  if (sc.workload.convergence_program != UINT32_MAX) {
    const auto n = tasks_running(sc.workload, sc.workload.convergence_program);
    if (!n) {
      ctx.error(convergence_where->source(), "run.convergence",
                "the program's tasks must all be started by fork or threads ops outside loops, "
                "so that their number is known");
    } else if (*n == 0) {
      ctx.error(convergence_where->source(), "run.convergence",
                "no task runs this program: no fork or threads op starts it");
    } else {
      sc.workload.convergence_tasks = *n;
    }
  }
  // The first process inherits no region: one it uses before mapping it
  // (until it starts threads, which share its regions) is a sure SIGSEGV or
  // ENOMEM.
  if (root.get("run") && !names.programs.empty()) {
    std::set<uint32_t> mapped;
    for (const auto& s : names.steps) {
      if (s.program != sc.workload.init_program) continue;
      if (s.kind == Names::Step::kThreads) break;
      if (s.kind == Names::Step::kMap) {
        mapped.insert(s.region);
      } else if (!mapped.count(s.region) && names.mapped_regions.count(s.region)) {
        ctx.error(s.where, s.key,
                  "the first process uses this region before it maps it: a touch there is "
                  "SIGSEGV, madvise and mlock fail with ENOMEM");
        mapped.insert(s.region);  // once per region
      }
    }
  }
  if (names.counters.size() > workload::kMaxCounters) {
    ctx.error(programs ? programs->source() : root.source(), "programs",
              fmt::format("{} distinct counter names, more than the {} allowed",
                          names.counters.size(), workload::kMaxCounters));
  }

  sc.workload.regions.resize(names.regions.size());
  for (const auto& [n, id] : names.regions) sc.workload.regions[id].name = n;
  sc.workload.counters.resize(names.counters.size());
  for (const auto& [n, id] : names.counters) sc.workload.counters[id] = n;

  std::stable_sort(out.diagnostics.begin(), out.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     if (a.file != b.file) return a.file > b.file;  // --set lines last
                     if (a.line != b.line) return a.line < b.line;
                     return a.col < b.col;
                   });
  if (out.diagnostics.empty()) out.scenario = std::move(sc);
  return out;
}

// toml++ parses a dotted key recursively, one level per part: a key of tens
// of thousands of parts overflows the stack. A scenario's keys have a few, so
// a dotted key (or table header) of more than kMaxKeyParts parts is refused
// before toml++ sees the text. Strings and comments are skipped; a float's
// dot makes a chain of two.
constexpr size_t kMaxKeyParts = 64;

std::optional<Diagnostic> too_deep(std::string_view text, const std::string& name) {
  uint32_t line = 1;
  size_t parts = 1;
  bool in_part = false;  // the last token was a bare key or a quoted key
  size_t i = 0;
  auto skip_string = [&](char q) {
    const bool multi = text.substr(i, 3) == std::string(3, q);
    i += multi ? 3 : 1;
    while (i < text.size()) {
      if (text[i] == '\n') ++line;
      if (q == '"' && text[i] == '\\') {
        i += 2;
        continue;
      }
      if (multi ? text.substr(i, 3) == std::string(3, q) : text[i] == q) {
        i += multi ? 3 : 1;
        return;
      }
      if (!multi && text[i] == '\n') return;
      ++i;
    }
  };
  while (i < text.size()) {
    const char ch = text[i];
    if (ch == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (ch == '"' || ch == '\'') {
      skip_string(ch);
      in_part = true;
      continue;
    }
    if (ch == '.') {
      if (in_part && ++parts > kMaxKeyParts) {
        return Diagnostic{name, line, 1, "toml",
                          fmt::format("a dotted key of more than {} parts", kMaxKeyParts)};
      }
      in_part = false;
    } else if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-') {
      in_part = true;
    } else if (ch != ' ' && ch != '\t') {
      parts = 1;
      in_part = false;
      if (ch == '\n') ++line;
    }
    ++i;
  }
  return std::nullopt;
}

}  // namespace

LoadResult parse_scenario(const std::string& text, const std::string& name,
                          const std::vector<std::string>& overrides, std::optional<uint64_t> seed,
                          bool counts_from_host) {
  if (auto d = too_deep(text, name)) {
    LoadResult out;
    out.diagnostics.push_back(*d);
    return out;
  }
  try {
    return parse_table(toml::parse(text, name), name, overrides, seed, counts_from_host);
  } catch (const toml::parse_error& e) {
    LoadResult out;
    Ctx ctx{name, &out.diagnostics, {}};
    ctx.error(e.source(), "toml", std::string(e.description()));
    return out;
  }
}

LoadResult load_scenario(const std::string& path, const std::vector<std::string>& overrides,
                         std::optional<uint64_t> seed, bool counts_from_host) {
  std::string why;
  const std::optional<std::string> text = read_text_file(path, &why);
  if (!text) {
    LoadResult out;
    out.diagnostics.push_back(Diagnostic{path, 1, 1, "scenario", why});
    return out;
  }
  return parse_scenario(*text, path, overrides, seed, counts_from_host);
}

KernelConfig::KernelConfig() { apply_version(version); }

void KernelConfig::apply_version(KernelVersion v) {
  version = v;
  apply_presets(mm::mm_switches(), v, mm);
  apply_presets(numa::numa_switches(), v, numa);
  apply_presets(memcg::memcg_switches(), v, memcg);
  apply_presets(reclaim::reclaim_switches(), v, reclaim);
}

workload::WorldConfig world_config(const Scenario& s, const topo::Topology& topo) {
  workload::WorldConfig wc;
  wc.seed = s.seed;
  wc.time_limit = s.time_limit;
  wc.mm = s.kernel.mm;
  wc.mm.swap_pages = s.kernel.swap_bytes / kPageSize;
  wc.mm.aslr_seed = s.seed;
  wc.numa = s.kernel.numa_config(topo.nr_nodes());
  // What the tiering mode changes in mm, and the counters it brings.
  wc.mm.numa_tiering = wc.numa.tiering();
  wc.mm.tiering_access_time = wc.numa.hot_page_selection();
  wc.mm.promote_stats = numa::has_tiering_mode(s.kernel.version);
  wc.mm.promote_candidate_stat = wc.numa.promote_hot_threshold;
  wc.mm.numa_huge_pte_stat = s.kernel.version >= KernelVersion{3, 13};
  wc.mm.thp_migration_stats = s.kernel.version >= KernelVersion{5, 9};
  wc.mm.khugepaged_collapse_large = s.kernel.version >= KernelVersion{5, 8};
  wc.sample_interval = s.sample_interval;
  wc.limits = s.limits;
  wc.memcg = s.kernel.memcg;
  wc.reclaim = s.kernel.reclaim;
  wc.page_cgroup_array_bytes =
      s.kernel.version >= KernelVersion{3, 19} ? 0 : s.kernel.page_cgroup_bytes();
  wc.cgroups = s.cgroups;
  wc.noise = s.noise;
  return wc;
}

numa::NumaConfig KernelConfig::numa_config(size_t nodes) const {
  numa::NumaConfig c = numa;
  c.mode = !numa::has_numa_balancing(version) ? 0
           : c.numa_balancing == -1           ? (nodes > 1 ? numa::kNumaBalancingNormal : 0)
                                              : c.numa_balancing;
  c.enabled = c.mode != 0;
  c.skip_top_tier = c.tiering() && !c.normal();
  return c;
}

std::optional<topo::Topology> build_topology(const Scenario& s, std::string* error) {
  if (s.host_machine) return topo::load_host("/sys", error);
  return topo::Topology(s.machine);
}

}  // namespace mmsim::scenario
