// The plan and report text formats (plan.h): one item per line, `keyword
// key=value ...`, names percent-encoded, every number in decimal (doubles in
// their shortest exact form), and a reader that refuses anything else.
#include "plan/plan.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <system_error>
#include <type_traits>
#include <utility>

namespace mmsim::plan {
namespace {

constexpr std::string_view kPlanMagic = "mmsim-plan";
constexpr std::string_view kReportMagic = "mmsim-report";
// Loops inside loops the reader accepts (the simulator allows 16).
constexpr int kMaxLoopDepth = 64;
// Durations, as the scenario grammar bounds them (about 146 years).
constexpr int64_t kMaxDurationNs = int64_t{1} << 62;

// Characters a name keeps as they are; every other byte is written %XX.
bool plain_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '+' || c == '/' || c == ':' || c == '-';
}

std::string escape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : s) {
    if (plain_char(c)) {
      out += c;
    } else {
      const auto u = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::optional<std::string> unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (plain_char(s[i])) {
      out += s[i];
      continue;
    }
    if (s[i] != '%' || i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_digit(s[i + 1]);
    const int lo = hex_digit(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// --- writing ---------------------------------------------------------------

template <typename T>
std::string number(T v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void put(std::string& out, std::string_view key, std::string_view text) {
  out += ' ';
  out += key;
  out += '=';
  out += text;
}

template <typename T>
void put_number(std::string& out, std::string_view key, T v) {
  put(out, key, number(v));
}

template <typename T>
std::string number_list(const std::vector<T>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += number(v[i]);
  }
  return s;
}

constexpr std::string_view kPolicyNames[] = {"default", "bind", "preferred", "interleave"};

// The fields of an Op besides `kind` and `body`, in the order they are
// written, and which of them each kind uses.
enum Field : uint32_t {
  kRegion,
  kPages,
  kShared,
  kWritable,
  kExec,
  kFile,
  kFileOffsetPages,
  kPolicy,
  kNodes,
  kProgram,
  kCount,
  kDurationNs,
  kFirstPage,
  kNrPages,
  kWrite,
  kElemSize,
  kComputeNs,
  kUnoptimised,
  kCounter,
  kCgroup,
  kCpus,
  kAdvice,
  kOwnSlice,
  kMemset,
  kNodeShare,
  kNumFields,
};

constexpr std::string_view kFieldNames[kNumFields] = {"region",
                                                      "pages",
                                                      "shared",
                                                      "writable",
                                                      "exec",
                                                      "file",
                                                      "file_offset_pages",
                                                      "policy",
                                                      "nodes",
                                                      "program",
                                                      "count",
                                                      "duration_ns",
                                                      "first_page",
                                                      "nr_pages",
                                                      "write",
                                                      "elem_size",
                                                      "compute_ns",
                                                      "unoptimised",
                                                      "counter",
                                                      "cgroup",
                                                      "cpus",
                                                      "advice",
                                                      "own_slice",
                                                      "memset",
                                                      "node_share"};

constexpr uint32_t bit(Field f) { return uint32_t{1} << f; }

// The fields an op of this kind always carries (the reader requires them).
uint32_t used_fields(OpKind kind) {
  const uint32_t range = bit(kRegion) | bit(kFirstPage) | bit(kNrPages);
  switch (kind) {
    case OpKind::kMap:
      return bit(kRegion) | bit(kPages) | bit(kShared) | bit(kWritable) | bit(kExec) | bit(kFile) |
             bit(kFileOffsetPages) | bit(kPolicy) | bit(kNodes);
    case OpKind::kUnmap:
      return bit(kRegion);
    case OpKind::kFork:
    case OpKind::kThreads:
      return bit(kProgram) | bit(kCount);
    case OpKind::kWait:
      return 0;
    case OpKind::kLoop:
      return bit(kCount) | bit(kDurationNs);
    case OpKind::kSweep:
      return range | bit(kWrite) | bit(kOwnSlice) | bit(kElemSize) | bit(kComputeNs) |
             bit(kUnoptimised) | bit(kMemset);
    case OpKind::kTouch:
      return range | bit(kWrite) | bit(kOwnSlice);
    case OpKind::kMadvise:
      return range | bit(kAdvice);
    case OpKind::kMlock:
      return range;
    case OpKind::kSleep:
      return bit(kDurationNs);
    case OpKind::kCount:
      return bit(kCounter) | bit(kCount);
    case OpKind::kCgroup:
      return bit(kCgroup);
    case OpKind::kPin:
      return bit(kCpus) | bit(kNodes) | bit(kNodeShare);
    case OpKind::kMempolicy:
      return bit(kPolicy) | bit(kNodes) | bit(kNodeShare);
  }
  return 0;
}

bool is_default(const Op& op, Field f) {
  static const Op d;
  switch (f) {
    case kRegion:
      return op.region == d.region;
    case kPages:
      return op.pages == d.pages;
    case kShared:
      return op.shared == d.shared;
    case kWritable:
      return op.writable == d.writable;
    case kExec:
      return op.exec == d.exec;
    case kFile:
      return op.file == d.file;
    case kFileOffsetPages:
      return op.file_offset_pages == d.file_offset_pages;
    case kPolicy:
      return op.policy == d.policy;
    case kNodes:
      return op.nodes.empty();
    case kProgram:
      return op.program == d.program;
    case kCount:
      return op.count == d.count;
    case kDurationNs:
      return op.duration_ns == d.duration_ns;
    case kFirstPage:
      return op.first_page == d.first_page;
    case kNrPages:
      return op.nr_pages == d.nr_pages;
    case kWrite:
      return op.write == d.write;
    case kElemSize:
      return op.elem_size == d.elem_size;
    case kComputeNs:
      return op.compute_ns == d.compute_ns;
    case kUnoptimised:
      return op.unoptimised == d.unoptimised;
    case kOwnSlice:
      return op.own_slice == d.own_slice;
    case kMemset:
      return op.memset == d.memset;
    case kNodeShare:
      return op.node_share == d.node_share;
    case kCounter:
      return op.counter == d.counter;
    case kCgroup:
      return op.cgroup == d.cgroup;
    case kCpus:
      return op.cpus.empty();
    case kAdvice:
      return op.advice == d.advice;
    case kNumFields:
      break;
  }
  return true;
}

std::string field_text(const Op& op, Field f) {
  switch (f) {
    case kRegion:
      return number(op.region);
    case kPages:
      return number(op.pages);
    case kShared:
      return op.shared ? "1" : "0";
    case kWritable:
      return op.writable ? "1" : "0";
    case kExec:
      return op.exec ? "1" : "0";
    case kFile:
      return number(op.file);
    case kFileOffsetPages:
      return number(op.file_offset_pages);
    case kPolicy: {
      const auto i = static_cast<size_t>(op.policy);
      return std::string(i < std::size(kPolicyNames) ? kPolicyNames[i] : "?");
    }
    case kNodes:
      return number_list(op.nodes);
    case kProgram:
      return number(op.program);
    case kCount:
      return number(op.count);
    case kDurationNs:
      return number(op.duration_ns);
    case kFirstPage:
      return number(op.first_page);
    case kNrPages:
      return number(op.nr_pages);
    case kWrite:
      return op.write ? "1" : "0";
    case kElemSize:
      return number(op.elem_size);
    case kComputeNs:
      return number(op.compute_ns);
    case kUnoptimised:
      return op.unoptimised ? "1" : "0";
    case kOwnSlice:
      return op.own_slice ? "1" : "0";
    case kMemset:
      return op.memset ? "1" : "0";
    case kNodeShare:
      return number(static_cast<uint32_t>(op.node_share));
    case kCounter:
      return number(op.counter);
    case kCgroup:
      return number(op.cgroup);
    case kCpus:
      return number_list(op.cpus);
    case kAdvice:
      return number(static_cast<uint32_t>(op.advice));
    case kNumFields:
      break;
  }
  return "";
}

void write_ops(std::string& out, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    out += "op kind=";
    out += op_name(op.kind);
    const uint32_t used = used_fields(op.kind);
    for (uint32_t f = 0; f < kNumFields; ++f) {
      const auto field = static_cast<Field>(f);
      if ((used & bit(field)) || !is_default(op, field)) {
        put(out, kFieldNames[f], field_text(op, field));
      }
    }
    out += '\n';
    if (op.kind == OpKind::kLoop) {
      write_ops(out, op.body);
      out += "end\n";
    }
  }
}

// --- reading ---------------------------------------------------------------

// One line split into its keyword and key=value fields. Every getter marks its
// key as used; unused() names a key no getter asked for.
class Line {
 public:
  // Splits `text`; on a malformed field returns nullopt with *error set.
  static std::optional<Line> split(std::string_view text, std::string* error) {
    Line line;
    for (const char c : text) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) {
        *error = "a control character (byte " + number(static_cast<unsigned>(u)) + ")";
        return std::nullopt;
      }
    }
    size_t pos = text.find(' ');
    line.keyword_ = text.substr(0, pos);
    if (line.keyword_.empty()) {
      *error = text.empty() ? "an empty line" : "a line starting with a space";
      return std::nullopt;
    }
    while (pos != std::string_view::npos) {
      const size_t start = pos + 1;
      pos = text.find(' ', start);
      const std::string_view token =
          text.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start);
      const size_t eq = token.find('=');
      if (token.empty() || eq == 0 || eq == std::string_view::npos) {
        *error = token.empty() ? "an empty field (two spaces, or a space at the end)"
                               : "field \"" + std::string(token) + "\" is not key=value";
        return std::nullopt;
      }
      const std::string_view key = token.substr(0, eq);
      for (const auto& f : line.fields_) {
        if (f.key == key) {
          *error = "key " + std::string(key) + " appears twice";
          return std::nullopt;
        }
      }
      line.fields_.push_back({key, token.substr(eq + 1), false});
    }
    return line;
  }

  std::string_view keyword() const { return keyword_; }
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // The value of `key`, marked used; nullopt (and *error) when it is missing.
  std::optional<std::string_view> value(std::string_view key, std::string* error) {
    Field* f = find(key);
    if (!f) {
      *error = "missing key " + std::string(key);
      return std::nullopt;
    }
    f->used = true;
    return f->value;
  }

  // The first key no getter asked for, or "".
  std::string_view unused() const {
    for (const auto& f : fields_) {
      if (!f.used) return f.key;
    }
    return {};
  }

 private:
  struct Field {
    std::string_view key;
    std::string_view value;
    bool used = false;
  };
  Field* find(std::string_view key) {
    for (auto& f : fields_) {
      if (f.key == key) return &f;
    }
    return nullptr;
  }
  const Field* find(std::string_view key) const {
    for (const auto& f : fields_) {
      if (f.key == key) return &f;
    }
    return nullptr;
  }

  std::string_view keyword_;
  std::vector<Field> fields_;
};

