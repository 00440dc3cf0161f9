// calibrate_paths.cc - time whole kernel paths that mmsim charges as one cost.
//
// calibrate.cc times building blocks (a zero-fill fault, a PTE zap, a page
// copy).  This companion times composite paths: an anonymous read fault
// (meant to map the shared zero page; the program checks whether it did), a
// tmpfs (shmem) fault with its fault-around batch in four mapping variants and
// with a single PTE, fork + exit + wait with and without a populated 64 MiB
// mapping, mmap + munmap of one page, a pipe ping-pong context switch,
// O_DIRECT storage reads, an uncontended test-and-set lock and the munmap of
// populated anonymous memory.
//
// Linux only.  Built by CMake as mmsim-calibrate-paths (it links mmsim_util,
// the project's statistics and timing helpers); `mmsim calibrate` runs it.
// By hand, from the repository root:
//   cmake --build build/release --target mmsim-calibrate-paths
//   build/release/tools/calibrate/mmsim-calibrate-paths [--runs N] [--out FILE]
// (or compile it with -O2 -pthread -Isrc together with src/util/*.cc).
//
// Every value is the median of N runs (default 9) that follow one discarded
// warm-up run; min and max over the N runs are given too.  Output is TOML on
// stdout (or FILE); progress goes to stderr.  A test that cannot run is
// reported as a "# <key> skipped: ..." comment; nothing is fatal.
//
// Temporary files (64 MiB in /dev/shm, 256 MiB in /var/tmp) are unlinked as
// soon as they are opened, so nothing is left behind even if the run dies.
// The process pins itself to CPU 0; children and threads inherit that.

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rows.h"
#include "util/stats.h"

namespace {

namespace util = mmsim::util;
namespace calibrate = mmsim::calibrate;

constexpr std::size_t kPg = 4096;
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kRegionBytes = 64 * kMiB;  // anon and shmem test regions
constexpr std::size_t kRegionPages = kRegionBytes / kPg;

int g_runs = 9;
volatile std::uint64_t g_keep;  // read loops store their sums here

long minor_faults() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string num(double v, int prec = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string slurp_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!std::getline(in, s)) return "";
  return s;
}

// "Key:   1234 kB" from /proc/self/status, in kB (-1 if absent).
long status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(key);
  while (std::getline(in, line))
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
      return std::atol(line.c_str() + n + 1);
  return -1;
}

long vma_count() {
  std::ifstream in("/proc/self/maps");
  std::string line;
  long n = 0;
  while (std::getline(in, line)) ++n;
  return n;
}

bool pin_to(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return sched_setaffinity(0, sizeof s, &s) == 0;
}

bool allow_cpus(int ncpus) {
  cpu_set_t s;
  CPU_ZERO(&s);
  for (int c = 0; c < ncpus && c < CPU_SETSIZE; ++c) CPU_SET(c, &s);
  return sched_setaffinity(0, sizeof s, &s) == 0;
}

// ------------------------------------------------------------------ results

calibrate::Rows g_results(36);

void put(const std::string& key, const std::vector<double>& samples, const std::string& method) {
  g_results.put(key, samples, method);
}
void skip(const std::string& key, const std::string& why) { g_results.skip(key, why); }
void note(const std::string& text) { g_results.note(text); }

// ------------------------------------------------------------------ host

struct HostFacts {
  std::string kernel, cpu_model, cpu_id, date, meltdown, thp_anon, thp_shmem;
  bool vm = false;
  long cpus = 0;
};

// The selected word of a sysfs choice list: "always [madvise] never" -> "madvise".
std::string bracketed(const std::string& s) {
  auto a = s.find('['), b = s.find(']');
  if (a == std::string::npos || b == std::string::npos || b < a) return s;
  return s.substr(a + 1, b - a - 1);
}

HostFacts host_facts() {
  HostFacts h;
  utsname u{};
  if (uname(&u) == 0) h.kernel = u.release;
  std::ifstream in("/proc/cpuinfo");
  std::string line, fam, mod, step;
  auto val = [&line] {
    auto c = line.find(':');
    return c == std::string::npos ? std::string() : line.substr(std::min(line.size(), c + 2));
  };
  while (std::getline(in, line) && !line.empty()) {  // first CPU only
    if (line.rfind("model name", 0) == 0) h.cpu_model = val();
    if (line.rfind("cpu family", 0) == 0) fam = val();
    if (line.rfind("model\t", 0) == 0) mod = val();
    if (line.rfind("stepping", 0) == 0) step = val();
    if (line.rfind("flags", 0) == 0) h.vm = line.find(" hypervisor") != std::string::npos;
  }
  h.cpu_id = "family " + fam + " model " + mod + " stepping " + step;
  h.cpus = sysconf(_SC_NPROCESSORS_ONLN);
  char d[32];
  std::time_t t = std::time(nullptr);
  std::strftime(d, sizeof d, "%Y-%m-%d", std::gmtime(&t));
  h.date = d;
  h.meltdown = slurp_line("/sys/devices/system/cpu/vulnerabilities/meltdown");
  h.thp_anon = bracketed(slurp_line("/sys/kernel/mm/transparent_hugepage/enabled"));
  h.thp_shmem = bracketed(slurp_line("/sys/kernel/mm/transparent_hugepage/shmem_enabled"));
  return h;
}

