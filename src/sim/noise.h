// Run-to-run variation ([noise]): the sources that make a real machine's
// repeated runs differ and keep its threads from running in lockstep. Each
// source is one parameter row (noise_params) with its default and where the
// default comes from; `--no-noise` turns them all off for exact lockstep.
//
// Every draw comes from a stream of the run's seed (one per task, one for the
// machine), so the same scenario and seed give the same bytes, and a
// different seed an honestly different run. Noise adds no events: it changes
// the times of those that happen anyway, and where the run starts.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sim/rng.h"

namespace mmsim::sim {

struct NoiseConfig {
  bool enabled = true;
  // The tick grid's phase: one offset for every CPU, uniform over a tick
  // (the kernel aligns all CPUs' ticks to the jiffy unless skew_tick=1; when
  // the run starts against that grid is chance).
  bool tick_phase = true;
  // The CPU of the shell that starts mmsim native, uniform over the
  // machine's CPUs (off: CPU 0). It decides the CPU mmsim-exec's collector
  // runs on (sched::RunQueues::launched_cpu), and so the node its first
  // task starts on: in guest runs as often the one as the other.
  bool launch_cpu = true;
  // Extra delay before a new task first runs, beyond the modelled fork or
  // clone path: its mean and coefficient of variation (lognormal).
  double fork_latency_ns = 119921;
  double fork_latency_cv = 1.42;
  double clone_latency_ns = 2296;
  double clone_latency_cv = 4.65;
  // Extra delay between a wakeup and the woken task running, beyond the
  // modelled context switch (lognormal).
  double wakeup_latency_ns = 5543;
  double wakeup_latency_cv = 2.80;
  // Each kernel operation's cost, and each stretch of user work per
  // `jitter_quantum_ns` of it, is scaled by an independent factor of mean 1
  // and this coefficient of variation (uniform; at most 0.5).
  double cost_jitter_cv = 0.024;
  double jitter_quantum_ns = 10000;
  // Interruptions (timer and device interrupts, other threads of the host):
  // a Poisson process per CPU at this rate, each of this mean length and cv
  // (lognormal), taking the interrupted task's time.
  double irq_rate_hz = 432;
  double irq_duration_ns = 8303;
  double irq_duration_cv = 0.041;
  // More interruptions the more of the machine's CPUs are busy: while B are,
  // each takes irq_busy_rate x (B - 1) more a second of its work, each of
  // this mean length and cv (lognormal). A guest's host takes its busy vCPUs
  // off its cores in turns beyond the fair share (host_cpus) and runs its
  // own threads among them; a lone vCPU loses far less. 0 (the default): a
  // real machine, whose CPUs take their own interrupts whatever the others
  // do. `mmsim validate` measures it in the guest.
  // SIMPLIFICATION: linear in the busy count, measured at 1 and at the
  // scenario's peak, extrapolated beyond it.
  double irq_busy_rate_hz = 0;
  double irq_busy_duration_ns = 0;
  double irq_busy_duration_cv = 0;
  // The machine is a guest whose vCPUs share its host's host_cpus cores:
  // while B of its CPUs are busy (a task on their run queue), each makes
  // progress at min(1, host_cpus / B) of its speed (processor sharing, the
  // host's CFS sharing its cores fairly among the vCPU threads that want
  // them; an idle vCPU halts and wants none). 0 host CPUs (the default): a
  // real machine, each CPU its own. `mmsim validate` sets it for a guest
  // with more vCPUs than its host's online CPUs.
  // SIMPLIFICATION (host_slice 0): fluid sharing; the host's turns are its
  // slices (ms), which a vCPU's work sees as a mean rate, not as whole turns
  // off.
  double host_cpus = 0;
  // The host's CPUs run the busy vCPUs round robin in slices of this mean
  // length and cv (lognormal) instead (sim::HostCpus): exactly host_cpus of
  // B busy run at a time, each a slice in turn, and the others wait, B /
  // host_cpus - 1 slices on average. Turns part vCPUs that fluid sharing
  // keeps in step (four writers racing for the same pages), and the vCPUs
  // that run while others are off run at full speed. 0 (the default):
  // fluid. `mmsim validate` measures it in the guest.
  double host_slice_ns = 0;
  double host_slice_cv = 0;
};

// One [noise] key: its field, range, unit, meaning and the source of its
// default.
struct NoiseParam {
  std::string_view key;
  double NoiseConfig::*field;
  double lo, hi;
  std::string_view unit;  // "ns" keys take durations ("5us"); the rest numbers
  std::string_view doc;
  std::string_view source;
  bool whole = false;  // a count (of CPUs): no fraction
};

// The numeric [noise] keys (`enabled` and `tick_phase` are booleans); the
// defaults are NoiseConfig's.
std::span<const NoiseParam> noise_params();
// Whether a report shows the key: the host_* keys only when the machine's
// vCPUs share a host's cores (host_cpus above 0), host_slice* only when
// they are run round robin, the irq_busy_* keys only when busy CPUs add
// interruptions (irq_busy_rate above 0).
bool noise_param_shown(const NoiseConfig& c, const NoiseParam& p);

// A positive random variable of a given mean and coefficient of variation,
// lognormal, drawn by its quantile table: one uniform draw and no
// transcendental function per sample (wakeups are as frequent as faults).
class Lognormal {
 public:
  Lognormal() = default;
  Lognormal(double mean, double cv);
  double operator()(Rng& rng) const;
  double mean() const { return mean_; }

