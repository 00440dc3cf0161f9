// The discrete-event core: a queue ordered by (time, priority, sequence), so
// events at the same time run in a fixed order. Knows nothing about memory.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "sim/types.h"

namespace mmsim::sim {

class EventQueue;

struct Event {
  Tick time;
  uint8_t priority = 0;  // lower runs first at equal time
  uint64_t seq = 0;      // insertion order breaks remaining ties
  class EventHandler* handler = nullptr;
  uint32_t kind = 0;  // handler-defined
  uint64_t arg0 = 0;  // handler-defined, e.g. a task id
  uint64_t arg1 = 0;  // handler-defined, e.g. a generation to drop stale events
};

// Something that receives events. Contract: on_event may schedule further
// events but never at a time earlier than the event it handles.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(EventQueue& q, const Event& e) = 0;
};

class EventQueue {
 public:
  void schedule(Tick at, EventHandler* h, uint32_t kind, uint64_t arg0 = 0, uint64_t arg1 = 0,
                uint8_t priority = 0);
  // Runs events in order until the queue is empty or the next one is later than
  // `until`. Returns the number of events processed.
  uint64_t run(Tick until = Tick::max());
  // Time of the earliest pending event, or Tick::max() when empty.
  Tick next_time() const { return heap_.empty() ? Tick::max() : heap_.top().time; }
  Tick now() const { return now_; }
  bool empty() const { return heap_.empty(); }
  uint64_t processed() const { return processed_; }
  // Ends run() after the current event.
  void stop() { stopped_ = true; }
  // Calls f(now, events processed) after every 2^16th event of run(): a
  // progress display's hook, which must not touch the simulation.
  void on_progress(std::function<void(Tick, uint64_t)> f) { progress_ = std::move(f); }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      if (a.priority != b.priority) return a.priority > b.priority;
      return a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  Tick now_{};
  uint64_t seq_ = 0;
  uint64_t processed_ = 0;
  bool stopped_ = false;
  std::function<void(Tick, uint64_t)> progress_;
};

}  // namespace mmsim::sim