// Per-size (mTHP) shmem settings that are not "never", e.g. "2048kB=inherit".
std::string mthp_shmem_settings() {
  std::string out;
  for (int kb = 8; kb <= 2048 * 512; kb *= 2) {
    std::string v = slurp_line("/sys/kernel/mm/transparent_hugepage/hugepages-" +
                               std::to_string(kb) + "kB/shmem_enabled");
    if (v.empty()) continue;
    std::string sel = bracketed(v);
    if (sel != "never") out += (out.empty() ? "" : " ") + std::to_string(kb) + "kB=" + sel;
  }
  return out.empty() ? "all never" : out;
}

struct MountEntry {
  std::string device, dir, fstype, options;
};

// The /proc/mounts entry whose mount point is the longest prefix of path.
MountEntry mount_for(const std::string& path) {
  char real[PATH_MAX];
  std::string p = realpath(path.c_str(), real) ? real : path;
  std::ifstream in("/proc/mounts");
  MountEntry best;
  std::size_t best_len = 0;
  MountEntry e;
  std::string rest;
  while (in >> e.device >> e.dir >> e.fstype >> e.options) {
    std::getline(in, rest);
    bool under = e.dir == "/" || p == e.dir || p.rfind(e.dir + "/", 0) == 0;
    if (under && e.dir.size() >= best_len) {  // later entries shadow earlier ones
      best = e;
      best_len = e.dir.size();
    }
  }
  return best;
}

// Queue facts of a block device from sysfs ("/dev/vda" or a partition of it).
std::string block_queue_facts(const std::string& device) {
  if (device.rfind("/dev/", 0) != 0) return "not a /dev block device";
  std::string name = device.substr(5);
  char real[PATH_MAX];
  std::string base = "/sys/class/block/" + name;
  if (!realpath(base.c_str(), real)) return "no sysfs entry";
  std::string q = std::string(real) + "/queue/";
  if (access(q.c_str(), F_OK) != 0) q = std::string(real) + "/../queue/";
  std::string out = "rotational=" + slurp_line(q + "rotational");
  out += " scheduler=" + bracketed(slurp_line(q + "scheduler"));
  out += " max_sectors_kb=" + slurp_line(q + "max_sectors_kb");
  out += " logical_block_size=" + slurp_line(q + "logical_block_size");
  return out;
}

// ------------------------------------------------------------------ helpers

// Private anonymous mapping with THP (and mTHP) forbidden: one PTE per 4 KiB.
unsigned char* map_anon_small_pages(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, bytes, MADV_NOHUGEPAGE);
  return static_cast<unsigned char*>(p);
}

void write_every_page(unsigned char* p, std::size_t pages, unsigned seed) {
  volatile unsigned char* v = p;
  for (std::size_t i = 0; i < pages; ++i) v[i * kPg] = static_cast<unsigned char>(seed + i);
}

std::uint64_t read_every_page(const unsigned char* p, std::size_t pages) {
  const volatile unsigned char* v = p;
  std::uint64_t s = 0;
  for (std::size_t i = 0; i < pages; ++i) s += v[i * kPg];
  return s;
}

// ------------------------------------------------------------------ 1: zero-page read fault

// Distinct page frames among the first n pages of p, from /proc/self/pagemap
// (-1 when frame numbers are hidden, i.e. without CAP_SYS_ADMIN).
int distinct_frames(const unsigned char* p, int n) {
  int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return -1;
  std::vector<std::uint64_t> pfns;
  for (int i = 0; i < n; ++i) {
    std::uint64_t e = 0;
    off_t at = static_cast<off_t>((reinterpret_cast<std::uintptr_t>(p) / kPg + i) * 8);
    if (pread(fd, &e, 8, at) != 8) break;
    std::uint64_t pfn = e & ((std::uint64_t{1} << 55) - 1);
    if ((e >> 63) && pfn) pfns.push_back(pfn);
  }
  close(fd);
  if (pfns.size() != static_cast<std::size_t>(n)) return -1;
  std::sort(pfns.begin(), pfns.end());
  return static_cast<int>(std::unique(pfns.begin(), pfns.end()) - pfns.begin());
}

