// A run's timeline for the Perfetto UI (ui.perfetto.dev) or chrome://tracing,
// in the Chrome JSON trace format: what each CPU ran, each task's state
// (running, runnable, sleeping, D with what it waits on), NUMA scan passes
// with the hinting faults since the last one, migrations and charge moves
// from start to end, kernel threads' passes, and counter tracks. Events are
// kept in the order the simulation makes them, so the same seed gives the
// same bytes. The slices and instants stop at a budget of events (the
// counters and the ends of what had begun go on), and the trace says where.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/types.h"

namespace mmsim::sim {

class Trace {
 public:
  // At most `max_events` slices and instants (0: no limit), those that begin
  // at or after `from`.
  explicit Trace(uint64_t max_events, Tick from = Tick()) : max_events_(max_events), from_(from) {}

  // Track names: a CPU with its node, a task under its process, a kernel thread.
  void name_cpu(uint16_t cpu, uint16_t node);
  void name_task(uint32_t pid, uint32_t tgid, std::string_view comm);
  // A task's state from `from` to `to`, on its process's track; a running
  // one also on its CPU's track. `detail` says what a D-state task waits on.
  void task_state(uint32_t pid, uint32_t tgid, uint16_t cpu, std::string_view comm,
                  std::string_view state, Tick from, Tick to, std::string_view detail);
  // A point event on a task's track; `args` is a JSON object's members
  // ("\"key\": value, ...") or empty.
  void task_instant(uint32_t pid, uint32_t tgid, std::string_view name, Tick at,
                    const std::string& args);
  // Work with a start and an end that may overlap others of its kind (a
  // migration, a charge move): its own async track in Perfetto.
  void begin(std::string_view category, uint64_t id, std::string_view name, Tick at,
             const std::string& args);
  void end(std::string_view category, uint64_t id, std::string_view name, Tick at,
           const std::string& args);
  // A kernel thread's pass (kswapd0, khugepaged), on its own track.
  void kthread(std::string_view thread, Tick from, Tick to, std::string_view name,
               const std::string& args);
  // A value of a counter track at `at` (never subject to the budget).
  void counter(std::string_view track, Tick at, double value);

  uint64_t events() const { return events_; }
  bool truncated() const { return truncated_; }
  Tick truncated_at() const { return truncated_at_; }
  // The whole trace, one event a line.
  std::string json(std::string_view title) const;

 private:
  // Whether a slice or an instant at `at` still fits the budget.
  bool admit(Tick at);
  void add(std::string line) { lines_.push_back(std::move(line)); }
  uint32_t kthread_tid(std::string_view thread);

  uint64_t max_events_;
  Tick from_;
  uint64_t events_ = 0;
  bool truncated_ = false;
  Tick truncated_at_{};
  std::vector<std::string> lines_;
  std::set<uint32_t> named_tgids_;
  std::set<std::pair<std::string, uint64_t>> open_;  // begun and not ended
  std::vector<std::string> kthreads_;
  std::vector<std::string> counters_;
};

// Chrome trace timestamps are microseconds: ns as "u.nnn", exactly.
std::string trace_us(int64_t ns);
// A JSON string literal (quotes and escapes).
std::string trace_quote(std::string_view s);

}  // namespace mmsim::sim
