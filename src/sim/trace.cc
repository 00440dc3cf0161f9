#include "sim/trace.h"

#include <algorithm>
#include <cstdio>

namespace mmsim::sim {

namespace {

// Trace process ids: CPUs, kernel threads and counters have their own; a
// process of the run is its tgid plus kTaskBase.
constexpr uint32_t kCpus = 1;
constexpr uint32_t kKernel = 2;
constexpr uint32_t kCounters = 3;
constexpr uint32_t kTaskBase = 100;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string with_args(const std::string& args) {
  return args.empty() ? "" : ",\"args\":{" + args + "}";
}

std::string meta(std::string_view what, uint32_t pid, uint32_t tid, std::string_view name) {
  return "{\"ph\":\"M\",\"name\":\"" + std::string(what) + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" + trace_quote(name) + "}}";
}

}  // namespace

std::string trace_us(int64_t ns) {
  char buf[32];
  const char* sign = ns < 0 ? "-" : "";
  const uint64_t a = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  std::snprintf(buf, sizeof buf, "%s%llu.%03llu", sign, static_cast<unsigned long long>(a / 1000),
                static_cast<unsigned long long>(a % 1000));
  return buf;
}

std::string trace_quote(std::string_view s) {
  std::string q = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      q += '\\';
      q += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      q += buf;
    } else {
      q += c;
    }
  }
  return q + "\"";
}

bool Trace::admit(Tick at) {
  if (truncated_ || at < from_) return false;
  if (max_events_ && events_ >= max_events_) {
    truncated_ = true;
    truncated_at_ = at;
    return false;
  }
  ++events_;
  return true;
}

void Trace::name_cpu(uint16_t cpu, uint16_t node) {
  if (cpu == 0) add(meta("process_name", kCpus, 0, "CPUs"));
  add(meta("thread_name", kCpus, cpu,
           "CPU " + std::to_string(cpu) + " (node " + std::to_string(node) + ")"));
}

void Trace::name_task(uint32_t pid, uint32_t tgid, std::string_view comm) {
  if (named_tgids_.insert(tgid).second)
    add(meta("process_name", kTaskBase + tgid, 0,
             std::string(comm) + " (tgid " + std::to_string(tgid) + ")"));
  add(meta("thread_name", kTaskBase + tgid, pid, std::string(comm) + " " + std::to_string(pid)));
}

void Trace::task_state(uint32_t pid, uint32_t tgid, uint16_t cpu, std::string_view comm,
                       std::string_view state, Tick from, Tick to, std::string_view detail) {
  if (to <= from || !admit(from)) return;
  const std::string ts = trace_us(from.ns), dur = trace_us((to - from).ns);
  std::string name(state);
  if (!detail.empty()) name += ": " + std::string(detail);
  add("{\"ph\":\"X\",\"name\":" + trace_quote(name) +
      ",\"pid\":" + std::to_string(kTaskBase + tgid) + ",\"tid\":" + std::to_string(pid) +
      ",\"ts\":" + ts + ",\"dur\":" + dur + "}");
  if (state == "running")
    add("{\"ph\":\"X\",\"name\":" + trace_quote(std::string(comm) + " " + std::to_string(pid)) +
        ",\"pid\":" + std::to_string(kCpus) + ",\"tid\":" + std::to_string(cpu) + ",\"ts\":" + ts +
        ",\"dur\":" + dur + "}");
}

void Trace::task_instant(uint32_t pid, uint32_t tgid, std::string_view name, Tick at,
                         const std::string& args) {
  if (!admit(at)) return;
  add("{\"ph\":\"i\",\"s\":\"t\",\"name\":" + trace_quote(name) +
      ",\"pid\":" + std::to_string(kTaskBase + tgid) + ",\"tid\":" + std::to_string(pid) +
      ",\"ts\":" + trace_us(at.ns) + with_args(args) + "}");
}

void Trace::begin(std::string_view category, uint64_t id, std::string_view name, Tick at,
                  const std::string& args) {
  if (!admit(at)) return;
  open_.emplace(std::string(category), id);
  add("{\"ph\":\"b\",\"cat\":" + trace_quote(category) + ",\"id\":" + std::to_string(id) +
      ",\"name\":" + trace_quote(name) + ",\"pid\":" + std::to_string(kKernel) +
      ",\"ts\":" + trace_us(at.ns) + with_args(args) + "}");
}

void Trace::end(std::string_view category, uint64_t id, std::string_view name, Tick at,
                const std::string& args) {
  // Whatever began is ended, the budget spent or not.
  if (open_.erase({std::string(category), id}) == 0) return;
  add("{\"ph\":\"e\",\"cat\":" + trace_quote(category) + ",\"id\":" + std::to_string(id) +
      ",\"name\":" + trace_quote(name) + ",\"pid\":" + std::to_string(kKernel) +
      ",\"ts\":" + trace_us(at.ns) + with_args(args) + "}");
}

uint32_t Trace::kthread_tid(std::string_view thread) {
  const auto it = std::find(kthreads_.begin(), kthreads_.end(), thread);
  if (it != kthreads_.end()) return static_cast<uint32_t>(it - kthreads_.begin()) + 1;
  if (kthreads_.empty()) add(meta("process_name", kKernel, 0, "kernel threads"));
  kthreads_.emplace_back(thread);
  const auto tid = static_cast<uint32_t>(kthreads_.size());
  add(meta("thread_name", kKernel, tid, thread));
  return tid;
}

void Trace::kthread(std::string_view thread, Tick from, Tick to, std::string_view name,
                    const std::string& args) {
  const uint32_t tid = kthread_tid(thread);
  if (!admit(from)) return;
  add("{\"ph\":\"X\",\"name\":" + trace_quote(name) + ",\"pid\":" + std::to_string(kKernel) +
      ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + trace_us(from.ns) +
      ",\"dur\":" + trace_us(std::max<int64_t>((to - from).ns, 1)) + with_args(args) + "}");
}

void Trace::counter(std::string_view track, Tick at, double value) {
  if (std::find(counters_.begin(), counters_.end(), track) == counters_.end()) {
    if (counters_.empty()) add(meta("process_name", kCounters, 0, "counters"));
    counters_.emplace_back(track);
  }
  add("{\"ph\":\"C\",\"name\":" + trace_quote(track) + ",\"pid\":" + std::to_string(kCounters) +
      ",\"ts\":" + trace_us(at.ns) + ",\"args\":{\"value\":" + num(value) + "}}");
}

std::string Trace::json(std::string_view title) const {
  std::string out =
      "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"title\":" + trace_quote(title) +
      ",\"from_s\":" + num(from_.seconds()) + ",\"events\":" + std::to_string(events_) +
      ",\"event_limit\":" + std::to_string(max_events_) +
      ",\"truncated_at_s\":" + (truncated_ ? num(truncated_at_.seconds()) : std::string("null")) +
      "},\n\"traceEvents\":[\n";
  for (size_t i = 0; i < lines_.size(); ++i) {
    out += lines_[i];
    out += i + 1 < lines_.size() ? ",\n" : "\n";
  }
  out += "]}\n";
  return out;
}

}  // namespace mmsim::sim