void zero_page_faults() {
  std::fprintf(stderr, "[zero page] read-fault 64 MiB of private anon memory\n");
  std::vector<double> per_fault, zap;
  std::vector<long> flt, rss_growth;
  int frames = -1;
  for (int r = 0; r <= g_runs; ++r) {
    unsigned char* p = map_anon_small_pages(kRegionBytes);
    if (!p) {
      skip("zero_page_fault_ns", sys_error("mmap"));
      return;
    }
    long rss0 = status_kb("RssAnon");
    long f0 = minor_faults();
    double t0 = util::now_ns();
    g_keep = read_every_page(p, kRegionPages);
    double t1 = util::now_ns();
    long faults = minor_faults() - f0;
    long rss1 = status_kb("RssAnon");
    if (r == 0) frames = distinct_frames(p, 8);
    double t2 = util::now_ns();
    munmap(p, kRegionBytes);
    double t3 = util::now_ns();
    if (r == 0) continue;
    per_fault.push_back((t1 - t0) / static_cast<double>(std::max(1L, faults)));
    zap.push_back((t3 - t2) / kRegionPages);
    flt.push_back(faults);
    rss_growth.push_back(rss1 - rss0);
  }
  auto [fmin, fmax] = std::minmax_element(flt.begin(), flt.end());
  auto [rmin, rmax] = std::minmax_element(rss_growth.begin(), rss_growth.end());
  // The zero page is not counted in RSS; real anonymous pages are.
  const bool zero_page_used = *rmax < static_cast<long>(kRegionBytes / 1024 / 4);
  put("zero_page_fault_ns", per_fault,
      "private anon 64 MiB (MADV_NOHUGEPAGE), read 1 byte/page; touch time / ru_minflt delta; " +
          std::string(zero_page_used
                          ? "each read fault maps the shared zero page (no allocation, no zeroing)"
                          : "WARNING: on this host the read faults did NOT map the zero page "
                            "(RssAnon grew by the whole region), so this is a read fault that "
                            "allocates and zeroes a page"));
  note("zero page: ru_minflt delta " + std::to_string(*fmin) + ".." + std::to_string(*fmax) +
       " per run for " + std::to_string(kRegionPages) + " pages (equal = 1 fault/page); RssAnon " +
       "grew " + std::to_string(*rmin) + ".." + std::to_string(*rmax) + " kB (0 = zero page)");
  note("zero page: first 8 read-faulted pages map " +
       (frames < 0 ? std::string("? (pagemap frames hidden)") : std::to_string(frames)) +
       " distinct page frame(s) (1 = zero page)");
  note("zero page: munmap of the read-faulted 64 MiB costs " + num(util::median(zap)) + " ns/page");
}

// ------------------------------------------------------------------ 2 + 3: shmem faults

constexpr std::size_t kSparseBytes = 256 * kMiB;  // sparse tmpfs file
constexpr std::size_t kSparseStride = 16;         // one cached page per 16 (= fault-around window)

// A tmpfs file with only every 16th page allocated: fault-around finds no
// other cached page in the window, so each read fault maps exactly one PTE
// without allocating anything (what a zero-page fault would be).
void shmem_single_pte_faults(double batch_fault_ns, double batch_pages) {
  const char* key = "shmem_fault_1pte_ns";
  char path[] = "/dev/shm/mmsim-paths-sparse-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    skip(key, sys_error("mkstemp /dev/shm"));
    return;
  }
  unlink(path);
  const std::size_t pages = kSparseBytes / kPg;
  const std::size_t present = pages / kSparseStride;
  std::vector<unsigned char> one(kPg, 0x5a);
  bool ok = ftruncate(fd, static_cast<off_t>(kSparseBytes)) == 0;
  for (std::size_t i = 0; ok && i < pages; i += kSparseStride)
    ok = pwrite(fd, one.data(), kPg, static_cast<off_t>(i * kPg)) == static_cast<ssize_t>(kPg);
  void* q = ok ? mmap(nullptr, kSparseBytes, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (q == MAP_FAILED) {
    skip(key, sys_error("sparse tmpfs file"));
    close(fd);
    return;
  }
  const volatile unsigned char* v = static_cast<unsigned char*>(q);
  std::vector<double> per_fault, ppf;
  for (int r = 0; r <= g_runs && ok; ++r) {
    long f0 = minor_faults();
    double t0 = util::now_ns();
    std::uint64_t s = 0;
    for (std::size_t i = 0; i < pages; i += kSparseStride) s += v[i * kPg];
    double t1 = util::now_ns();
    long faults = minor_faults() - f0;
    g_keep = s;
    ok = madvise(q, kSparseBytes, MADV_DONTNEED) == 0 && faults > 0;
    if (r == 0 || !ok) continue;
    per_fault.push_back((t1 - t0) / static_cast<double>(faults));
    ppf.push_back(static_cast<double>(present) / static_cast<double>(faults));
  }
  munmap(q, kSparseBytes);
  close(fd);
  if (!ok) {
    skip(key, "MADV_DONTNEED failed or no faults counted");
    return;
  }
  put(key, per_fault,
      "MAP_SHARED PROT_READ mapping of a sparse 256 MiB tmpfs file with only every 16th page "
      "cached; read those pages; touch time / ru_minflt delta = one fault that maps 1 PTE "
      "(fault-around finds nothing else), no allocation");
  note("shmem_fault_1pte: cached pages touched per fault = " + num(util::median(ppf), 2) +
       " (1.00 expected)");
  if (batch_fault_ns > 0 && batch_pages > 1.5)
    note("shmem: (shmem_fault_ns - shmem_fault_1pte_ns) / (pages per fault - 1) = " +
         num((batch_fault_ns - util::median(per_fault)) / (batch_pages - 1)) +
         " ns per extra fault-around PTE");
}