 private:
  static constexpr int kPoints = 1024;
  std::array<double, kPoints + 1> q_{};  // quantiles at i / kPoints, rescaled to the mean
  double mean_ = 0;
};

// The wall time a guest's vCPU takes per unit of its work while `busy` of
// its CPUs share the host's `host_cpus` cores (0: a real machine): above 1
// when they outnumber them (NoiseConfig::host_cpus). Round robin
// (host_slice), the mean over the host's turns.
inline double host_share_factor(double host_cpus, int busy) {
  return host_cpus > 0 && busy > host_cpus ? busy / host_cpus : 1;
}

// The draws of a run: what every source adds to a time or a cost.
class Noise {
 public:
  explicit Noise(const NoiseConfig& c);
  const NoiseConfig& config() const { return c_; }
  bool on() const { return c_.enabled; }
  // A new task's delay before it first runs (fork: a new mm).
  double start_delay_ns(Rng& rng, bool fork) const;
  double wakeup_delay_ns(Rng& rng) const;
  // The machine's busy CPUs from now on (irq_busy_rate's rate follows them; 1 before the first
  // call).
  void set_busy(int busy) {
    busy_ = busy;
    irq_per_ns_ = base_per_ns_ + busy_per_ns(busy);
  }
  // The host's CPUs run the busy vCPUs round robin (host_slice): the
  // caller prices their work by a sim::HostCpus.
  bool round_robin() const { return round_robin_; }
  // What prices work while `busy` CPUs are busy: the host's share (fluid or
  // round robin) and the interruptions' rate. Work priced at one busy count
  // is repriced when the machine moves to another that prices differently;
  // round robin, every move above host_cpus does (the line changes).
  bool prices_alike(int a, int b) const {
    if (round_robin_ && a != b && (a > c_.host_cpus || b > c_.host_cpus)) return false;
    return host_share_factor(a) == host_share_factor(b) && busy_per_ns(a) == busy_per_ns(b);
  }
  // A kernel operation of `ns`: jittered, plus an interruption when one
  // falls inside it (ns is short against 1 / irq_rate_hz).
  // (Faults and zaps each take one: the short case is inline.)
  double kernel_op_ns(Rng& rng, double ns) const {
    if (!c_.enabled || !(ns > 0)) return ns;
    if (irq_per_ns_ * ns < 1e-3) return ns * short_factor(rng, ns);
    return long_kernel_op_ns(rng, ns);
  }
  // The factor that stretches `ns` of user work: its jitter (the mean of
  // ns / jitter_quantum_ns independent factors) and the interruptions that
  // fall in it.
  double user_factor(Rng& rng, double ns) const {
    if (!c_.enabled || !(ns > 0)) return 1;
    if (ns <= c_.jitter_quantum_ns && irq_per_ns_ * ns < 1e-3) return short_factor(rng, ns);
    return long_user_factor(rng, ns);
  }
  // The factor that stretches a vCPU's work while `busy` of the machine's
  // CPUs are busy: the fluid share (sim::host_share_factor); 1 without noise
  // or round robin (sim::HostCpus prices it).
  double host_share_factor(int busy) const {
    return c_.enabled && !round_robin_ ? sim::host_share_factor(c_.host_cpus, busy) : 1;
  }

 private:
  double long_kernel_op_ns(Rng& rng, double ns) const;
  double long_user_factor(Rng& rng, double ns) const;
  double interruptions_ns(Rng& rng, double span_ns) const;
  // The summed lengths of a Poisson number of mean `lambda` interruptions.
  static double poisson_sum(Rng& rng, double lambda, const Lognormal& length, double cv);
  // The factor of a span shorter than a quantum and than 1/1000 of the
  // interval between interruptions: its jitter, and one interruption with
  // probability rate x span. One draw gives both uniforms (32 bits each).
  double short_factor(Rng& rng, double ns) const {
    const uint64_t r = rng.next();
    const double u_jitter = static_cast<double>(r >> 32) * 0x1p-32;
    const double u_irq = static_cast<double>(r & 0xFFFFFFFFu) * 0x1p-32;
    double f = 1 + jitter_half_width_ * (2 * u_jitter - 1);
    // At most one interruption in a span much shorter than their interval;
    // the same uniform says of which kind.
    if (u_irq < irq_per_ns_ * ns) [[unlikely]] {
      const Lognormal& kind = u_irq < base_per_ns_ * ns ? irq_ : irq_busy_;
      f += kind(rng) / ns;
    }
    return f;
  }
  // irq_busy_rate's interruptions per ns of work at `busy` busy CPUs.
  double busy_per_ns(int busy) const { return busy > 1 ? busy_unit_per_ns_ * (busy - 1) : 0; }
  NoiseConfig c_;
  bool round_robin_;  // the host's CPUs round robin (host_slice)
  Lognormal fork_, clone_, wakeup_, irq_, irq_busy_;
  double jitter_half_width_;  // cv x sqrt(3): a uniform factor's half-width
  double base_per_ns_;        // irq_rate's interruptions per ns of a CPU's time
  double busy_unit_per_ns_;   // irq_busy_rate's, per ns, per other busy CPU
  double irq_per_ns_;         // irq_rate's and irq_busy_rate's at the current busy count
  int busy_ = 1;
};

// A per-task or per-purpose stream of the run's seed.
inline Rng noise_stream(uint64_t seed, uint64_t stream) {
  return Rng(seed * 0x9e3779b97f4a7c15ULL ^ (stream + 0x632be59bd9b4e019ULL));
}

}  // namespace mmsim::sim
