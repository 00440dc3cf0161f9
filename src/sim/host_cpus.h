// A guest's host ([noise] host_cpus with host_slice): its H CPUs run the
// guest's busy vCPU threads round robin, each for a slice, the rest waiting
// in line; an idle vCPU (no task on its run queue) halts and waits for
// nothing. Exactly min(H, B) of B busy vCPUs run at any time, so while one
// is off the others run: what fluid sharing, or turns drawn for each vCPU
// on its own, cannot give.
//
// The schedule is generated as far as it is asked (a task priced ahead of
// the event queue's time asks about its future) with the busy set of the
// moment; a change of the busy set at time T keeps the schedule up to T and
// draws it anew from there. The draws come from one stream of the run's
// seed, in the order the slices start, so a run's schedule is a function of
// its seed and busy changes alone.
//
// SIMPLIFICATION: first come, first served. The host's CFS or EEVDF picks
// by virtual runtime and lets a waking thread in early; with threads of
// equal weight that busy themselves, each runs a slice in turn, as here. A
// busy change earlier than the last one is taken at the last one's time.
#pragma once

#include <deque>
#include <limits>
#include <vector>

#include "sim/noise.h"
#include "sim/rng.h"

namespace mmsim::sim {

class HostCpus {
 public:
  HostCpus() = default;
  // `host_cpus` CPUs under `vcpus` vCPUs, slices of `slice_ns` mean and
  // `slice_cv` (lognormal), drawn from `rng`. All vCPUs idle at time 0.
  HostCpus(int host_cpus, int vcpus, double slice_ns, double slice_cv, Rng rng);
  bool on() const { return !base_.on_cpu.empty(); }
  // vCPU `vcpu` wants a host CPU (busy) or halts, from `at_ns`.
  void set_busy(int vcpu, bool busy, double at_ns);
  // When busy vCPU `vcpu`, working from `from_ns`, has run `work_ns` on a
  // host CPU (from_ns + work_ns while it holds one throughout).
  double done_at(int vcpu, double from_ns, double work_ns);
  // Whether `vcpu` holds a host CPU at `at_ns` (tests and checks).
  bool running_at(int vcpu, double at_ns);

 private:
  struct Interval {
    double from, to;  // to: +inf while it runs with no end drawn yet
  };
  // The host at one time: what each CPU runs (-1: idle) and until when, the
  // line of waiting vCPUs, the stream and the switches made so far.
  struct State {
    std::vector<int> on_cpu;
    std::vector<double> slice_end;
    std::deque<int> line;
    Rng rng{0};
    uint64_t switches = 0;
  };
  // The time of `s`'s next switch (+inf: none while nobody waits).
  static double next_switch(const State& s, int* cpu);
  // Makes `s`'s switch on `cpu`; records its intervals if `record`.
  void switch_at(State& s, int cpu, bool record);
  // Makes `s`'s next switch if one comes by `by_ns`; false if none does.
  bool switch_by(State& s, double by_ns, bool record);
  // Whether `vcpu` is one of the guest's.
  bool known(int vcpu) const { return vcpu >= 0 && static_cast<size_t>(vcpu) < busy_.size(); }
  // The host brought to `at_ns` (base_ then holds it), the schedule beyond
  // it dropped.
  void commit(double at_ns);
  void open(int vcpu, double at) { on_[vcpu].push_back({at, kOpen}); }
  void close(int vcpu, double at) { on_[vcpu].back().to = at; }
  void start_slice(State& s, int cpu, int vcpu, double at, bool record);

  static constexpr double kOpen = std::numeric_limits<double>::infinity();
  Lognormal slice_;
  State base_;  // at base_t_, after the last busy change
  double base_t_ = 0;
  State ahead_;  // the schedule drawn as far as asked
  std::vector<char> busy_;
  std::vector<std::vector<Interval>> on_;  // per vCPU, its runs in time order
};

}  // namespace mmsim::sim