// Parses an integer of type T in [lo, hi], the whole of `text`.
template <typename T>
std::optional<T> parse_int(std::string_view text, T lo, T hi) {
  T v{};
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
    return std::nullopt;
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

// Reads lines one by one; the first error wins and carries its line number.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  // The next line, or nullopt at the end. A final newline ends the last line.
  std::optional<std::string_view> next() {
    if (pos_ >= text_.size()) return std::nullopt;
    const size_t nl = text_.find('\n', pos_);
    const size_t end = nl == std::string_view::npos ? text_.size() : nl;
    const std::string_view line = text_.substr(pos_, end - pos_);
    pos_ = nl == std::string_view::npos ? text_.size() : nl + 1;
    ++line_no_;
    return line;
  }

  int line_no() const { return line_no_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

  // Records "line N: what" (the first error only); returns false.
  bool fail(const std::string& what, int line = 0) {
    if (error_.empty()) error_ = "line " + number(line ? line : line_no_) + ": " + what;
    return false;
  }

  // The header line "MAGIC VERSION".
  bool header(std::string_view magic, int version) {
    const auto line = next();
    const std::string want = std::string(magic) + " " + number(version);
    if (!line) return fail("empty text: expected \"" + want + "\"", 1);
    if (line->substr(0, magic.size() + 1) != std::string(magic) + " ") {
      return fail("not an " + std::string(magic) + " text: expected \"" + want + "\"");
    }
    const auto v = parse_int<int>(line->substr(magic.size() + 1), 0, 1000000);
    if (!v) return fail("bad version in \"" + std::string(*line) + "\": expected \"" + want + "\"");
    if (*v != version) {
      return fail("format version " + number(*v) + ", but this reader reads version " +
                  number(version));
    }
    return true;
  }

  // The line split; nullopt (and an error) if malformed.
  std::optional<Line> split(std::string_view text) {
    std::string why;
    auto line = Line::split(text, &why);
    if (!line) fail(why);
    return line;
  }

  // Fails on the first key of `line` that no getter used.
  bool no_unused(const Line& line) {
    const std::string_view k = line.unused();
    if (k.empty()) return true;
    return fail("unknown key " + std::string(k) + " on this " + std::string(line.keyword()) +
                " line");
  }

  template <typename T>
  bool get_int(Line& line, std::string_view key, T* out, T lo = std::numeric_limits<T>::min(),
               T hi = std::numeric_limits<T>::max()) {
    std::string why;
    const auto text = line.value(key, &why);
    if (!text) return fail(why);
    const auto v = parse_int<T>(*text, lo, hi);
    if (!v) {
      return fail(std::string(key) + ": \"" + std::string(*text) + "\" is not a number in [" +
                  number(lo) + ", " + number(hi) + "]");
    }
    *out = *v;
    return true;
  }

  bool get_bool(Line& line, std::string_view key, bool* out) {
    uint8_t v = 0;
    if (!get_int<uint8_t>(line, key, &v, 0, 1)) return false;
    *out = v != 0;
    return true;
  }

  bool get_double(Line& line, std::string_view key, double* out) {
    std::string why;
    const auto text = line.value(key, &why);
    if (!text) return fail(why);
    double v = 0;
    const auto r =
        std::from_chars(text->data(), text->data() + text->size(), v, std::chars_format::general);
    if (text->empty() || r.ec != std::errc() || r.ptr != text->data() + text->size() ||
        !std::isfinite(v)) {
      return fail(std::string(key) + ": \"" + std::string(*text) + "\" is not a finite number");
    }
    *out = v;
    return true;
  }

  bool get_name(Line& line, std::string_view key, std::string* out) {
    std::string why;
    const auto text = line.value(key, &why);
    if (!text) return fail(why);
    auto v = unescape(*text);
    if (!v) {
      return fail(std::string(key) + ": \"" + std::string(*text) +
                  "\" is not a percent-encoded name");
    }
    *out = std::move(*v);
    return true;
  }

  template <typename T>
  bool get_list(Line& line, std::string_view key, std::vector<T>* out) {
    std::string why;
    const auto text = line.value(key, &why);
    if (!text) return fail(why);
    out->clear();
    if (text->empty()) return true;
    size_t pos = 0;
    for (;;) {
      const size_t comma = text->find(',', pos);
      const std::string_view item =
          text->substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
      const auto v =
          parse_int<T>(item, std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
      if (!v) {
        return fail(std::string(key) + ": \"" + std::string(item) + "\" is not a number in [0, " +
                    number(std::numeric_limits<T>::max()) + "]");
      }
      out->push_back(*v);
      if (comma == std::string_view::npos) return true;
      pos = comma + 1;
    }
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int line_no_ = 0;
  std::string error_;
};

// The sections of a plan, in the order they must come.
enum class Section { kPlan, kFiles, kRegions, kCounters, kCgroups, kPrograms };

bool plain_file_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (const char c : name) {
    if (!plain_char(c) || c == '/' || c == ':') return false;
  }
  return true;
}

// A cgroup path below the run's root: "/a" or "/a/b", no empty, "." or ".."
// component, no control character.
bool cgroup_path(const std::string& path) {
  if (path.size() < 2 || path[0] != '/') return false;
  size_t start = 1;
  for (;;) {
    const size_t slash = path.find('/', start);
    const std::string comp =
        path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (comp.empty() || comp == "." || comp == "..") return false;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  for (const char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

class PlanReader {
 public:
  explicit PlanReader(std::string_view text) : r_(text) {}

  std::optional<Plan> read(std::string* error) {
    if (!read_all()) {
      if (error) *error = r_.error();
      return std::nullopt;
    }
    return std::move(plan_);
  }

 private:
  struct OpenLoop {
    Op op;
    int line = 0;
  };

  bool read_all() {
    if (!r_.header(kPlanMagic, kPlanVersion)) return false;
    int plan_line = 0;
    while (const auto text = r_.next()) {
      auto line = r_.split(*text);
      if (!line) return false;
      const std::string_view kw = line->keyword();
      if (plan_line == 0 && kw != "plan") {
        return r_.fail("expected the plan line (\"plan scenario=... page_size=...\") first");
      }
      bool ok = false;
      if (kw == "plan") {
        if (plan_line)
          return r_.fail("a second plan line (the first is line " + number(plan_line) + ")");
        plan_line = r_.line_no();
        ok = read_plan_line(*line);
      } else if (kw == "file") {
        ok = enter(Section::kFiles, kw) && read_file(*line);
      } else if (kw == "region") {
        ok = enter(Section::kRegions, kw) && read_name(*line, "name", &plan_.regions);
      } else if (kw == "counter") {
        ok = enter(Section::kCounters, kw) && read_name(*line, "name", &plan_.counters);
      } else if (kw == "cgroup") {
        ok = enter(Section::kCgroups, kw) && read_cgroup(*line);
      } else if (kw == "program") {
        ok = enter(Section::kPrograms, kw) && read_program(*line);
      } else if (kw == "op") {
        ok = read_op(*line);
      } else if (kw == "end") {
        ok = read_end(*line);
      } else {
        return r_.fail("unknown keyword \"" + std::string(kw) +
                       "\" (known: plan, file, region, counter, cgroup, program, op, end)");
      }
      if (!ok || !r_.no_unused(*line)) return false;
    }
    if (!plan_line) return r_.fail("no plan line", r_.line_no() + 1);
    if (!loops_.empty()) {
      return r_.fail("the loop opened at line " + number(loops_.back().line) + " has no end line",
                     r_.line_no() + 1);
    }
    // References that may point forward, checked now that everything is read.
    const size_t n = plan_.programs.size();
    if (plan_.init_program >= n) {
      return r_.fail("init_program " + number(plan_.init_program) + " is out of range (" +
                         number(n) + " programs)",
                     plan_line);
    }
    if (plan_.init_cgroup > plan_.cgroups.size()) {
      return r_.fail("init_cgroup " + number(plan_.init_cgroup) + " is out of range (" +
                         number(plan_.cgroups.size()) + " cgroups)",
                     plan_line);
    }
    for (const auto& [line, program] : program_refs_) {
      if (program >= n) {
        return r_.fail(
            "program " + number(program) + " is out of range (" + number(n) + " programs)", line);
      }
    }
    return true;
  }

  bool enter(Section s, std::string_view kw) {
    if (s < section_) {
      return r_.fail("a " + std::string(kw) +
                     " line after a later section (the order is plan, file, region, counter, "
                     "cgroup, program)");
    }
    section_ = s;
    return true;
  }

  bool read_plan_line(Line& line) {
    return r_.get_name(line, "scenario", &plan_.scenario) &&
           r_.get_int<uint64_t>(line, "page_size", &plan_.page_size, 512, uint64_t{1} << 30) &&
           power_of_two(plan_.page_size) &&
           r_.get_int<int64_t>(line, "time_limit_ns", &plan_.time_limit_ns, 0, kMaxDurationNs) &&
           r_.get_int(line, "init_program", &plan_.init_program) &&
           r_.get_int(line, "init_cgroup", &plan_.init_cgroup);
  }

  bool power_of_two(uint64_t v) {
    if ((v & (v - 1)) == 0) return true;
    return r_.fail("page_size " + number(v) + " is not a power of two");
  }

  bool read_file(Line& line) {
    File f;
    if (!r_.get_name(line, "name", &f.name) || !r_.get_int(line, "pages", &f.pages) ||
        !r_.get_bool(line, "cached", &f.cached)) {
      return false;
    }
    if (line.has("fs")) {
      std::string why;
      const auto fs = line.value("fs", &why);
      if (*fs != "disk" && *fs != "tmpfs") {
        return r_.fail("fs: \"" + std::string(*fs) + "\" is not disk or tmpfs");
      }
      f.tmpfs = *fs == "tmpfs";
    }
    if (!plain_file_name(f.name)) {
      return r_.fail("file name \"" + escape(f.name) + "\" is not a plain file name");
    }
    if (f.pages > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / plan_.page_size) {
      return r_.fail("file " + f.name + ": " + number(f.pages) + " pages do not fit in a file");
    }
    for (const File& other : plan_.files) {
      if (other.name == f.name) return r_.fail("file " + f.name + " is listed twice");
    }
    plan_.files.push_back(std::move(f));
    return true;
  }

  bool read_name(Line& line, std::string_view key, std::vector<std::string>* out) {
    std::string name;
    if (!r_.get_name(line, key, &name)) return false;
    out->push_back(std::move(name));
    return true;
  }

  bool read_cgroup(Line& line) {
    std::string path;
    if (!r_.get_name(line, "path", &path)) return false;
    if (!cgroup_path(path)) {
      return r_.fail("cgroup path \"" + escape(path) + "\" is not like /a or /a/b");
    }
    plan_.cgroups.push_back(std::move(path));
    return true;
  }

  bool read_program(Line& line) {
    if (!loops_.empty()) {
      return r_.fail("the loop opened at line " + number(loops_.back().line) + " has no end line");
    }
    Program p;
    if (!r_.get_name(line, "name", &p.name)) return false;
    plan_.programs.push_back(std::move(p));
    return true;
  }

  // Where an op read now goes: the innermost open loop, or the program.
  std::vector<Op>& current_ops() {
    return loops_.empty() ? plan_.programs.back().ops : loops_.back().op.body;
  }

  bool read_end(Line& line) {
    if (loops_.empty()) return r_.fail("an end line with no open loop");
    Op done = std::move(loops_.back().op);
    loops_.pop_back();
    current_ops().push_back(std::move(done));
    return true;
  }

  bool read_op(Line& line) {
    if (section_ != Section::kPrograms) return r_.fail("an op line before any program line");
    Op op;
    std::string why;
    const auto kind_text = line.value("kind", &why);
    if (!kind_text) return r_.fail(why);
    bool known = false;
    for (int k = 0; k <= static_cast<int>(OpKind::kMempolicy); ++k) {
      if (op_name(static_cast<OpKind>(k)) == *kind_text) {
        op.kind = static_cast<OpKind>(k);
        known = true;
      }
    }
    if (!known) return r_.fail("unknown op kind \"" + std::string(*kind_text) + "\"");
    const uint32_t used = used_fields(op.kind);
    for (uint32_t f = 0; f < kNumFields; ++f) {
      const auto field = static_cast<Field>(f);
      if (!(used & bit(field)) && !line.has(kFieldNames[f])) continue;
      if (!read_field(line, field, &op)) return false;
    }
    const bool by_share = op.node_share != NodeShare::kNone;
    if (op.kind == OpKind::kPin && op.cpus.empty() + op.nodes.empty() + !by_share != 2) {
      return r_.fail(
          "a pin op names CPUs (cpus=), nodes (nodes=) or a share (node_share=): exactly one");
    }
    if (op.kind == OpKind::kMempolicy && by_share && !op.nodes.empty())
      return r_.fail("a mempolicy op names nodes (nodes=) or a share (node_share=), not both");
    if (op.memset && !op.write) return r_.fail("a memset sweep writes (write=1)");
    if (op.kind == OpKind::kLoop) {
      if (static_cast<int>(loops_.size()) >= kMaxLoopDepth) {
        return r_.fail("loops nest deeper than " + number(kMaxLoopDepth) + " levels");
      }
      loops_.push_back({std::move(op), r_.line_no()});
      return true;
    }
    current_ops().push_back(std::move(op));
    return true;
  }

  // Reads one field of an op, checking indexes against what is known.
  bool read_field(Line& line, Field f, Op* op) {
    const std::string_view key = kFieldNames[f];
    switch (f) {
      case kRegion:
        if (!r_.get_int(line, key, &op->region)) return false;
        return in_range(key, op->region, plan_.regions.size(), "regions");
      case kPages:
        return r_.get_int(line, key, &op->pages);
      case kShared:
        return r_.get_bool(line, key, &op->shared);
      case kWritable:
        return r_.get_bool(line, key, &op->writable);
      case kExec:
        return r_.get_bool(line, key, &op->exec);
      case kFile:
        if (!r_.get_int<int32_t>(line, key, &op->file, -1)) return false;
        return op->file < 0 ||
               in_range(key, static_cast<uint64_t>(op->file), plan_.files.size(), "files");
      case kFileOffsetPages:
        return r_.get_int(line, key, &op->file_offset_pages);
      case kPolicy: {
        std::string why;
        const auto text = line.value(key, &why);
        if (!text) return r_.fail(why);
        for (size_t i = 0; i < std::size(kPolicyNames); ++i) {
          if (*text == kPolicyNames[i]) {
            op->policy = static_cast<Policy>(i);
            return true;
          }
        }
        return r_.fail("unknown policy \"" + std::string(*text) +
                       "\" (known: default, bind, preferred, interleave)");
      }
      case kNodes:
        return r_.get_list(line, key, &op->nodes);
      case kProgram:
        if (!r_.get_int(line, key, &op->program)) return false;
        program_refs_.emplace_back(r_.line_no(), op->program);
        return true;
      case kCount:
        return r_.get_int(line, key, &op->count);
      case kDurationNs:
        return r_.get_int<int64_t>(line, key, &op->duration_ns, 0, kMaxDurationNs);
      case kFirstPage:
        return r_.get_int(line, key, &op->first_page);
      case kNrPages:
        return r_.get_int(line, key, &op->nr_pages);
      case kWrite:
        return r_.get_bool(line, key, &op->write);
      case kElemSize:
        if (!r_.get_int(line, key, &op->elem_size)) return false;
        // A power of two from 1 to a page (the scenario's rule: it divides 4096).
        if (op->elem_size >= 1 && op->elem_size <= 4096 &&
            (op->elem_size & (op->elem_size - 1)) == 0)
          return true;
        return r_.fail("elem_size " + number(op->elem_size) +
                       " is not a power of two from 1 to 4096");
      case kComputeNs:
        return r_.get_double(line, key, &op->compute_ns);
      case kUnoptimised:
        return r_.get_bool(line, key, &op->unoptimised);
      case kOwnSlice:
        return r_.get_bool(line, key, &op->own_slice);
      case kMemset:
        return r_.get_bool(line, key, &op->memset);
      case kNodeShare: {
        uint32_t v = 0;
        if (!r_.get_int(line, key, &v)) return false;
        if (v > static_cast<uint32_t>(NodeShare::kAll))
          return r_.fail("node_share " + number(v) + " is not 0, 1, 2 or 3");
        op->node_share = static_cast<NodeShare>(v);
        return true;
      }
      case kCounter:
        if (!r_.get_int(line, key, &op->counter)) return false;
        return in_range(key, op->counter, plan_.counters.size(), "counters");
      case kCgroup:
        if (!r_.get_int(line, key, &op->cgroup)) return false;
        // 0 is the run's root; 1.. the listed cgroups.
        return in_range(key, op->cgroup, plan_.cgroups.size() + 1, "cgroups and the root");
      case kCpus:
        return r_.get_list(line, key, &op->cpus);
      case kAdvice: {
        uint32_t a = 0;
        if (!r_.get_int(line, key, &a)) return false;
        if (a > static_cast<uint32_t>(Advice::kNohugepage))
          return r_.fail("advice " + number(a) + " is not 0, 1 or 2");
        op->advice = static_cast<Advice>(a);
        return true;
      }
      case kNumFields:
        break;
    }
    return r_.fail("internal: unknown field");
  }

  bool in_range(std::string_view key, uint64_t v, size_t n, std::string_view what) {
    if (v < n) return true;
    return r_.fail(std::string(key) + " " + number(v) + " is out of range (" + number(n) + " " +
                   std::string(what) + ")");
  }

  Reader r_;
  Plan plan_;
  Section section_ = Section::kPlan;
  std::vector<OpenLoop> loops_;
  std::vector<std::pair<int, uint32_t>> program_refs_;  // (line, program)
};

bool valid_end(std::string_view end) {
  return end == "exit" || end == "time_limit" ||
         (end.substr(0, 10) == "killed by " && end.size() > 10) ||
         (end.substr(0, 7) == "error: " && end.size() > 7);
}

}  // namespace

std::string_view op_name(OpKind kind) {
  switch (kind) {
    case OpKind::kMap:
      return "map";
    case OpKind::kUnmap:
      return "unmap";
    case OpKind::kFork:
      return "fork";
    case OpKind::kThreads:
      return "threads";
    case OpKind::kWait:
      return "wait";
    case OpKind::kLoop:
      return "loop";
    case OpKind::kSweep:
      return "sweep";
    case OpKind::kTouch:
      return "touch";
    case OpKind::kMadvise:
      return "madvise";
    case OpKind::kMlock:
      return "mlock";
    case OpKind::kSleep:
      return "sleep";
    case OpKind::kCount:
      return "count";
    case OpKind::kCgroup:
      return "cgroup";
    case OpKind::kPin:
      return "pin";
    case OpKind::kMempolicy:
      return "mempolicy";
  }
  return "?";
}

std::string write_plan(const Plan& plan) {
  std::string out = std::string(kPlanMagic) + " " + number(kPlanVersion) + "\nplan";
  put(out, "scenario", escape(plan.scenario));
  put_number(out, "page_size", plan.page_size);
  put_number(out, "time_limit_ns", plan.time_limit_ns);
  put_number(out, "init_program", plan.init_program);
  put_number(out, "init_cgroup", plan.init_cgroup);
  out += '\n';
  for (const File& f : plan.files) {
    out += "file";
    put(out, "name", escape(f.name));
    put_number(out, "pages", f.pages);
    put(out, "cached", f.cached ? "1" : "0");
    if (f.tmpfs) put(out, "fs", "tmpfs");
    out += '\n';
  }
  for (const std::string& r : plan.regions) out += "region name=" + escape(r) + "\n";
  for (const std::string& c : plan.counters) out += "counter name=" + escape(c) + "\n";
  for (const std::string& c : plan.cgroups) out += "cgroup path=" + escape(c) + "\n";
  for (const Program& p : plan.programs) {
    out += "program name=" + escape(p.name) + "\n";
    write_ops(out, p.ops);
  }
  return out;
}

std::optional<Plan> read_plan(std::string_view text, std::string* error) {
  return PlanReader(text).read(error);
}

Counters parse_counters(std::string_view text) {
  Counters out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0) continue;
    int64_t v = 0;
    const char* end = line.data() + line.size();
    const auto r = std::from_chars(line.data() + sp + 1, end, v);
    if (r.ec == std::errc() && r.ptr == end) out.emplace_back(std::string(line.substr(0, sp)), v);
  }
  return out;
}

Counters counters_delta(const Counters& before, const Counters& after) {
  const std::map<std::string, int64_t, std::less<>> b(before.begin(), before.end());
  Counters out;
  out.reserve(after.size());
  for (const auto& [name, v] : after) {
    const auto it = b.find(name);
    out.emplace_back(name, v - (it == b.end() ? 0 : it->second));
  }
  return out;
}

std::string write_report(const RunReport& report) {
  std::string out = std::string(kReportMagic) + " " + number(kReportVersion) + "\nrun";
  put_number(out, "elapsed_ns", report.elapsed_ns);
  put(out, "time_limit_hit", report.time_limit_hit ? "1" : "0");
  out += '\n';
  for (const TaskResult& t : report.tasks) {
    out += "task";
    put_number(out, "tid", t.tid);
    put_number(out, "tgid", t.tgid);
    put_number(out, "parent", t.parent);
    put_number(out, "program", t.program);
    put_number(out, "start_ns", t.start_ns);
    put_number(out, "end_ns", t.end_ns);
    put_number(out, "user_ns", t.user_ns);
    put_number(out, "sys_ns", t.sys_ns);
    put_number(out, "minflt", t.minflt);
    put_number(out, "majflt", t.majflt);
    put_number(out, "nvcsw", t.nvcsw);
    put_number(out, "nivcsw", t.nivcsw);
    put(out, "end", escape(t.end));
    put(out, "counters", number_list(t.counters));
    put_number(out, "node", t.node);
    put_number(out, "local_pct", t.local_pct);
    out += '\n';
  }
  if (report.iowait_ns) out += "host iowait_ns=" + number(report.iowait_ns) + "\n";
  for (const auto& [name, delta] : report.vmstat) {
    out += "vmstat name=" + escape(name) + " delta=" + number(delta) + "\n";
  }
  return out;
}

std::optional<RunReport> read_report(std::string_view text, std::string* error) {
  Reader r(text);
  RunReport report;
  const auto fail = [&]() -> std::optional<RunReport> {
    if (error) *error = r.error();
    return std::nullopt;
  };
  if (!r.header(kReportMagic, kReportVersion)) return fail();
  bool have_run = false;
  while (const auto text_line = r.next()) {
    auto line = r.split(*text_line);
    if (!line) return fail();
    if (!have_run) {
      if (line->keyword() != "run") {
        r.fail("expected the run line (\"run elapsed_ns=... time_limit_hit=...\") first");
        return fail();
      }
      have_run = true;
      if (!r.get_int(*line, "elapsed_ns", &report.elapsed_ns) ||
          !r.get_bool(*line, "time_limit_hit", &report.time_limit_hit) || !r.no_unused(*line)) {
        return fail();
      }
      continue;
    }
    if (line->keyword() == "host") {
      if (!r.get_int(*line, "iowait_ns", &report.iowait_ns) || !r.no_unused(*line)) return fail();
      continue;
    }
    if (line->keyword() == "vmstat") {
      auto& [name, delta] = report.vmstat.emplace_back();
      if (!r.get_name(*line, "name", &name) || !r.get_int(*line, "delta", &delta) ||
          !r.no_unused(*line)) {
        return fail();
      }
      continue;
    }
    if (line->keyword() != "task") {
      r.fail("unknown keyword \"" + std::string(line->keyword()) +
             "\" (expected task, host or vmstat)");
      return fail();
    }
    TaskResult t;
    if (!r.get_int(*line, "tid", &t.tid) || !r.get_int(*line, "tgid", &t.tgid) ||
        !r.get_int(*line, "parent", &t.parent) || !r.get_int(*line, "program", &t.program) ||
        !r.get_int(*line, "start_ns", &t.start_ns) || !r.get_int(*line, "end_ns", &t.end_ns) ||
        !r.get_int(*line, "user_ns", &t.user_ns) || !r.get_int(*line, "sys_ns", &t.sys_ns) ||
        !r.get_int(*line, "minflt", &t.minflt) || !r.get_int(*line, "majflt", &t.majflt) ||
        !r.get_int(*line, "nvcsw", &t.nvcsw) || !r.get_int(*line, "nivcsw", &t.nivcsw) ||
        !r.get_name(*line, "end", &t.end) || !r.get_list(*line, "counters", &t.counters) ||
        !r.get_int<int64_t>(*line, "node", &t.node, -1) ||
        !r.get_double(*line, "local_pct", &t.local_pct) || !r.no_unused(*line)) {
      return fail();
    }
    if (!valid_end(t.end)) {
      r.fail("end \"" + escape(t.end) +
             "\" is not exit, time_limit, killed by SIG..., or error: ...");
      return fail();
    }
    report.tasks.push_back(std::move(t));
  }
  if (!have_run) {
    r.fail("no run line", r.line_no() + 1);
    return fail();
  }
  return report;
}

}  // namespace mmsim::plan
