#include "sim/event_queue.h"

#include "sim/check.h"

namespace mmsim::sim {

void EventQueue::schedule(Tick at, EventHandler* h, uint32_t kind, uint64_t arg0, uint64_t arg1,
                          uint8_t priority) {
  check(at >= now_, "event scheduled in the past");
  heap_.push(Event{at, priority, seq_++, h, kind, arg0, arg1});
}

uint64_t EventQueue::run(Tick until) {
  uint64_t n = 0;
  stopped_ = false;
  while (!heap_.empty() && !stopped_) {
    if (heap_.top().time > until) break;
    Event e = heap_.top();
    heap_.pop();
    now_ = e.time;
    e.handler->on_event(*this, e);
    ++n;
    if ((n & 0xFFFF) == 0 && progress_) progress_(now_, processed_ + n);
  }
  processed_ += n;
  return n;
}

}  // namespace mmsim::sim
