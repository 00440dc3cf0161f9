#include "sim/noise.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mmsim::sim {

namespace {

// The standard normal quantile, by bisection on erfc (run once per table).
double normal_quantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 80; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// Quantile points i / n of the distribution are taken at (i + 0.5) / (n + 1),
// which keeps both ends finite.
double quantile_p(int i, int n) { return (i + 0.5) / (n + 1); }

struct StdNormal {
  static constexpr int kPoints = 1024;
  std::array<double, kPoints + 1> q{};
  StdNormal() {
    for (int i = 0; i <= kPoints; ++i) q[i] = normal_quantile(quantile_p(i, kPoints));
  }
  double operator()(Rng& rng) const {
    const double x = rng.uniform() * kPoints;
    const int i = static_cast<int>(x);
    return q[i] + (q[i + 1] - q[i]) * (x - i);
  }
};

const StdNormal& std_normal() {
  static const StdNormal n;
  return n;
}

// A uniform factor of mean 1 and coefficient of variation cv (<= 0.5 keeps it
// positive): sqrt(3) cv is the half-width of a uniform with that deviation.
double jitter_factor(Rng& rng, double cv) {
  return 1 + cv * std::sqrt(3.0) * (2 * rng.uniform() - 1);
}

}  // namespace

Lognormal::Lognormal(double mean, double cv) : mean_(mean) {
  if (!(mean > 0)) return;
  const double s2 = std::log1p(cv * cv);
  const double s = std::sqrt(s2);
  static_assert(kPoints == StdNormal::kPoints);
  const StdNormal& z = std_normal();
  for (int i = 0; i <= kPoints; ++i) q_[i] = std::exp(-s2 / 2 + s * z.q[i]);
  // The table's own mean (linear between points), scaled to the mean asked.
  double sum = 0;
  for (int i = 0; i < kPoints; ++i) sum += (q_[i] + q_[i + 1]) / 2;
  const double scale = mean / (sum / kPoints);
  for (double& v : q_) v *= scale;
}

double Lognormal::operator()(Rng& rng) const {
  if (!(mean_ > 0)) return 0;
  const double x = rng.uniform() * kPoints;
  const int i = static_cast<int>(x);
  return q_[i] + (q_[i + 1] - q_[i]) * (x - i);
}

Noise::Noise(const NoiseConfig& c)
    : c_(c),
      round_robin_(c.enabled && c.host_cpus > 0 && c.host_slice_ns > 0),
      // Tables only for a run that draws from them.
      fork_(c.enabled ? c.fork_latency_ns : 0, c.fork_latency_cv),
      clone_(c.enabled ? c.clone_latency_ns : 0, c.clone_latency_cv),
      wakeup_(c.enabled ? c.wakeup_latency_ns : 0, c.wakeup_latency_cv),
      irq_(c.enabled ? c.irq_duration_ns : 0, c.irq_duration_cv),
      irq_busy_(c.enabled ? c.irq_busy_duration_ns : 0, c.irq_busy_duration_cv),
      jitter_half_width_(c.cost_jitter_cv * std::sqrt(3.0)),
      base_per_ns_(c.irq_duration_ns > 0 ? c.irq_rate_hz * 1e-9 : 0),
      busy_unit_per_ns_(c.enabled && c.irq_busy_duration_ns > 0 ? c.irq_busy_rate_hz * 1e-9 : 0),
      irq_per_ns_(base_per_ns_) {}

double Noise::start_delay_ns(Rng& rng, bool fork) const {
  if (!c_.enabled) return 0;
  return fork ? fork_(rng) : clone_(rng);
}

double Noise::wakeup_delay_ns(Rng& rng) const { return c_.enabled ? wakeup_(rng) : 0; }

double Noise::long_kernel_op_ns(Rng& rng, double ns) const {
  return ns * (c_.cost_jitter_cv > 0 ? jitter_factor(rng, c_.cost_jitter_cv) : 1) +
         interruptions_ns(rng, ns);
}

double Noise::long_user_factor(Rng& rng, double ns) const {
  double f = 1;
  if (c_.cost_jitter_cv > 0) {
    // Work of a quantum or less varies by the whole cv (no square root: a
    // faulted page's access is priced this way once per fault).
    const double cv = ns <= c_.jitter_quantum_ns
                          ? c_.cost_jitter_cv
                          : c_.cost_jitter_cv / std::sqrt(ns / c_.jitter_quantum_ns);
    f = jitter_factor(rng, cv);
  }
  return f + interruptions_ns(rng, ns) / ns;
}

