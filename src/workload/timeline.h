// The counter timeline: every sample_interval of simulated time, the vmstat
// counters of kTimelineCounters (as changes since the run began), the tasks
// in D state and the first process's memory.stat.
#pragma once

#include <cstdint>
#include <vector>

#include "memcg/memcg.h"
#include "mm/vmstat.h"
#include "sim/event_queue.h"
#include "workload/result.h"

namespace mmsim::workload {

class TimelineSampler final : public sim::EventHandler {
 public:
  // What a sample reads from the running world.
  class Source {
   public:
    virtual ~Source() = default;
    virtual uint32_t tasks_in_d() const = 0;
    virtual bool tasks_alive() const = 0;
    // Pages in use on each node (a trace's counter tracks).
    virtual std::vector<uint64_t> node_used_pages() const { return {}; }
  };

  // `memcg_id`: the memcg whose memory.stat is sampled (if memcg is on).
  // At most `max_rows` samples: the one after them stops the run instead
  // (full() is then true).
  TimelineSampler(sim::EventQueue& queue, Tick interval, uint64_t max_rows,
                  const mm::VmStat& vmstat, const memcg::Controller& memcg, uint32_t memcg_id,
                  const Source& source);
  // Takes `base` as the counters' zero and schedules the first sample.
  void start(const mm::VmStat& base);
  // The samples up to `end_s`.
  std::vector<Sample> samples_until(double end_s) const;
  bool full() const { return full_; }

  void on_event(sim::EventQueue& q, const sim::Event& e) override;

 private:
  sim::EventQueue& queue_;
  Tick interval_;
  uint64_t max_rows_;
  bool full_ = false;
  const mm::VmStat& vmstat_;
  const memcg::Controller& memcg_;
  uint32_t memcg_id_;
  const Source& source_;
  mm::VmStat base_;
  std::vector<Sample> samples_;
};

}  // namespace mmsim::workload
