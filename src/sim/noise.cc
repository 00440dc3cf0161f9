#include "sim/noise.h"

#include <algorithm>
#include <cmath>
#include <numeric>
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
      // Tables only for a run that draws from them.
      fork_(c.enabled ? c.fork_latency_ns : 0, c.fork_latency_cv),
      clone_(c.enabled ? c.clone_latency_ns : 0, c.clone_latency_cv),
      wakeup_(c.enabled ? c.wakeup_latency_ns : 0, c.wakeup_latency_cv),
      irq_(c.enabled ? c.irq_duration_ns : 0, c.irq_duration_cv),
      jitter_half_width_(c.cost_jitter_cv * std::sqrt(3.0)),
      irq_per_ns_(c.irq_duration_ns > 0 ? c.irq_rate_hz * 1e-9 : 0) {}

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
  if (!(c_.irq_rate_hz > 0) || !(irq_.mean() > 0)) return 0;
  const double lambda = c_.irq_rate_hz * span_ns * 1e-9;
  // A span much shorter than the interval between interruptions has one with
  // probability lambda (two or more: under lambda^2 / 2): no exp() per page.
  if (lambda < 1e-3) return rng.uniform() < lambda ? irq_(rng) : 0;
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
    for (uint64_t i = 0; i < k; ++i) sum += irq_(rng);
    return sum;
  }
  // Many: their sum is normal to a good approximation.
  const double kd = static_cast<double>(k);
  const double sd = irq_.mean() * c_.irq_duration_cv;
  return std::max(0.0, kd * irq_.mean() + std::sqrt(kd) * sd * std_normal()(rng));
}

HostTurns::HostTurns(int host_cpus, int vcpus, double slice_ns, double phase_ns, uint64_t seed)
    : on_(host_cpus > 0 && vcpus > host_cpus && slice_ns > 0),
      h_(std::max(host_cpus, 1)),
      v_(std::max(vcpus, 1)),
      slice_(slice_ns > 0 ? slice_ns : 1),
      phase_(phase_ns),
      seed_(seed) {
  const int64_t g = std::gcd(static_cast<int64_t>(h_), static_cast<int64_t>(v_));
  period_ = v_ / g;
  on_per_period_ = h_ / g;
}

bool HostTurns::runs_in(int seat, int64_t k) const {
  const int64_t round = k / period_;
  if (round != round_) {
    // The round's order: a shuffle drawn from the seed and the round alone,
    // so any slice can be asked for in any order.
    order_.resize(static_cast<size_t>(v_));
    std::iota(order_.begin(), order_.end(), 0);
    Rng rng(seed_ ^ (static_cast<uint64_t>(round) * 0x9e3779b97f4a7c15ULL + 0x7f4a7c15ULL));
    for (int i = v_ - 1; i > 0; --i) {
      std::swap(order_[static_cast<size_t>(i)], order_[rng.below(static_cast<uint64_t>(i) + 1)]);
    }
    place_.resize(static_cast<size_t>(v_));
    for (int i = 0; i < v_; ++i) place_[static_cast<size_t>(order_[static_cast<size_t>(i)])] = i;
    round_ = round;
  }
  const int64_t j = k - round * period_;
  const int64_t r = (place_[static_cast<size_t>(seat)] - j * h_ % v_ + v_) % v_;
  return r < h_;
}

bool HostTurns::runs(int seat, double t) const {
  if (!on_) return true;
  return runs_in(seat % v_, static_cast<int64_t>(std::floor((t + phase_) / slice_)));
}

double HostTurns::finish(int seat, double t, double work_ns) const {
  if (!on_ || !(work_ns > 0)) return t + std::max(work_ns, 0.0);
  seat %= v_;
  // Times relative to the grid: slice k spans [k S, (k + 1) S).
  const double x = t + phase_;
  int64_t k = static_cast<int64_t>(std::floor(x / slice_));
  double w = work_ns;
  if (runs_in(seat, k)) {
    const double left = static_cast<double>(k + 1) * slice_ - x;
    if (w <= left) return t + w;
    w -= left;
  }
  // Slice by slice to the round's end, then whole rounds at once (keeping
  // the last for the walk), so the cost does not grow with the work.
  const double per_round = static_cast<double>(on_per_period_) * slice_;
  for (++k;; ++k) {
    if (k % period_ == 0) {
      if (const double n = std::floor(w / per_round) - 1; n > 0) {
        k += static_cast<int64_t>(n) * period_;
        w -= n * per_round;
      }
    }
    if (!runs_in(seat, k)) continue;
    if (w <= slice_) return static_cast<double>(k) * slice_ + w - phase_;
    w -= slice_;
  }
}

namespace {

// A seat's turns off over many rounds: how many, and how many slices off.
std::pair<double, double> offs_over_rounds(int host_cpus, int vcpus) {
  if (host_cpus <= 0 || vcpus <= host_cpus) return {0, 0};
  const HostTurns h(host_cpus, vcpus, 1, 0, 1);
  constexpr int64_t kSlices = 200000;
  int64_t offs = 0, off = 0;
  for (int64_t k = 0; k < kSlices; ++k) {
    const bool on = h.runs(0, static_cast<double>(k) + 0.5);
    off += !on;
    offs += on && !h.runs(0, static_cast<double>(k) + 1.5);
  }
  return {static_cast<double>(offs) / kSlices, static_cast<double>(off) / kSlices};
}

}  // namespace

double HostTurns::offs_per_slice(int host_cpus, int vcpus) {
  return offs_over_rounds(host_cpus, vcpus).first;
}

double HostTurns::mean_off_slices(int host_cpus, int vcpus) {
  const auto [offs, off] = offs_over_rounds(host_cpus, vcpus);
  return offs > 0 ? off / offs : 0;
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
    {"host_cpus", &NoiseConfig::host_cpus, 0, 4096, "",
     "the host's cores that the machine's vCPUs share (0: none shared, a real machine)",
     "0: a real machine. `mmsim validate` sets the host's online CPUs when the guest's noise "
     "probe ran more busy vCPUs than that",
     true},
    {"host_vcpus", &NoiseConfig::host_vcpus, 0, 4096, "",
     "the busy vCPUs that take turns on the host_cpus cores",
     "`mmsim validate`: the vCPUs its noise probe kept busy (the most tasks the simulation keeps "
     "busy at once)",
     true},
    {"host_slice", &NoiseConfig::host_slice_ns, 0, 1e9, "ns",
     "the length of a vCPU's turn on a host core",
     "`mmsim validate`: the probe's mean interruption over a turn off's mean length in slices "
     "(sim::HostTurns::mean_off_slices)"},
};

}  // namespace

std::span<const NoiseParam> noise_params() { return kParams; }

bool noise_param_shown(const NoiseConfig& c, const NoiseParam& p) {
  return c.host_cpus > 0 || !p.key.starts_with("host_");
}

}  // namespace mmsim::sim