struct ShmemVariant {
  const char* key;  // prefix of the three keys
  int flags;        // MAP_SHARED or MAP_PRIVATE
  bool random;      // madvise(MADV_RANDOM)
  const char* what;
};

void shmem_faults() {
  std::fprintf(stderr, "[shmem] 64 MiB tmpfs file in /dev/shm, read faults\n");
  const ShmemVariant variants[] = {
      {"shmem", MAP_SHARED, false, "MAP_SHARED"},
      {"shmem_random", MAP_SHARED, true, "MAP_SHARED + MADV_RANDOM"},
      {"shmem_private", MAP_PRIVATE, false, "MAP_PRIVATE"},
      {"shmem_private_random", MAP_PRIVATE, true, "MAP_PRIVATE + MADV_RANDOM"},
  };
  auto skip_all = [&](const std::string& why) {
    for (const auto& v : variants)
      for (const char* suffix : {"_fault_ns", "_fault_pages", "_touch_per_page_ns"})
        skip(std::string(v.key) + suffix, why);
  };
  MountEntry m = mount_for("/dev/shm");
  if (m.fstype != "tmpfs") {
    skip_all("/dev/shm is not tmpfs (" + m.fstype + ")");
    return;
  }
  char path[] = "/dev/shm/mmsim-paths-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    skip_all(sys_error("mkstemp /dev/shm"));
    return;
  }
  unlink(path);
  std::vector<unsigned char> chunk(kMiB);
  for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<unsigned char>(i * 13 + 5);
  for (std::size_t off = 0; off < kRegionBytes; off += kMiB) {
    if (pwrite(fd, chunk.data(), kMiB, static_cast<off_t>(off)) != static_cast<ssize_t>(kMiB)) {
      skip_all(sys_error("write /dev/shm file"));
      close(fd);
      return;
    }
  }
  std::string huge_opt = "none";
  for (std::size_t a = 0; a < m.options.size();) {
    std::size_t b = m.options.find(',', a);
    std::string o = m.options.substr(a, b == std::string::npos ? std::string::npos : b - a);
    if (o.rfind("huge=", 0) == 0) huge_opt = o;
    a = b == std::string::npos ? m.options.size() : b + 1;
  }
  note("shmem: /dev/shm mount huge option: " + huge_opt + "; shmem_enabled=" +
       bracketed(slurp_line("/sys/kernel/mm/transparent_hugepage/shmem_enabled")) +
       "; per-size shmem_enabled: " + mthp_shmem_settings());
  std::string fab = slurp_line("/sys/kernel/debug/fault_around_bytes");
  note("shmem: fault_around_bytes = " + (fab.empty() ? std::string("unreadable (debugfs)") : fab));

  for (const auto& v : variants) {
    void* q = mmap(nullptr, kRegionBytes, PROT_READ, v.flags, fd, 0);
    if (q == MAP_FAILED) {
      for (const char* suffix : {"_fault_ns", "_fault_pages", "_touch_per_page_ns"})
        skip(std::string(v.key) + suffix, sys_error("mmap"));
      continue;
    }
    auto* p = static_cast<unsigned char*>(q);
    bool advice_ok = !v.random || madvise(p, kRegionBytes, MADV_RANDOM) == 0;
    std::vector<double> per_fault, per_page, pages_per_fault, zap;
    bool ok = advice_ok;
    for (int r = 0; r <= g_runs && ok; ++r) {
      long f0 = minor_faults();
      double t0 = util::now_ns();
      g_keep = read_every_page(p, kRegionPages);
      double t1 = util::now_ns();
      long faults = minor_faults() - f0;
      double t2 = util::now_ns();
      ok = madvise(p, kRegionBytes, MADV_DONTNEED) == 0 && faults > 0;
      double t3 = util::now_ns();
      if (r == 0) continue;
      per_fault.push_back((t1 - t0) / static_cast<double>(faults));
      per_page.push_back((t1 - t0) / kRegionPages);
      pages_per_fault.push_back(static_cast<double>(kRegionPages) / static_cast<double>(faults));
      zap.push_back((t3 - t2) / kRegionPages);
    }
    munmap(p, kRegionBytes);
    const std::string k = v.key;
    if (!ok) {
      for (const char* suffix : {"_fault_ns", "_fault_pages", "_touch_per_page_ns"})
        skip(k + suffix, advice_ok ? "MADV_DONTNEED failed or no faults counted"
                                   : sys_error("madvise(MADV_RANDOM)"));
      continue;
    }
    const std::string how = std::string(v.what) + " PROT_READ mapping of a 64 MiB tmpfs file in " +
                            "/dev/shm (written fully first, so all pages are in the page cache), " +
                            "read 1 byte/page, MADV_DONTNEED between runs";
    put(k + "_fault_ns", per_fault,
        how +
            "; touch time / ru_minflt delta (one fault incl. its "
            "fault-around batch)");
    put(k + "_fault_pages", pages_per_fault, "same loop; pages / ru_minflt delta");
    put(k + "_touch_per_page_ns", per_page, "same loop; touch time / pages");
    note(k + ": MADV_DONTNEED of the mapped range costs " + num(util::median(zap)) + " ns/page");
  }
  close(fd);
  shmem_single_pte_faults(g_results.median("shmem_fault_ns"),
                          g_results.median("shmem_fault_pages"));
}

