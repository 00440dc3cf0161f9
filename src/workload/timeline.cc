#include "workload/timeline.h"

#include <algorithm>

namespace mmsim::workload {

namespace {
constexpr uint8_t kSamplePriority = 2;  // after the tasks' events of the same instant
constexpr uint32_t kSample = 5;
}  // namespace

TimelineSampler::TimelineSampler(sim::EventQueue& queue, Tick interval, uint64_t max_rows,
                                 const mm::VmStat& vmstat, const memcg::Controller& memcg,
                                 uint32_t memcg_id, const Source& source)
    : queue_(queue),
      interval_(interval),
      max_rows_(max_rows),
      vmstat_(vmstat),
      memcg_(memcg),
      memcg_id_(memcg_id),
      source_(source) {}

void TimelineSampler::start(const mm::VmStat& base) {
  base_ = base;
  if (interval_.ns > 0) queue_.schedule(interval_, this, kSample, 0, 0, kSamplePriority);
}

void TimelineSampler::on_event(sim::EventQueue&, const sim::Event& e) {
  if (samples_.size() >= max_rows_) {
    full_ = true;
    queue_.stop();
    return;
  }
  Sample smp;
  smp.t_s = e.time.seconds();
  for (size_t i = 0; i < kTimelineCounters.size(); ++i)
    smp.vm[i] = vmstat_[kTimelineCounters[i]] - base_[kTimelineCounters[i]];
  smp.tasks_in_d = source_.tasks_in_d();
  smp.node_used = source_.node_used_pages();
  if (memcg_.enabled()) {
    const memcg::MemCgroup g = memcg_.file_view(memcg_id_);
    smp.memcg = {g.cache, g.mapped_file, g.pgpgin};
  }
  samples_.push_back(smp);
  if (source_.tasks_alive())
    queue_.schedule(e.time + interval_, this, kSample, 0, 0, kSamplePriority);
}

std::vector<Sample> TimelineSampler::samples_until(double end_s) const {
  std::vector<Sample> out = samples_;
  std::erase_if(out, [&](const Sample& smp) { return smp.t_s > end_s + 1e-9; });
  return out;
}

}  // namespace mmsim::workload