double Noise::interruptions_ns(Rng& rng, double span_ns) const {
  // One after the other: the draws' order is the stream's.
  double ns = poisson_sum(rng, base_per_ns_ * span_ns, irq_, c_.irq_duration_cv);
  ns += poisson_sum(rng, busy_per_ns(busy_) * span_ns, irq_busy_, c_.irq_busy_duration_cv);
  return ns;
}

double Noise::poisson_sum(Rng& rng, double lambda, const Lognormal& length, double cv) {
  if (!(lambda > 0) || !(length.mean() > 0)) return 0;
  // A span much shorter than the interval between interruptions has one with
  // probability lambda (two or more: under lambda^2 / 2): no exp() per page.
  if (lambda < 1e-3) return rng.uniform() < lambda ? length(rng) : 0;
  uint64_t k = 0;
  if (lambda < 30) {
    // Inversion of the Poisson distribution.
    double p = std::exp(-lambda), cdf = p;
    const double u = rng.uniform();
    while (u > cdf && k < 1000) {
      ++k;
      p *= lambda / static_cast<double>(k);
      cdf += p;
    }
  } else {
    k = static_cast<uint64_t>(
        std::max(0.0, std::round(lambda + std::sqrt(lambda) * std_normal()(rng))));
  }
  if (k <= 32) {
    double sum = 0;
    for (uint64_t i = 0; i < k; ++i) sum += length(rng);
    return sum;
  }
  // Many: their sum is normal to a good approximation.
  const double kd = static_cast<double>(k);
  const double sd = length.mean() * cv;
  return std::max(0.0, kd * length.mean() + std::sqrt(kd) * sd * std_normal()(rng));
}

}  // namespace mmsim::sim

