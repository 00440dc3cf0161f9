#include "workload/result.h"

namespace mmsim::workload {

TaskResult task_result(const sched::Task& task, std::string program, std::vector<uint64_t> counters,
                       std::optional<numa::ProcSchedNuma> numa, double end_s) {
  TaskResult tr;
  tr.pid = task.pid;
  tr.tgid = task.tgid;
  tr.ppid = task.ppid;
  tr.comm = task.comm;
  tr.program = std::move(program);
  tr.cpu = task.cpu.v;
  tr.node = task.node.v;
  tr.times = task.times;
  tr.min_flt = task.min_flt;
  tr.maj_flt = task.maj_flt;
  tr.nvcsw = task.nvcsw;
  tr.nivcsw = task.nivcsw;
  tr.start_s = task.start_time.seconds();
  tr.exit_s = task.state == sched::TaskState::kDead ? task.exit_time.seconds() : end_s;
  tr.counters = std::move(counters);
  if (numa) tr.numa = std::move(*numa);
  return tr;
}

std::vector<std::pair<std::string, int64_t>> vmstat_delta(const mm::VmStat& before,
                                                          const mm::VmStat& after) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (size_t i = 0; i < mm::VmStat::size(); ++i) {
    if (!after.shown(i)) continue;  // not in this kernel's /proc/vmstat
    out.emplace_back(std::string(mm::VmStat::name(i)), after.at(i) - before.at(i));
  }
  return out;
}

}  // namespace mmsim::workload
