#include "sim/host_cpus.h"

#include <algorithm>

namespace mmsim::sim {

HostCpus::HostCpus(int host_cpus, int vcpus, double slice_ns, double slice_cv, Rng rng)
    : slice_(slice_ns, slice_cv),
      busy_(static_cast<size_t>(vcpus), 0),
      on_(static_cast<size_t>(vcpus)) {
  if (host_cpus <= 0 || vcpus <= 0 || !(slice_ns > 0)) return;
  base_.on_cpu.assign(static_cast<size_t>(host_cpus), -1);
  base_.slice_end.assign(static_cast<size_t>(host_cpus), 0);
  base_.rng = rng;
  ahead_ = base_;
}

double HostCpus::next_switch(const State& s, int* cpu) {
  if (s.line.empty()) return kOpen;
  double first = kOpen;
  for (size_t c = 0; c < s.on_cpu.size(); ++c) {
    if (s.on_cpu[c] >= 0 && s.slice_end[c] < first) {
      first = s.slice_end[c];
      *cpu = static_cast<int>(c);
    }
  }
  return first;
}

void HostCpus::start_slice(State& s, int cpu, int vcpu, double at, bool record) {
  s.on_cpu[cpu] = vcpu;
  s.slice_end[cpu] = at + slice_(s.rng);
  if (record) open(vcpu, at);
}

void HostCpus::switch_at(State& s, int cpu, bool record) {
  const double at = s.slice_end[cpu];
  const int out = s.on_cpu[cpu];
  if (record) close(out, at);
  s.line.push_back(out);
  const int in = s.line.front();
  s.line.pop_front();
  start_slice(s, cpu, in, at, record);
  ++s.switches;
}

bool HostCpus::switch_by(State& s, double by_ns, bool record) {
  int cpu = 0;
  const double at = next_switch(s, &cpu);
  if (at == kOpen || at > by_ns) return false;
  switch_at(s, cpu, record);
  return true;
}

void HostCpus::commit(double at_ns) {
  // The switches up to at_ns were drawn already or are drawn now, the same
  // either way (base_ is where ahead_ started); those beyond are dropped.
  base_t_ = std::max(base_t_, at_ns);
  while (switch_by(base_, base_t_, base_.switches >= ahead_.switches)) {
  }
  for (size_t v = 0; v < on_.size(); ++v) {
    auto& runs = on_[v];
    while (!runs.empty() && runs.back().from > base_t_) runs.pop_back();
    // A run a dropped switch ended goes on if the vCPU holds a CPU now.
    if (!runs.empty() && runs.back().to > base_t_ &&
        std::find(base_.on_cpu.begin(), base_.on_cpu.end(), static_cast<int>(v)) !=
            base_.on_cpu.end())
      runs.back().to = kOpen;
  }
}

void HostCpus::set_busy(int vcpu, bool busy, double at_ns) {
  if (!on() || !known(vcpu) || busy_[vcpu] == busy) return;
  commit(at_ns);
  busy_[vcpu] = busy;
  State& s = base_;
  const double at = base_t_;
  if (busy) {
    const auto idle = std::find(s.on_cpu.begin(), s.on_cpu.end(), -1);
    if (idle != s.on_cpu.end()) {
      start_slice(s, static_cast<int>(idle - s.on_cpu.begin()), vcpu, at, true);
    } else {
      // The first in line: the running vCPUs' slices, renewed while nobody
      // waited, end within one from now (a uniform part of one drawn).
      if (s.line.empty()) {
        for (double& end : s.slice_end) {
          if (end < at) end = at + s.rng.uniform() * slice_(s.rng);
        }
      }
      s.line.push_back(vcpu);
    }
  } else {
    const auto held = std::find(s.on_cpu.begin(), s.on_cpu.end(), vcpu);
    if (held != s.on_cpu.end()) {
      close(vcpu, at);
      const int cpu = static_cast<int>(held - s.on_cpu.begin());
      if (s.line.empty()) {
        s.on_cpu[cpu] = -1;
      } else {
        const int in = s.line.front();
        s.line.pop_front();
        start_slice(s, cpu, in, at, true);
      }
    } else {
      s.line.erase(std::find(s.line.begin(), s.line.end(), vcpu));
    }
  }
  ahead_ = base_;
}

double HostCpus::done_at(int vcpu, double from_ns, double work_ns) {
  if (!on() || !(work_ns > 0) || !known(vcpu) || !busy_[vcpu]) return from_ns + work_ns;
  const auto& runs = on_[vcpu];
  // The first run that ends after from_ns (there is one: a busy vCPU runs or
  // waits in line, and one that waits is let in by a switch to come).
  size_t i =
      static_cast<size_t>(std::upper_bound(runs.begin(), runs.end(), from_ns,
                                           [](double t, const Interval& r) { return t < r.to; }) -
                          runs.begin());
  double at = from_ns, left = work_ns;
  for (;;) {
    while (i >= runs.size()) {
      if (!switch_by(ahead_, kOpen, true)) return at + left;  // (cannot happen: see above)
    }
    const double start = std::max(at, runs[i].from);
    // An open run ends at a switch not drawn yet: draw until it ends or
    // holds the work.
    while (runs[i].to == kOpen) {
      if (!switch_by(ahead_, start + left, true)) return start + left;
    }
    if (start + left <= runs[i].to) return start + left;
    left -= runs[i].to - start;
    at = runs[i].to;
    ++i;
  }
}

bool HostCpus::running_at(int vcpu, double at_ns) {
  if (!on()) return true;
  if (!known(vcpu) || !busy_[vcpu]) return false;
  // Draw the schedule past at_ns, then look.
  while (switch_by(ahead_, at_ns, true)) {
  }
  for (const Interval& r : on_[vcpu])
    if (r.from <= at_ns && at_ns < r.to) return true;
  return false;
}

}  // namespace mmsim::sim