namespace mmsim::sim {

namespace {

const std::vector<NoiseParam> kParams = {
    {"fork_latency", &NoiseConfig::fork_latency_ns, 0, 1e9, "ns",
     "mean extra delay before a forked child first runs, beyond the modelled fork",
     "the median of three runs of `noise_probe 400000` (tools/noise) on the development host, a "
     "2-vCPU KVM guest, 2026-12-02 (docs/noise.md): fork.excess_mean_ns, the time from fork() to "
     "the child's first instruction beyond its fastest 1%"},
    {"fork_latency_cv", &NoiseConfig::fork_latency_cv, 0, 10, "",
     "coefficient of variation of fork_latency (lognormal)",
     "the median of three runs of `noise_probe 400000` (tools/noise) on the development host, a "
     "2-vCPU KVM guest, 2026-12-02 (docs/noise.md): fork.excess_cv"},
    {"clone_latency", &NoiseConfig::clone_latency_ns, 0, 1e9, "ns",
     "mean extra delay before a new thread first runs, beyond the modelled clone",
     "the median of three runs of `noise_probe 400000` (tools/noise) on the development host, a "
     "2-vCPU KVM guest, 2026-12-02 (docs/noise.md): clone.excess_mean_ns (pthread_create to the "
     "thread's first instruction, beyond the fastest 1%)"},
    {"clone_latency_cv", &NoiseConfig::clone_latency_cv, 0, 10, "",
     "coefficient of variation of clone_latency (lognormal)",
     "the median of three runs of `noise_probe 400000` (tools/noise) on the development host, a "
     "2-vCPU KVM guest, 2026-12-02 (docs/noise.md): clone.excess_cv"},
    {"wakeup_latency", &NoiseConfig::wakeup_latency_ns, 0, 1e9, "ns",
     "mean extra delay from a wakeup to the task running, beyond the modelled context switch",
     "the median of three runs of `noise_probe 400000` (tools/noise) on the development host, a "
     "2-vCPU KVM guest, 2026-12-02 (docs/noise.md): wakeup.excess_mean_ns (a pipe write to the "
     "reader's return, beyond the fastest 1%)"},
    {"wakeup_latency_cv", &NoiseConfig::wakeup_latency_cv, 0, 10, "",
     "coefficient of variation of wakeup_latency (lognormal)",
     "the median of three runs of `noise_probe 400000` (tools/noise) on the development host, a "
     "2-vCPU KVM guest, 2026-12-02 (docs/noise.md): wakeup.excess_cv"},
    {"cost_jitter_cv", &NoiseConfig::cost_jitter_cv, 0, 0.5, "",
     "spread of each kernel operation's cost and of user work per jitter_quantum (a uniform "
     "factor of mean 1)",
     "the median of three runs of `noise_probe 400000` (tools/noise) on the development host, a "
     "2-vCPU KVM guest, 2026-12-02 (docs/noise.md): fwq.plain_cv, the spread of uninterrupted 14 "
     "us fixed work quanta (FWQ, Sottile and Minnich, Cluster 2004)"},
    {"jitter_quantum", &NoiseConfig::jitter_quantum_ns, 1, 1e12, "ns",
     "the length of user work whose cost varies independently by cost_jitter_cv",
     "the quantum of the measurement of cost_jitter_cv (tools/noise/noise_probe sizes it to "
     "about 10 us)"},
    {"irq_rate", &NoiseConfig::irq_rate_hz, 0, 1e7, "Hz",
     "interruptions per CPU per second (timer ticks and device interrupts)",
     "the median of three runs of `noise_probe 400000` (tools/noise) on the development host, a "
     "2-vCPU KVM guest, 2026-12-02 (docs/noise.md): fwq.short.per_s, quanta stretched by 2.6-10 us "
     "(timer ticks, device interrupts); the long class (about 1,200/s of 40 us: the hypervisor "
     "taking the vCPU) is left out, as a bare-metal server has none"},
    {"irq_duration", &NoiseConfig::irq_duration_ns, 0, 1e9, "ns",
     "mean length of an interruption, taken from the interrupted task",
     "the median of three runs of `noise_probe 400000` (tools/noise) on the development host, a "
     "2-vCPU KVM guest, 2026-12-02 (docs/noise.md): fwq.short.mean_ns"},
    {"irq_duration_cv", &NoiseConfig::irq_duration_cv, 0, 10, "",
     "coefficient of variation of irq_duration (lognormal)",
     "the median of three runs of `noise_probe 400000` (tools/noise) on the development host, a "
     "2-vCPU KVM guest, 2026-12-02 (docs/noise.md): fwq.short.cv"},
    {"irq_busy_rate", &NoiseConfig::irq_busy_rate_hz, 0, 1e7, "Hz",
     "more interruptions per CPU per second of its work for each other busy CPU (a guest's host "
     "taking its vCPUs off its cores in turns)",
     "0: a real machine. `mmsim validate` measures it in the guest: what its probes on the "
     "scenario's busy vCPUs lost beyond the share and beyond what one probe alone lost"},
    {"irq_busy_duration", &NoiseConfig::irq_busy_duration_ns, 0, 1e9, "ns",
     "mean length of an irq_busy_rate interruption",
     "0: a real machine. `mmsim validate` measures it in the guest (the busy probes' mean; with "
     "the host's round robin, that of the shorter of what they lost beyond a lone probe)"},
    {"irq_busy_duration_cv", &NoiseConfig::irq_busy_duration_cv, 0, 10, "",
     "coefficient of variation of irq_busy_duration (lognormal)",
     "0: a real machine. `mmsim validate` measures it in the guest (the busy probes')"},
    {"host_cpus", &NoiseConfig::host_cpus, 0, 4096, "",
     "the host's cores that the machine's vCPUs share: while more of its CPUs are busy, each "
     "runs at this share of its speed (0: none shared, a real machine)",
     "0: a real machine. `mmsim validate` sets the host's online CPUs for a guest with more vCPUs",
     true},
    {"host_slice", &NoiseConfig::host_slice_ns, 0, 1e10, "ns",
     "the host's CPUs run the busy vCPUs round robin in slices of this mean length: exactly "
     "host_cpus of them at a time, the others waiting (0: fluid sharing)",
     "0: fluid. `mmsim validate` sets it from the guest's probes when the scenario keeps more "
     "vCPUs busy than the host has CPUs: the longest of what the busy probes lost beyond a lone "
     "probe, a turn off, is B / host_cpus - 1 slices"},
    {"host_slice_cv", &NoiseConfig::host_slice_cv, 0, 10, "",
     "coefficient of variation of host_slice (lognormal)",
     "0. `mmsim validate` measures it in the guest (the busy probes' turns off)"},
};

}  // namespace

std::span<const NoiseParam> noise_params() { return kParams; }

bool noise_param_shown(const NoiseConfig& c, const NoiseParam& p) {
  if (p.key.starts_with("host_slice")) return c.host_cpus > 0 && c.host_slice_ns > 0;
  if (p.key.starts_with("host_")) return c.host_cpus > 0;
  if (p.key.starts_with("irq_busy_")) return c.irq_busy_rate_hz > 0;
  return true;
}

}  // namespace mmsim::sim