// ------------------------------------------------------------------ 4: fork + exit + wait

// fork(); the child _exit(0)s at once; the parent reaps it.  ns, or -1 on failure.
double fork_exit_wait() {
  double t0 = util::now_ns();
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid < 0) return -1;
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  double t1 = util::now_ns();
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t1 - t0 : -1;
}

// Mean of n cycles, or -1.
double fork_cycles(int n) {
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    double c = fork_exit_wait();
    if (c < 0) return -1;
    sum += c;
  }
  return sum / n;
}

constexpr int kSmallForks = 100;  // per run
constexpr int kBigForks = 3;      // per run and variant

void fork_costs(const HostFacts& h) {
  std::fprintf(stderr, "[fork] fork + _exit + waitpid, small mm and with 64 MiB populated\n");
  note("fork: calibrator mm when forking small: " + std::to_string(vma_count()) + " VMAs, VmRSS " +
       std::to_string(status_kb("VmRSS")) + " kB, VmPTE " + std::to_string(status_kb("VmPTE")) +
       " kB");
  std::vector<double> small, big_fresh, big_stale, copy_fresh, copy_stale;
  std::string fail;
  for (int r = 0; r <= g_runs && fail.empty(); ++r) {
    double s = fork_cycles(kSmallForks);
    unsigned char* p = map_anon_small_pages(kRegionBytes);
    if (!p) {
      fail = sys_error("mmap");
      break;
    }
    write_every_page(p, kRegionPages, 1);
    // fresh: the parent re-dirties every page before each fork, so fork finds
    // writable, exclusive anon PTEs and must write-protect them (first fork of
    // a process).  stale: back-to-back forks; the PTEs are already read-only.
    double fresh = 0, stale = 0;
    for (int i = 0; i < kBigForks && fresh >= 0; ++i) {
      write_every_page(p, kRegionPages, static_cast<unsigned>(i));
      double c = fork_exit_wait();
      fresh = c < 0 ? -1 : fresh + c / kBigForks;
    }
    for (int i = 0; i < kBigForks && stale >= 0; ++i) {
      double c = fork_exit_wait();
      stale = c < 0 ? -1 : stale + c / kBigForks;
    }
    munmap(p, kRegionBytes);
    if (s < 0 || fresh < 0 || stale < 0) {
      fail = sys_error("fork/waitpid");
      break;
    }
    if (r == 0) continue;
    small.push_back(s);
    big_fresh.push_back(fresh);
    big_stale.push_back(stale);
    copy_fresh.push_back((fresh - s) / kRegionPages);
    copy_stale.push_back((stale - s) / kRegionPages);
  }
  if (!fail.empty()) {
    skip("fork_exit_wait_ns", fail);
    skip("fork_pte_copy_ns", fail);
    return;
  }
  put("fork_exit_wait_ns", small,
      "fork() of the calibrator (small mm, no big mappings), child _exit(0) at once, parent "
      "waitpid(); per cycle, mean of " +
          std::to_string(kSmallForks) + " cycles per run; parent and child pinned to CPU 0");
  put("fork_pte_copy_ns", copy_fresh,
      "same cycle with a written 64 MiB private anon mapping (MADV_NOHUGEPAGE) in the parent, "
      "re-dirtied before each fork; (cycle - small cycle of the same run) / 16384 pages = copy PTE "
      "+ write-protect parent PTE + child exit zap, per page");
  note("fork: 64 MiB cycle " + num(util::median(big_fresh) / 1e3) + " us with re-dirtied PTEs, " +
       num(util::median(big_stale) / 1e3) +
       " us back-to-back (PTEs already read-only, not exclusive): " +
       num(util::median(copy_stale)) + " ns/page");
  if (h.cpus >= 2 && allow_cpus(2)) {
    std::vector<double> spread;
    for (int r = 0; r <= g_runs; ++r) {
      double s = fork_cycles(kSmallForks);
      if (r > 0 && s > 0) spread.push_back(s);
    }
    pin_to(0);
    note("fork: small cycle with CPUs 0-1 allowed (child may start on the other CPU): " +
         num(util::median(spread)) + " ns");
  }
}

// ------------------------------------------------------------------ 5: mmap + munmap

constexpr int kMapPairs = 20000;

