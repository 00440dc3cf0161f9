// Measures the run-to-run variation sources of [noise] on the host it runs
// on, so that their defaults come from a measurement (docs/noise.md):
//
// - fixed work quanta (FWQ, Sottile & Minnich, Cluster 2004): the same
//   ~10 us loop timed many times; the spread of the undisturbed quanta is the
//   per-operation cost jitter, the quanta that take much longer are
//   interruptions (their rate per second of work and mean extra length);
// - wake-up latency: a thread sleeping in read(2) on a pipe, woken by a
//   write from another thread, from the write to its return;
// - clone and fork latency: from the call in the parent to the child's
//   first instruction;
// - page faults: each first write to a page of fresh anonymous memory
//   (base pages), timed one by one; the spread of those no interruption
//   stretched is the kernel operations' cost jitter (its batched work: the
//   per-CPU page lists refilled from the buddy allocator, LRU and memcg
//   batches, cache misses);
// - the user's pace: a memset of a hot 64 KiB buffer, and mmsim-exec's own
//   summing loops (-O2 and -O0) over a hot 16 KiB, each timed many times
//   (the medians, per line or element): on hardware the cost profile's
//   memset_line_ns, sweep_elem_ns and sweep_elem_O0_ns, in a TCG guest the
//   emulation's pace; and a memset and the -O2 loop over 8-byte elements
//   of a 64 MiB ring in 256 KiB pieces (per page), the memory's part in
//   them (a TCG guest's software TLB); and a read of the clock.
//
// Prints one JSON object. Build: see tools/noise/README.md.
//
//   mmsim-noise-probe [QUANTA] [--wakeups N] [--clones N] [--forks N] [--faults N] [--user N]
//
// QUANTA fixed work quanta (default 200000), and each other measurement's
// samples (defaults 5000, 2000, 500, 65536 pages and 2000; 0 leaves it out,
// its JSON fields then 0): `mmsim validate` runs a short one in its guests.
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "exec/sweep.h"

namespace {

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct Summary {
  double mean = 0, cv = 0, median = 0, p99 = 0;
  // Beyond the fastest 1%: what varies (the excess's mean and cv).
  double p1 = 0, excess_mean = 0, excess_cv = 0;
};

Summary summarise(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.cv = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) / s.mean : 0;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.p99 = v[v.size() * 99 / 100];
  s.p1 = v[v.size() / 100];
  s.excess_mean = s.mean - s.p1;
  s.excess_cv = s.excess_mean > 0 ? s.cv * s.mean / s.excess_mean : 0;
  return s;
}

// A sample longer than the median by 2 us or 20% was interrupted (the
// quanta's rule, and the faults').
double interrupted_above(double median) { return median + std::max(2000.0, 0.2 * median); }

volatile uint64_t sink;

// One quantum of dependent integer work.
void quantum(uint64_t iters) {
  uint64_t x = 88172645463325252ULL;
  for (uint64_t i = 0; i < iters; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  sink = x;
}

int pipe_fd[2];
size_t g_wakeups = 0;  // samples the reader takes
std::atomic<int64_t> sent_at{0};

void* reader(void* arg) {
  auto* out = static_cast<std::vector<double>*>(arg);
  char c;
  for (size_t i = 0; i < g_wakeups; ++i) {
    if (read(pipe_fd[0], &c, 1) != 1) break;
    out->push_back(static_cast<double>(now_ns() - sent_at.load()));
  }
  return nullptr;
}

int64_t* child_start;

void* thread_start(void*) {
  *child_start = now_ns();
  return nullptr;
}

// The median of `samples` timings of fn(), each over `units` lines,
// elements or pages, per unit; fn runs three times first, untimed (under a
// JIT its first runs include its translation).
template <typename Fn>
double per_unit(size_t samples, double units, Fn fn) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> t;
  t.reserve(samples);
  for (size_t i = 0; i < samples; ++i) {
    const int64_t t0 = now_ns();
    fn();
    t.push_back(static_cast<double>(now_ns() - t0) / units);
  }
  return summarise(std::move(t)).median;
}