void mmap_munmap_cost() {
  std::fprintf(stderr, "[mmap] mmap + munmap of one untouched anon page\n");
  long before = vma_count();
  void* probe = mmap(nullptr, kPg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  long during = vma_count();
  if (probe != MAP_FAILED) munmap(probe, kPg);
  std::vector<double> v;
  for (int r = 0; r <= g_runs; ++r) {
    double t0 = util::now_ns();
    for (int i = 0; i < kMapPairs; ++i) {
      void* p = mmap(nullptr, kPg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) {
        skip("mmap_munmap_ns", sys_error("mmap"));
        return;
      }
      munmap(p, kPg);
    }
    double t1 = util::now_ns();
    if (r > 0) v.push_back((t1 - t0) / kMapPairs);
  }
  put("mmap_munmap_ns", v,
      "mmap(4 KiB, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS) + munmap, never touched; "
      "per pair");
  note(std::string("mmap: the new RW page ") +
       (during == before ? "merged into a neighbouring VMA (so munmap splits it again)"
                         : "got its own VMA (no merge)") +
       "; " + std::to_string(before) + " VMAs before");
  // PROT_READ only: unlike its read-write anonymous neighbours, it cannot merge.
  before = vma_count();
  probe = mmap(nullptr, kPg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  during = vma_count();
  if (probe != MAP_FAILED) munmap(probe, kPg);
  std::vector<double> ro;
  for (int r = 0; r <= g_runs; ++r) {
    double t0 = util::now_ns();
    for (int i = 0; i < kMapPairs; ++i) {
      void* p = mmap(nullptr, kPg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return;
      munmap(p, kPg);
    }
    double t1 = util::now_ns();
    if (r > 0) ro.push_back((t1 - t0) / kMapPairs);
  }
  note("mmap: the same pair with PROT_READ (" +
       std::string(during == before ? "merged too" : "own VMA, no merge/split") +
       "): " + num(util::median(ro)) + " ns");
}

// ------------------------------------------------------------------ 6: context switch

constexpr int kRoundTrips = 10000;  // per run

// Echo bytes from `in` to `out` until EOF.
void echo_loop(int in, int out) {
  char c;
  while (read(in, &c, 1) == 1)
    if (write(out, &c, 1) != 1) break;
}

// Time kRoundTrips ping-pongs over (to, from), g_runs + 1 times; ns per round trip.
bool ping_runs(int to, int from, std::vector<double>* rt) {
  char c = 'x';
  for (int r = 0; r <= g_runs; ++r) {
    double t0 = util::now_ns();
    for (int i = 0; i < kRoundTrips; ++i)
      if (write(to, &c, 1) != 1 || read(from, &c, 1) != 1) return false;
    double t1 = util::now_ns();
    if (r > 0) rt->push_back((t1 - t0) / kRoundTrips);
  }
  return true;
}

void context_switch_cost() {
  std::fprintf(stderr, "[switch] pipe ping-pong, both ends on CPU 0\n");
  int a[2], b[2];
  if (pipe(a) != 0 || pipe(b) != 0) {
    skip("context_switch_ns", sys_error("pipe"));
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    skip("context_switch_ns", sys_error("fork"));
    return;
  }
  if (pid == 0) {
    close(a[1]);
    close(b[0]);
    echo_loop(a[0], b[1]);
    _exit(sched_getcpu() == 0 ? 0 : 3);
  }
  close(a[0]);
  close(b[1]);
  std::vector<double> rt;
  bool ok = ping_runs(a[1], b[0], &rt) && sched_getcpu() == 0;
  close(a[1]);
  int st = 0;
  waitpid(pid, &st, 0);
  close(b[0]);
  if (!ok || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    skip("context_switch_ns", "ping-pong failed or an end was not on CPU 0");
    return;
  }
  std::vector<double> half;
  for (double x : rt) half.push_back(x / 2);
  put("context_switch_ns", half,
      "two processes pinned to CPU 0 ping-pong 1 byte over two pipes; round trip / 2 (each "
      "switch also carries one pipe write and one blocking read)");
  put("context_switch_round_trip_ns", rt, "same loop; one round trip (2 switches)");

  // Same with a thread of this process (no mm switch).
  int c[2], d[2];
  if (pipe(c) != 0 || pipe(d) != 0) return;
  std::thread t([&] { echo_loop(c[0], d[1]); });
  std::vector<double> trt;
  bool tok = ping_runs(c[1], d[0], &trt);
  close(c[1]);
  t.join();
  close(c[0]);
  close(d[0]);
  close(d[1]);
  if (tok)
    note("switch: between two threads of one process (same mm) on CPU 0: " +
         num(util::median(trt) / 2) + " ns per switch");
}

// ------------------------------------------------------------------ 7: O_DIRECT storage reads

constexpr std::size_t kDiskFileBytes = 256 * kMiB;
constexpr int kReads128k = 200;  // per run
constexpr int kReads4k = 1000;   // per run

void storage_reads() {
  std::fprintf(stderr, "[storage] O_DIRECT reads from a 256 MiB file in /var/tmp\n");
  MountEntry m = mount_for("/var/tmp");
  const std::string where = m.fstype + " on " + m.device + " (mounted at " + m.dir + ", " +
                            m.options + "; " + block_queue_facts(m.device) + ")";
  auto skip_both = [](const std::string& why) {
    skip("storage_read_128k_ns", why);
    skip("storage_read_4k_ns", why);
    skip("storage_write_128k_ns", why);
  };
  char path[] = "/var/tmp/mmsim-paths-XXXXXX";
  int tmp = mkstemp(path);
  if (tmp < 0) {
    skip_both(sys_error("mkstemp /var/tmp"));
    return;
  }
  int fd = open(path, O_RDWR | O_DIRECT);
  unlink(path);
  close(tmp);
  if (fd < 0) {
    skip_both(sys_error("open O_DIRECT"));
    return;
  }
  constexpr std::size_t kChunk = kMiB;
  void* buf = mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) {
    skip_both(sys_error("mmap buffer"));
    close(fd);
    return;
  }
  auto* b = static_cast<unsigned char*>(buf);
  std::mt19937_64 rng(2026);
  for (std::size_t i = 0; i < kChunk; i += 8) {
    std::uint64_t x = rng();
    std::memcpy(b + i, &x, 8);  // incompressible
  }
  double w0 = util::now_ns();
  for (std::size_t off = 0; off < kDiskFileBytes; off += kChunk) {
    b[0] = static_cast<unsigned char>(off >> 20);
    if (pwrite(fd, b, kChunk, static_cast<off_t>(off)) != static_cast<ssize_t>(kChunk)) {
      skip_both(sys_error("O_DIRECT pwrite"));
      munmap(buf, kChunk);
      close(fd);
      return;
    }
  }
  fsync(fd);
  double w1 = util::now_ns();
  note("storage: " + where);
  note("storage: writing the 256 MiB file (O_DIRECT, 1 MiB writes, fsync) ran at " +
       num(static_cast<double>(kDiskFileBytes) / (w1 - w0) * 1e3, 0) + " MB/s");
  // The flusher's writes are as sequential: the disk's time for 128 KiB.
  put("storage_write_128k_ns", {(w1 - w0) / static_cast<double>(kDiskFileBytes / (128 * 1024))},
      "O_DIRECT sequential writes of 1 MiB over 256 MiB and an fsync, per 128 KiB");

  auto measure = [&](const char* key, std::size_t size, int count) {
    const std::size_t slots = kDiskFileBytes / size;
    std::vector<double> per_run, all;
    for (int r = 0; r <= g_runs; ++r) {
      double sum = 0;
      for (int i = 0; i < count; ++i) {
        off_t off = static_cast<off_t>((rng() % slots) * size);
        double t0 = util::now_ns();
        ssize_t got = pread(fd, b, size, off);
        double t1 = util::now_ns();
        if (got != static_cast<ssize_t>(size)) {
          skip(key, sys_error("O_DIRECT pread"));
          return;
        }
        sum += t1 - t0;
        if (r > 0) all.push_back(t1 - t0);
      }
      if (r > 0) per_run.push_back(sum / count);
    }
    put(key, per_run,
        "O_DIRECT pread of " + std::to_string(size / 1024) + " KiB at random " +
            std::to_string(size / 1024) + " KiB-aligned offsets of a 256 MiB file in /var/tmp (" +
            m.fstype + " on " + m.device + "), queue depth 1; mean of " + std::to_string(count) +
            " reads per run");
    note(std::string(key) + ": single reads p50 " + num(util::percentile(all, 0.5) / 1e3) +
         " us, p90 " + num(util::percentile(all, 0.9) / 1e3) + " us, p99 " +
         num(util::percentile(all, 0.99) / 1e3) + " us");
  };
  measure("storage_read_128k_ns", 128 * 1024, kReads128k);
  measure("storage_read_4k_ns", 4096, kReads4k);
  munmap(buf, kChunk);
  close(fd);
}

// ------------------------------------------------------------------ 8: uncontended lock

constexpr long kLockPairs = 5000000;  // per run

struct alignas(64) PaddedFlag {
  std::atomic_flag f = ATOMIC_FLAG_INIT;
};
PaddedFlag g_flag;

__attribute__((noinline)) void take_release(std::atomic_flag& f, long n) {
  for (long i = 0; i < n; ++i) {
    while (f.test_and_set(std::memory_order_acquire)) {
    }
    f.clear(std::memory_order_release);
  }
}

void lock_cost() {
  std::fprintf(stderr, "[lock] uncontended atomic_flag\n");
  std::vector<double> v;
  for (int r = 0; r <= g_runs; ++r) {
    double t0 = util::now_ns();
    take_release(g_flag.f, kLockPairs);
    double t1 = util::now_ns();
    if (r > 0) v.push_back((t1 - t0) / kLockPairs);
  }
  put("lock_uncontended_ns", v,
      "single thread, std::atomic_flag test_and_set(acquire) + clear(release) in a loop (x86: "
      "xchg + plain store), per pair; line stays in L1");
}

// ------------------------------------------------------------------ 9: munmap of populated anon

void anon_munmap_cost() {
  std::fprintf(stderr, "[munmap] populated 64 MiB anon (4 KiB pages)\n");
  std::vector<double> v, ppf;
  for (int r = 0; r <= g_runs; ++r) {
    unsigned char* p = map_anon_small_pages(kRegionBytes);
    if (!p) {
      skip("munmap_anon_zap_free_ns", sys_error("mmap"));
      return;
    }
    long f0 = minor_faults();
    write_every_page(p, kRegionPages, static_cast<unsigned>(r));
    long faults = minor_faults() - f0;
    double t0 = util::now_ns();
    munmap(p, kRegionBytes);
    double t1 = util::now_ns();
    if (r == 0) continue;
    v.push_back((t1 - t0) / kRegionPages);
    ppf.push_back(static_cast<double>(kRegionPages) / static_cast<double>(std::max(1L, faults)));
  }
  put("munmap_anon_zap_free_ns", v,
      "private anon 64 MiB (MADV_NOHUGEPAGE), written 1 byte/page, then munmap; per page (zap "
      "PTE + free page + TLB flush); compare zap_anon_pte_ns of calibrate.cc");
  note("munmap_anon: pages per fault while populating = " + num(util::median(ppf), 2) +
       " (1.00 = 4 KiB folios)");
}

// ------------------------------------------------------------------ output

void emit(std::FILE* out, const HostFacts& h, const std::string& cmd, double seconds) {
  std::fprintf(out, "# measured by tools/calibrate/calibrate_paths.cc on %s, %s (%s)%s, %s\n",
               h.kernel.c_str(), h.cpu_model.c_str(), h.cpu_id.c_str(),
               h.vm ? ", virtual machine" : "", h.date.c_str());
  std::fprintf(out,
               "# command: g++ -std=c++20 -O2 -pthread tools/calibrate/calibrate_paths.cc -o "
               "/tmp/calibrate_paths && %s\n",
               cmd.c_str());
  std::fprintf(out, "# compiler: %s; run took %.0f s\n", __VERSION__, seconds);
  std::fprintf(out,
               "# each value: median of %d runs after 1 discarded warm-up; min and max over the "
               "runs are in the comment and in [spread].\n",
               g_runs);
  std::fprintf(out, "# units: *_ns nanoseconds, *_pages pages (4 KiB).\n\n");
  std::fprintf(out, "[host]\n");
  std::fprintf(out, "kernel = \"%s\"\n", h.kernel.c_str());
  std::fprintf(out, "cpu_model = \"%s\"\n", h.cpu_model.c_str());
  std::fprintf(out, "cpu_id = \"%s\"\n", h.cpu_id.c_str());
  std::fprintf(out, "virtualized = %s   # cpuinfo 'hypervisor' flag\n", h.vm ? "true" : "false");
  std::fprintf(out, "cpus = %ld\n", h.cpus);
  std::fprintf(out, "meltdown = \"%s\"   # sysfs vulnerabilities/meltdown\n", h.meltdown.c_str());
  std::fprintf(out, "thp_enabled = \"%s\"\n", h.thp_anon.c_str());
  std::fprintf(out, "thp_shmem_enabled = \"%s\"\n", h.thp_shmem.c_str());
  std::fprintf(out, "date = \"%s\"\n\n", h.date.c_str());
  std::fprintf(out, "[costs]\n");
  for (const auto& row : g_results.rows()) {
    if (row.skipped) {
      std::fprintf(out, "# %s skipped: %s\n", row.key.c_str(), row.method.c_str());
      continue;
    }
    const double a = std::abs(row.s.median);
    const int prec = a < 10 ? 3 : a < 100 ? 2 : 1;
    std::fprintf(out, "%s = %.*f   # min %.*f, max %.*f; method: %s\n", row.key.c_str(), prec,
                 row.s.median, prec, row.s.min, prec, row.s.max, row.method.c_str());
  }
  std::fprintf(out, "\n# notes\n");
  for (const auto& n : g_results.notes()) std::fprintf(out, "# %s\n", n.c_str());
  std::fprintf(out, "\n[spread]  # [min, max] over the runs\n");
  for (const auto& row : g_results.rows())
    if (!row.skipped)
      std::fprintf(out, "%s = [%.4g, %.4g]\n", row.key.c_str(), row.s.min, row.s.max);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path, cmd;
  if (!calibrate::parse_args(argc, argv, g_runs, out_path, cmd)) return 2;
  HostFacts h = host_facts();
  std::fprintf(stderr, "host: kernel %s | %s (%s)%s | %ld CPUs | %s | %s\n", h.kernel.c_str(),
               h.cpu_model.c_str(), h.cpu_id.c_str(), h.vm ? " [VM]" : "", h.cpus,
               h.meltdown.c_str(), h.date.c_str());
  if (!pin_to(0)) std::fprintf(stderr, "calibrate_paths: warning: cannot pin to CPU 0\n");

  const double start = util::now_ns();
  // Single-threaded until the context-switch test starts its thread.
  zero_page_faults();
  shmem_faults();
  anon_munmap_cost();
  mmap_munmap_cost();
  lock_cost();
  fork_costs(h);
  storage_reads();
  context_switch_cost();
  const double seconds = (util::now_ns() - start) / 1e9;
  std::fprintf(stderr, "total %.1f s\n", seconds);

  std::FILE* out = stdout;
  if (!out_path.empty() && !(out = std::fopen(out_path.c_str(), "w"))) {
    std::fprintf(stderr, "calibrate_paths: %s: %s\n", out_path.c_str(), std::strerror(errno));
    return 1;
  }
  emit(out, h, cmd, seconds);
  if (out != stdout) std::fclose(out);
  return 0;
}