struct UserPace {
  double memset_line_ns = 0, sweep_elem_ns = 0, sweep_elem_O0_ns = 0;
  double memset_ring_page_ns = 0, sweep_ring_page_ns = 0;
  double clock_ns = 0;  // one clock_gettime(CLOCK_MONOTONIC)
};

UserPace user_pace(size_t samples) {
  UserPace u;
  if (samples == 0) return u;
  constexpr size_t kHotMemset = 64 * 1024, kHotSweep = 16 * 1024;
  constexpr size_t kRing = 64 << 20, kPiece = 256 << 10;
  std::vector<unsigned char> hot(kHotMemset, 1);
  constexpr int kReads = 100;
  u.clock_ns = per_unit(samples, kReads, [] {
    for (int i = 0; i < kReads; ++i) sink = sink + static_cast<uint64_t>(now_ns());
  });
  u.memset_line_ns = per_unit(samples, kHotMemset / 64.0, [&] {
    std::memset(hot.data(), 0, kHotMemset);
    asm volatile("" ::: "memory");  // the stores happen (as mmsim-exec's)
  });
  u.sweep_elem_ns = per_unit(samples, kHotSweep / 4.0, [&] {
    sink = sink + mmsim::exec::sweep_read(hot.data(), kHotSweep, 4).sum;
  });
  u.sweep_elem_O0_ns = per_unit(samples, kHotSweep / 4.0, [&] {
    sink = sink + mmsim::exec::sweep_read_O0(hot.data(), kHotSweep, 4).sum;
  });
  auto* ring = static_cast<unsigned char*>(
      mmap(nullptr, kRing, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (ring == MAP_FAILED) return u;
  std::memset(ring, 1, kRing);  // faulted in: the memsets below time only the stores
  size_t next = 0;
  u.memset_ring_page_ns = per_unit(samples, kPiece / 4096.0, [&] {
    std::memset(ring + next, 0, kPiece);
    asm volatile("" ::: "memory");
    next = (next + kPiece) % kRing;
  });
  u.sweep_ring_page_ns = per_unit(samples, kPiece / 4096.0, [&] {
    sink = sink + mmsim::exec::sweep_read(ring + next, kPiece, 8).sum;
    next = (next + kPiece) % kRing;
  });
  munmap(ring, kRing);
  return u;
}

}  // namespace

int main(int argc, char** argv) {
  int quanta = 200000;
  size_t wakeups = 5000, clones = 2000, forks = 500, fault_pages = 65536, user = 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    size_t* n = a == "--wakeups"  ? &wakeups
                : a == "--clones" ? &clones
                : a == "--forks"  ? &forks
                : a == "--faults" ? &fault_pages
                : a == "--user"   ? &user
                                  : nullptr;
    if (n && i + 1 < argc) {
      *n = std::strtoull(argv[++i], nullptr, 10);
    } else if (!n && !a.empty() && a[0] != '-') {
      quanta = std::max(1, std::atoi(argv[i]));
    } else {
      std::fprintf(stderr,
                   "usage: %s [QUANTA] [--wakeups N] [--clones N] [--forks N] [--faults N] "
                   "[--user N]\n",
                   argv[0]);
      return 2;
    }
  }
  // Size the quantum to about 10 us, after a first call: under a JIT (a
  // TCG guest) the first run of the loop includes its translation, which
  // would stop the sizing at a quantum a few times too short, and a short
  // quantum counts the emulation's own jitter as interruptions.
  uint64_t iters = 1000;
  quantum(iters);
  for (;;) {
    const int64_t t0 = now_ns();
    quantum(iters);
    if (now_ns() - t0 > 10000) break;
    iters *= 2;
  }
  std::vector<double> q;
  q.reserve(static_cast<size_t>(quanta));
  const int64_t fwq0 = now_ns();
  for (int i = 0; i < quanta; ++i) {
    const int64_t t0 = now_ns();
    quantum(iters);
    q.push_back(static_cast<double>(now_ns() - t0));
  }
  const int64_t fwq1 = now_ns();
  const double fwq_s = static_cast<double>(fwq1 - fwq0) * 1e-9;
  std::vector<double> sorted = q;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const double cut = interrupted_above(median);
  std::vector<double> plain, extra, shorter, longer;
  for (double x : q) (x > cut ? extra : plain).push_back(x > cut ? x - median : x);
  // Two classes of interruption: short ones (a timer tick, a device
  // interrupt: under 10 us) and long ones (a hypervisor taking the vCPU,
  // another task running).
  for (double x : extra) (x < 10000 ? shorter : longer).push_back(x);
  const Summary ps = summarise(plain), es = summarise(extra);
  const Summary ss = summarise(shorter), ls = summarise(longer);
  // The interruptions by length, in buckets that double from 2 us (the
  // first holds all under 2 us, the last all from 2^20 x 1 us on): each
  // bucket's count and the sum and sum of squares of its lengths, so that
  // `mmsim validate` can tell what K busy probes lose beyond a lone one,
  // length by length (docs/noise.md, "The host's turns").
  constexpr int kBuckets = 21;
  struct Bucket {
    size_t count = 0;
    double sum = 0, sum_sq = 0;
  };
  std::vector<Bucket> hist(kBuckets);
  auto bucket_from = [](int b) { return b == 0 ? 0.0 : 1000.0 * std::ldexp(1.0, b); };
  for (double x : extra) {
    int b = 0;
    while (b + 1 < kBuckets && x >= bucket_from(b + 1)) ++b;
    hist[b].count += 1;
    hist[b].sum += x;
    hist[b].sum_sq += x * x;
  }
  std::string hist_json;
  for (int b = 0; b < kBuckets; ++b) {
    if (hist[b].count == 0) continue;
    char one[160];
    std::snprintf(
        one, sizeof one, "%s{\"from_ns\":%.0f,\"count\":%zu,\"sum_ns\":%.0f,\"sum_sq_ns2\":%.6e}",
        hist_json.empty() ? "" : ",", bucket_from(b), hist[b].count, hist[b].sum, hist[b].sum_sq);
    hist_json += one;
  }

  std::vector<double> wake;
  wake.reserve(wakeups);
  g_wakeups = wakeups;
  if (pipe(pipe_fd) != 0) return 1;
  pthread_t th;
  pthread_create(&th, nullptr, reader, &wake);
  for (size_t i = 0; i < wakeups; ++i) {
    usleep(200);  // let the reader go to sleep
    sent_at.store(now_ns());
    if (write(pipe_fd[1], "x", 1) != 1) break;
  }
  pthread_join(th, nullptr);
  const Summary ws = summarise(wake);

  child_start = static_cast<int64_t*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  std::vector<double> clone_lat, fork_lat;
  for (size_t i = 0; i < clones; ++i) {
    const int64_t t0 = now_ns();
    pthread_t c;
    pthread_create(&c, nullptr, thread_start, nullptr);
    pthread_join(c, nullptr);
    clone_lat.push_back(static_cast<double>(*child_start - t0));
  }
  for (size_t i = 0; i < forks; ++i) {
    const int64_t t0 = now_ns();
    const pid_t p = fork();
    if (p == 0) {
      *child_start = now_ns();
      _exit(0);
    }
    waitpid(p, nullptr, 0);
    fork_lat.push_back(static_cast<double>(*child_start - t0));
  }
  const Summary cs = summarise(clone_lat), fs = summarise(fork_lat);

  // First-touch faults: 64K base pages (THP off for the range), each write
  // timed; the same writes to the pages once mapped give the timing's own
  // cost, taken off. Faults split as the quanta do: over the median by 2 us
  // or 20% is an interruption.
  std::vector<double> fault_lat, touch_lat;
  if (fault_pages > 0) {
    auto* area = static_cast<char*>(mmap(nullptr, fault_pages * 4096, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (area == MAP_FAILED) return 1;
    madvise(area, fault_pages * 4096, MADV_NOHUGEPAGE);
    fault_lat.reserve(fault_pages);
    touch_lat.reserve(fault_pages);
    for (size_t i = 0; i < fault_pages; ++i) {
      const int64_t t0 = now_ns();
      *reinterpret_cast<volatile char*>(area + i * 4096) = 1;
      fault_lat.push_back(static_cast<double>(now_ns() - t0));
    }
    for (size_t i = 0; i < fault_pages; ++i) {
      const int64_t t0 = now_ns();
      *reinterpret_cast<volatile char*>(area + i * 4096) = 2;
      touch_lat.push_back(static_cast<double>(now_ns() - t0));
    }
    munmap(area, fault_pages * 4096);
    std::sort(touch_lat.begin(), touch_lat.end());
    const double touch_median = touch_lat[touch_lat.size() / 2];
    for (double& x : fault_lat) x = std::max(0.0, x - touch_median);
  }
  std::vector<double> fault_sorted = fault_lat;
  std::sort(fault_sorted.begin(), fault_sorted.end());
  // The i-th of n in 100ths, 0 when none was measured.
  auto at = [&](size_t pct) {
    return fault_sorted.empty() ? 0.0 : fault_sorted[fault_sorted.size() * pct / 100];
  };
  const double fault_median = at(50);
  const double fault_cut = interrupted_above(fault_median);
  std::vector<double> fault_plain;
  size_t fault_interrupted = 0;
  for (double x : fault_lat) {
    if (x > fault_cut) {
      ++fault_interrupted;
    } else {
      fault_plain.push_back(x);
    }
  }
  const Summary fps = summarise(fault_plain);
  const UserPace up = user_pace(user);

  auto latency = [](const char* name, size_t n, const Summary& x, const char* tail) {
    std::printf(
        " \"%s\":{\"samples\":%zu,\"mean_ns\":%.0f,\"cv\":%.3f,\"median_ns\":%.0f,\"p1_ns\":%.0f,"
        "\"p99_ns\":%.0f,\"excess_mean_ns\":%.0f,\"excess_cv\":%.3f}%s\n",
        name, n, x.mean, x.cv, x.median, x.p1, x.p99, x.excess_mean, x.excess_cv, tail);
  };
  std::printf(
      "{\"fwq\":{\"quanta\":%d,\"median_ns\":%.0f,\"plain_cv\":%.4f,"
      "\"interruptions\":%zu,\"interruptions_per_s\":%.1f,\"interruption_mean_ns\":%.0f,"
      "\"interruption_cv\":%.3f,\"interruption_median_ns\":%.0f,\"interruption_p99_ns\":%.0f,"
      "\"overhead\":%.5f,\"start_ns\":%lld,\"end_ns\":%lld,\n  "
      "\"short\":{\"per_s\":%.1f,\"mean_ns\":%.0f,\"cv\":%.3f},"
      "\"long\":{\"per_s\":%.1f,\"mean_ns\":%.0f,\"cv\":%.3f},\n  "
      "\"work_ns\":%.0f,\"by_length\":[%s]},\n",
      quanta, median, ps.cv, extra.size(), static_cast<double>(extra.size()) / fwq_s, es.mean,
      es.cv, es.median, es.p99, es.mean * static_cast<double>(extra.size()) * 1e-9 / fwq_s,
      static_cast<long long>(fwq0), static_cast<long long>(fwq1),
      static_cast<double>(shorter.size()) / fwq_s, ss.mean, ss.cv,
      static_cast<double>(longer.size()) / fwq_s, ls.mean, ls.cv,
      median * static_cast<double>(quanta), hist_json.c_str());
  latency("wakeup", wake.size(), ws, ",");
  latency("clone", clone_lat.size(), cs, ",");
  latency("fork", fork_lat.size(), fs, ",");
  std::printf(
      " \"fault\":{\"samples\":%zu,\"median_ns\":%.0f,\"p10_ns\":%.0f,\"p90_ns\":%.0f,"
      "\"p99_ns\":%.0f,\"interrupted\":%zu,\"plain_mean_ns\":%.0f,\"plain_cv\":%.3f},\n",
      fault_lat.size(), fault_median, at(10), at(90), at(99), fault_interrupted, fps.mean, fps.cv);
  std::printf(
      " \"user\":{\"samples\":%zu,\"memset_line_ns\":%.3f,\"sweep_elem_ns\":%.3f,"
      "\"sweep_elem_O0_ns\":%.3f,\"memset_ring_page_ns\":%.0f,\"sweep_ring_page_ns\":%.0f,"
      "\"clock_ns\":%.0f}}\n",
      user, up.memset_line_ns, up.sweep_elem_ns, up.sweep_elem_O0_ns, up.memset_ring_page_ns,
      up.sweep_ring_page_ns, up.clock_ns);
  return 0;
}
