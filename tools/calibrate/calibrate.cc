// calibrate.cc - measure default kernel-operation costs for mmsim on this host.
//
// Linux only.  Built by CMake as mmsim-calibrate-basic (it links mmsim_util,
// the project's statistics, timing and size helpers); `mmsim calibrate` runs
// it.  By hand, from the repository root:
//   cmake --build build/release --target mmsim-calibrate-basic
//   build/release/tools/calibrate/mmsim-calibrate-basic [--runs N] [--out FILE]
// (or compile it with -O2 -pthread -Isrc together with src/util/*.cc).
//
// Every measurement is repeated N times (default 9) after one discarded warm-up
// run; the median is the reported value and [min, max] is the spread.  The
// result is a TOML document on stdout (or FILE); progress and errors go to
// stderr.  A measurement that fails is reported and skipped, never fatal.

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "util/stats.h"
#include "util/units.h"

namespace {

namespace util = mmsim::util;
using util::now_ns;  // steady clock, integer ns; timings below are done in double

constexpr std::size_t kPage = 4096;
constexpr std::size_t kMiB = 1024 * 1024;
int g_runs = 9;

volatile std::uint64_t g_sink;  // results of read loops go here

// Tell the compiler that the memory behind p is read/written by someone else.
inline void escape(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

long minflt_now() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

std::string errno_str(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// ---------------------------------------------------------------- results

struct Entry {
  std::string name;
  util::Summary stat;
  std::string method;
  bool skipped = false;
};

std::vector<Entry> g_entries;
std::vector<std::string> g_notes;  // extra comment lines printed after [costs]

void record(const std::string& name, const std::vector<double>& v, const std::string& method) {
  util::Summary s = util::summarize(v);
  g_entries.push_back({name, s, method, false});
  std::fprintf(stderr, "  %-26s median %10.3f  [%.3f .. %.3f]\n", name.c_str(), s.median, s.min,
               s.max);
}

void skip(const std::string& name, const std::string& why) {
  std::fprintf(stderr, "calibrate: %s: skipped: %s\n", name.c_str(), why.c_str());
  g_entries.push_back({name, {}, why, true});
}

void note(const std::string& s) { g_notes.push_back(s); }

std::string fmt(const char* f, double a) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

// ---------------------------------------------------------------- memory helpers

// An anonymous private mapping, unmapped on destruction.
struct Mapping {
  unsigned char* p = nullptr;
  std::size_t len = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (p) munmap(p, len);
  }
  // huge: ask for THP (closer to the kernel's direct map); otherwise forbid it
  // so that every 4 KiB page has its own PTE.
  bool map(std::size_t bytes, bool huge, std::string* err) {
    void* q = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) {
      *err = errno_str("mmap");
      return false;
    }
    p = static_cast<unsigned char*>(q);
    len = bytes;
    madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);  // advisory; ignore errors
    return true;
  }
  void populate(unsigned char v) { std::memset(p, v, len); }
};

bool pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;  // 0 = calling thread
}

long anon_huge_kb() {  // AnonHugePages of this process
  std::ifstream f("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("AnonHugePages:", 0) == 0) return std::atol(line.c_str() + 14);
  return -1;
}

// ---------------------------------------------------------------- host facts

struct Host {
  std::string kernel, cpu, cpu_id, date;
  bool hypervisor = false;
  long ncpus = 0;
  long l2_bytes = 0, llc_bytes = 0;
  std::string cache_source;
};

// A cache size in bytes, 0 if unreadable: sysfs "32768K" / "32M", or the
// "32768 KB" of /proc/cpuinfo.  util::parse_size() reads "KB" as 1000 bytes,
// but the kernel means KiB there (as sysfs "K"), so a "B" after the letter is
// dropped first: "1024 KB" is 1 MiB here.
long parse_cache_size(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  const auto last = s.find_last_not_of(" \t\r\n");
  s = first == std::string::npos ? "" : s.substr(first, last - first + 1);
  if (s.size() >= 2 && s.back() == 'B' &&
      std::string_view("KMGkmg").find(s[s.size() - 2]) != std::string_view::npos) {
    s.pop_back();
  }
  const auto bytes = util::parse_size(s);
  return bytes ? static_cast<long>(*bytes) : 0;
}

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

void detect_caches(Host& h) {
  // 1. sysfs (the normal way; absent in some VMs).
  const std::string base = "/sys/devices/system/cpu/cpu0/cache/";
  for (int i = 0; i < 8; ++i) {
    std::string dir = base + "index" + std::to_string(i) + "/";
    std::string lvl = read_first_line(dir + "level");
    std::string type = read_first_line(dir + "type");
    std::string size = read_first_line(dir + "size");
    if (lvl.empty() || size.empty() || type == "Instruction") continue;
    long b = parse_cache_size(size);
    if (lvl == "2") h.l2_bytes = b;
    if (std::atoi(lvl.c_str()) >= 3) h.llc_bytes = b;
  }
  if (h.llc_bytes) {
    h.cache_source = "sysfs cpu0/cache";
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  // 2. cpuid deterministic cache parameters (AMD 0x8000001D, Intel 4).
  unsigned a, b, c, d;
  unsigned maxext = __get_cpuid_max(0x80000000, nullptr);
  unsigned maxstd = __get_cpuid_max(0, nullptr);
  for (unsigned leaf : {0x8000001Du, 4u}) {
    if ((leaf > 0x80000000u && maxext < leaf) || (leaf < 0x80000000u && maxstd < leaf)) continue;
    for (unsigned i = 0; i < 8; ++i) {
      __cpuid_count(leaf, i, a, b, c, d);
      unsigned type = a & 31;
      if (type == 0) break;
      if (type == 2) continue;  // instruction cache
      unsigned lvl = (a >> 5) & 7;
      long bytes = static_cast<long>(((b >> 22) & 0x3ff) + 1) * (((b >> 12) & 0x3ff) + 1) *
                   ((b & 0xfff) + 1) * (static_cast<long>(c) + 1);
      if (lvl == 2) h.l2_bytes = bytes;
      if (lvl >= 3) h.llc_bytes = bytes;
    }
    if (h.llc_bytes) {
      h.cache_source = leaf == 4 ? "cpuid leaf 4" : "cpuid leaf 0x8000001D";
      return;
    }
  }
  // 3. AMD legacy L2/L3 descriptor.
  if (maxext >= 0x80000006u) {
    __cpuid(0x80000006u, a, b, c, d);
    if (!h.l2_bytes) h.l2_bytes = static_cast<long>(c >> 16) * 1024;
    h.llc_bytes = static_cast<long>(d >> 18) * 512 * 1024;
    if (h.llc_bytes) {
      h.cache_source =
          "cpuid 0x80000006 (legacy; in a VM this may be the whole socket's L3, "
          "not the slice this core uses)";
      return;
    }
  }
#endif
  // 4. /proc/cpuinfo "cache size" (L3 on Intel, L2 on AMD).
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("cache size", 0) == 0) {
      h.llc_bytes = parse_cache_size(line.substr(line.find(':') + 1));
      h.cache_source = "/proc/cpuinfo cache size (level unknown)";
      return;
    }
  h.cache_source = "unknown";
}

Host detect_host() {
  Host h;
  utsname u{};
  if (uname(&u) == 0) h.kernel = u.release;
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  std::string family, model, stepping;
  auto value = [&] { return line.substr(line.find(':') + 2); };
  while (std::getline(f, line) && !line.empty()) {  // first processor block only
    if (line.rfind("model name", 0) == 0)
      h.cpu = value();
    else if (line.rfind("cpu family", 0) == 0)
      family = value();
    else if (line.rfind("model\t", 0) == 0)
      model = value();
    else if (line.rfind("stepping", 0) == 0)
      stepping = value();
    else if (line.rfind("flags", 0) == 0)
      h.hypervisor = line.find(" hypervisor") != std::string::npos;
  }
  h.cpu_id = "family " + family + " model " + model + " stepping " + stepping;
  h.ncpus = sysconf(_SC_NPROCESSORS_ONLN);
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  h.date = buf;
  detect_caches(h);
  return h;
}

// Run fn once as a warm-up, then g_runs times; collect what it returns.
std::vector<double> repeat(const std::function<double()>& fn) {
  fn();
  std::vector<double> v;
  for (int i = 0; i < g_runs; ++i) v.push_back(fn());
  return v;
}

std::vector<std::uint32_t> random_perm(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> v(n);
  std::iota(v.begin(), v.end(), 0u);
  std::mt19937_64 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// ---------------------------------------------------------------- 1 + 11: file-backed faults

constexpr std::size_t kFileBytes = 64 * kMiB;

void measure_file() {
  std::fprintf(stderr, "[file] 64 MiB page-cache file\n");
  char path[] = "/var/tmp/mmsim-calib-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    for (auto n : {"minor_fault_file_ns", "file_fault_entry_ns", "fault_around_pages", "zap_pte_ns",
                   "pagecache_lookup_ns"})
      skip(n, errno_str("mkstemp /var/tmp"));
    return;
  }
  unlink(path);  // the open fd keeps it alive; nothing is left behind on exit

  std::string err;
  {
    std::vector<unsigned char> chunk(kMiB);
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<unsigned char>(i * 7 + 1);
    for (std::size_t off = 0; off < kFileBytes && err.empty(); off += chunk.size())
      if (pwrite(fd, chunk.data(), chunk.size(), static_cast<off_t>(off)) !=
          static_cast<ssize_t>(chunk.size()))
        err = errno_str("pwrite");
    if (err.empty() && fdatasync(fd) != 0) err = errno_str("fdatasync");  // clean page-cache pages
    posix_fadvise(fd, 0, kFileBytes, POSIX_FADV_WILLNEED);
    for (std::size_t off = 0; off < kFileBytes && err.empty(); off += chunk.size())  // read back
      if (pread(fd, chunk.data(), chunk.size(), static_cast<off_t>(off)) !=
          static_cast<ssize_t>(chunk.size()))
        err = errno_str("pread");
  }
  const std::size_t npages = kFileBytes / kPage;

  if (err.empty()) {  // verify residency with mincore
    void* m = mmap(nullptr, kFileBytes, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      err = errno_str("mmap file");
    } else {
      std::vector<unsigned char> vec(npages);
      if (mincore(m, kFileBytes, vec.data()) == 0) {
        std::size_t res = 0;
        for (auto b : vec) res += b & 1;
        note("file: " + std::to_string(res) + "/" + std::to_string(npages) +
             " pages resident in page cache before timing (mincore)");
      }
      munmap(m, kFileBytes);
    }
  }
  if (!err.empty()) {
    for (auto n : {"minor_fault_file_ns", "file_fault_entry_ns", "fault_around_pages", "zap_pte_ns",
                   "pagecache_lookup_ns"})
      skip(n, err);
    close(fd);
    return;
  }

  std::vector<double> touch, entry, around, zap;
  bool fail = false;
  auto one = [&](bool keep) {
    void* m = mmap(nullptr, kFileBytes, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      fail = true;
      return;
    }
    madvise(m, kFileBytes, MADV_NOHUGEPAGE);  // keep it per-PTE (no PMD-mapped file folios)
    const volatile unsigned char* v = static_cast<const unsigned char*>(m);
    long f0 = minflt_now();
    double t0 = now_ns();
    unsigned s = 0;
    for (std::size_t i = 0; i < npages; ++i) s += v[i * kPage];
    double t1 = now_ns();
    long faults = minflt_now() - f0;
    g_sink = s;
    double t2 = now_ns();
    int rc = madvise(m, kFileBytes, MADV_DONTNEED);
    double t3 = now_ns();
    munmap(m, kFileBytes);
    if (rc != 0 || faults <= 0) {
      fail = true;
      return;
    }
    if (!keep) return;
    touch.push_back((t1 - t0) / npages);
    entry.push_back((t1 - t0) / faults);
    around.push_back(static_cast<double>(npages) / faults);
    zap.push_back((t3 - t2) / npages);
  };
  one(false);
  for (int r = 0; r < g_runs && !fail; ++r) one(true);
  if (fail) {
    for (auto n :
         {"minor_fault_file_ns", "file_fault_entry_ns", "fault_around_pages", "zap_pte_ns"})
      skip(n, "mmap/madvise of the file failed or no faults were counted");
  } else {
    record(
        "minor_fault_file_ns", touch,
        "MAP_SHARED PROT_READ mapping of a 64 MiB page-cached file in /var/tmp, read 1 byte/page; "
        "touch time / pages touched (fault-around amortised)");
    record("file_fault_entry_ns", entry,
           "same loop; touch time / ru_minflt delta = cost of one file read fault incl. its "
           "fault-around batch");
    record("fault_around_pages", around,
           "pages touched / ru_minflt delta (16 = default 64 KiB fault-around; more = large folios "
           "mapped per fault)");
    record("zap_pte_ns", zap,
           "madvise(MADV_DONTNEED) of the fully mapped 64 MiB file range / pages");
  }

  // Populating a mapping of the cached file maps every page with no user
  // access and one fault per fault-around batch. (On 6.x its per-page cost
  // is dominated by get_user_pages' walk, so mmsim calibrate records it but
  // derives pte_set_ns from the fault batches instead.)
  std::string pop_fail;
  std::vector<double> pop = repeat([&]() -> double {
    void* m = mmap(nullptr, kFileBytes, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      pop_fail = errno_str("mmap file");
      return 0;
    }
    madvise(m, kFileBytes, MADV_NOHUGEPAGE);  // per-PTE, as the touch loop
    double t0 = now_ns();
    int rc = madvise(m, kFileBytes, MADV_POPULATE_READ);
    double t1 = now_ns();
    if (rc != 0) pop_fail = errno_str("madvise(MADV_POPULATE_READ) (Linux 5.14+)");
    munmap(m, kFileBytes);
    return (t1 - t0) / npages;
  });
  if (!pop_fail.empty()) {
    skip("populate_file_pte_ns", pop_fail);
  } else {
    record("populate_file_pte_ns", pop,
           "madvise(MADV_POPULATE_READ) of a fresh MAP_SHARED PROT_READ mapping of the cached 64 "
           "MiB file (MADV_NOHUGEPAGE), per page: get_user_pages' walk and PTE installs, the "
           "fault-around faults amortised over their batch, no user access");
  }

  // pagecache_lookup_ns, measured directly: mincore() of a mapping with no
  // page tables yet looks each page up in the page cache (xarray walk).
  std::string mc_fail;
  std::vector<unsigned char> vec(npages);
  std::vector<double> mc = repeat([&]() -> double {
    void* m = mmap(nullptr, kFileBytes, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      mc_fail = errno_str("mmap file");
      return 0;
    }
    double t0 = now_ns();
    int rc = mincore(m, kFileBytes, vec.data());
    double t1 = now_ns();
    if (rc != 0) mc_fail = errno_str("mincore");
    munmap(m, kFileBytes);
    return (t1 - t0) / npages;
  });
  if (!mc_fail.empty()) {
    skip("pagecache_mincore_ns", mc_fail);
  } else {
    record("pagecache_mincore_ns", mc,
           "mincore() of a fresh (never faulted) mapping of the cached 64 MiB file, per page: one "
           "page-cache lookup each, one system call for all 16384");
  }

  // 11: pread 1 byte of every page of the cached file.
  std::vector<double> pc = repeat([&] {
    unsigned char c;
    unsigned s = 0;
    double t0 = now_ns();
    for (std::size_t i = 0; i < npages; ++i) {
      if (pread(fd, &c, 1, static_cast<off_t>(i * kPage)) == 1) s += c;
    }
    double t1 = now_ns();
    g_sink = s;
    return (t1 - t0) / npages;
  });
  record("pagecache_lookup_ns", pc,
         "pread(fd, 1 byte) at each page offset of the cached 64 MiB file, per call");
  close(fd);
}

// ---------------------------------------------------------------- 2: anonymous zero-fill faults

constexpr std::size_t kAnonBytes = 64 * kMiB;

void measure_anon() {
  std::fprintf(stderr, "[anon] 64 MiB anonymous first-touch + munmap\n");
  const std::size_t npages = kAnonBytes / kPage;
  std::vector<double> fault, zap, ratio;
  bool fail = false;
  auto one = [&](bool keep) {
    void* m = mmap(nullptr, kAnonBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      fail = true;
      return;
    }
    madvise(m, kAnonBytes, MADV_NOHUGEPAGE);
    volatile unsigned char* v = static_cast<unsigned char*>(m);
    long f0 = minflt_now();
    double t0 = now_ns();
    for (std::size_t i = 0; i < npages; ++i) v[i * kPage] = static_cast<unsigned char>(i);
    double t1 = now_ns();
    long faults = minflt_now() - f0;
    double t2 = now_ns();
    munmap(m, kAnonBytes);
    double t3 = now_ns();
    if (!keep) return;
    fault.push_back((t1 - t0) / npages);
    zap.push_back((t3 - t2) / npages);
    ratio.push_back(faults > 0 ? static_cast<double>(npages) / faults : 0);
  };
  one(false);
  for (int r = 0; r < g_runs && !fail; ++r) one(true);
  if (fail) {
    skip("anon_fault_zero_ns", errno_str("mmap"));
    skip("zap_anon_pte_ns", "mmap failed");
    return;
  }
  record("anon_fault_zero_ns", fault,
         "private anon 64 MiB (MADV_NOHUGEPAGE), write 1 byte/page, per page (alloc + zero + PTE)");
  record("zap_anon_pte_ns", zap,
         "munmap of that populated 64 MiB range, per page (zap PTE + free page + TLB flush)");
  note("anon: pages per minor fault = " + fmt("%.2f", util::median(ratio)) +
       " (1.00 = no fault-around/mTHP)");
}

// ---------------------------------------------------------------- 3: COW faults in a forked child

void measure_cow() {
  std::fprintf(stderr, "[cow] fork + child writes 64 MiB\n");
  const std::size_t npages = kAnonBytes / kPage;
  Mapping m;
  std::string err;
  if (!m.map(kAnonBytes, false, &err)) {
    skip("cow_fault_ns", err);
    return;
  }
  m.populate(0x5a);
  int pfd[2];
  if (pipe(pfd) != 0) {
    skip("cow_fault_ns", errno_str("pipe"));
    return;
  }
  struct Msg {
    double ns;
    long faults;
  };
  std::vector<double> cow, ratio;
  bool fail = false;
  auto one = [&](bool keep) {
    pid_t pid = fork();
    if (pid < 0) {
      fail = true;
      return;
    }
    if (pid == 0) {  // child
      volatile unsigned char* v = m.p;
      long f0 = minflt_now();
      double t0 = now_ns();
      for (std::size_t i = 0; i < npages; ++i) v[i * kPage] = static_cast<unsigned char>(i);
      double t1 = now_ns();
      Msg msg{(t1 - t0) / npages, minflt_now() - f0};
      ssize_t w = write(pfd[1], &msg, sizeof msg);
      _exit(w == static_cast<ssize_t>(sizeof msg) ? 0 : 1);
    }
    Msg msg{};
    ssize_t r = read(pfd[0], &msg, sizeof msg);
    int status = 0;
    waitpid(pid, &status, 0);
    if (r != static_cast<ssize_t>(sizeof msg) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fail = true;
      return;
    }
    if (keep) {
      cow.push_back(msg.ns);
      ratio.push_back(msg.faults > 0 ? static_cast<double>(npages) / msg.faults : 0);
    }
  };
  one(false);
  for (int r = 0; r < g_runs && !fail; ++r) one(true);
  close(pfd[0]);
  close(pfd[1]);
  if (fail) {
    skip("cow_fault_ns", "fork/pipe/child failed");
    return;
  }
  record("cow_fault_ns", cow,
         "parent populates 64 MiB private anon (4 KiB PTEs), fork(); child writes 1 byte/page, "
         "per page (fault + alloc + 4 KiB copy + PTE)");
  note("cow: pages per minor fault in child = " + fmt("%.2f", util::median(ratio)));
}

// ---------------------------------------------------------------- 4 + 5: page copy / zero

constexpr std::size_t kRingBytes = 256 * kMiB;

void measure_copy_zero() {
  std::fprintf(stderr, "[copy] 4 KiB memcpy/memset, 256 MiB rings vs hot\n");
  Mapping src, dst;
  std::string err;
  if (!src.map(kRingBytes, true, &err) || !dst.map(kRingBytes, true, &err)) {
    for (auto n : {"page_copy_ns", "page_copy_cached_ns", "page_zero_ns", "page_zero_cached_ns"})
      skip(n, err);
    return;
  }
  src.populate(0x11);
  dst.populate(0x22);
  const std::size_t npages = kRingBytes / kPage;
  auto perm = random_perm(npages, 42);
  auto perm2 = random_perm(npages, 43);

  record("page_copy_ns", repeat([&] {
           double t0 = now_ns();
           for (std::size_t i = 0; i < npages; ++i) {
             std::memcpy(dst.p + perm2[i] * kPage, src.p + perm[i] * kPage, kPage);
             escape(dst.p);
           }
           return (now_ns() - t0) / npages;
         }),
         "glibc memcpy 4 KiB, src/dst pages picked in random order from two 256 MiB rings "
         "(THP-backed), so both sides come from DRAM");

  constexpr int kHot = 200000;
  unsigned char* hs = src.p;
  unsigned char* hd = src.p + kPage;  // 8 KiB, stays in L1/L2
  record("page_copy_cached_ns", repeat([&] {
           double t0 = now_ns();
           for (int i = 0; i < kHot; ++i) {
             std::memcpy(hd, hs, kPage);
             escape(hd);
           }
           return (now_ns() - t0) / kHot;
         }),
         "glibc memcpy 4 KiB between the same two hot (L1/L2-resident) buffers");

  record("page_zero_ns", repeat([&] {
           double t0 = now_ns();
           for (std::size_t i = 0; i < npages; ++i) {
             std::memset(dst.p + perm[i] * kPage, 0, kPage);
             escape(dst.p);
           }
           return (now_ns() - t0) / npages;
         }),
         "glibc memset(0) 4 KiB, pages in random order over a 256 MiB ring (DRAM)");

  record("page_zero_cached_ns", repeat([&] {
           double t0 = now_ns();
           for (int i = 0; i < kHot; ++i) {
             std::memset(hd, 0, kPage);
             escape(hd);
           }
           return (now_ns() - t0) / kHot;
         }),
         "glibc memset(0) 4 KiB of the same hot buffer");
  long thp = anon_huge_kb();
  note("copy/zero rings: AnonHugePages = " + std::to_string(thp) +
       " kB of 524288 kB requested as THP");
}

// ---------------------------------------------------------------- 6 + 7: mprotect, TLB shootdown

// Time k (PROT_READ, then PROT_READ|PROT_WRITE) toggles of one populated
// page; each call is timed on its own (clock overhead subtracted).  Both
// directions change _PAGE_RW, so on x86 both need a TLB flush of the page.
struct Toggle {
  double ro = 0, rw = 0;  // ns per RW->R call, ns per R->RW call
  double pair() const { return ro + rw; }
};

double g_clock_ns = 0;  // cost of one now_ns() call

Toggle mprotect_toggles(unsigned char* page, int k, bool* ok) {
  double ro = 0, rw = 0;
  for (int i = 0; i < k; ++i) {
    double t0 = now_ns();
    int a = mprotect(page, kPage, PROT_READ);
    double t1 = now_ns();
    int b = mprotect(page, kPage, PROT_READ | PROT_WRITE);
    double t2 = now_ns();
    if (a || b) {
      *ok = false;
      k = i + 1;
      break;
    }
    ro += t1 - t0;
    rw += t2 - t1;
  }
  return {ro / k - g_clock_ns, rw / k - g_clock_ns};
}

constexpr int kPairs = 20000;       // single-threaded toggles per run
constexpr int kRemotePairs = 4000;  // toggles per run with a remote spinner (slow in VMs)

void measure_mprotect() {
  std::fprintf(stderr, "[mprotect] 64 MiB range and 1-page toggles (single thread)\n");
  const std::size_t npages = kAnonBytes / kPage;
  Mapping m;
  std::string err;
  if (!m.map(kAnonBytes, false, &err)) {
    skip("mprotect_pte_ns", err);
  } else {
    m.populate(0x33);
    std::vector<double> both, ro, rw;
    bool ok = true;
    auto one = [&](bool keep) {
      double t0 = now_ns();
      int a = mprotect(m.p, m.len, PROT_READ);
      double t1 = now_ns();
      int b = mprotect(m.p, m.len, PROT_READ | PROT_WRITE);
      double t2 = now_ns();
      if (a || b) ok = false;
      if (keep) {
        both.push_back((t2 - t0) / (2.0 * npages));
        ro.push_back((t1 - t0) / npages);
        rw.push_back((t2 - t1) / npages);
      }
    };
    one(false);
    for (int r = 0; r < g_runs && ok; ++r) one(true);
    if (!ok) {
      skip("mprotect_pte_ns", errno_str("mprotect"));
    } else {
      record("mprotect_pte_ns", both,
             "mprotect of a populated 64 MiB anon range (4 KiB PTEs) to PROT_READ and back; "
             "total / (2 * pages)");
      note("mprotect_pte: RW->R " + fmt("%.3f", util::median(ro)) + " ns/page, R->RW " +
           fmt("%.3f", util::median(rw)) + " ns/page (medians)");
    }
  }

  Mapping one_page;
  if (!one_page.map(kPage, false, &err)) {
    skip("mprotect_call_ns", err);
    return;
  }
  one_page.populate(1);
  bool ok = true;
  std::vector<double> ro, rw;
  mprotect_toggles(one_page.p, kPairs, &ok);  // warm-up
  for (int r = 0; r < g_runs && ok; ++r) {
    Toggle t = mprotect_toggles(one_page.p, kPairs, &ok);
    ro.push_back(t.ro);
    rw.push_back(t.rw);
  }
  if (!ok) {
    skip("mprotect_call_ns", errno_str("mprotect"));
    return;
  }
  record("mprotect_call_ns", ro,
         "mprotect(PROT_READ) of 1 populated writable anon page in a single-threaded process "
         "(syscall + 1 PTE + local 1-page TLB flush), timed per call");
  note("mprotect_call: the reverse R->RW call costs " + fmt("%.1f", util::median(rw)) +
       " ns (median)");
}

void measure_remote_flush(const Host& h) {
  std::fprintf(stderr, "[tlb] 1-page mprotect with a spinning sibling thread on CPU 1\n");
  const char* name = "tlb_flush_remote_ipi_ns";
  if (h.ncpus < 2) {
    skip(name, "needs 2 CPUs");
    return;
  }
  Mapping page;
  std::string err;
  if (!page.map(kPage, false, &err)) {
    skip(name, err);
    return;
  }
  page.populate(1);
  std::vector<double> diff, base_ro, base_rw, with_ro, with_rw;
  std::string fail;
  for (int r = 0; r <= g_runs && fail.empty(); ++r) {
    bool ok = true;
    Toggle base = mprotect_toggles(page.p, kRemotePairs, &ok);
    std::atomic<int> state{0};  // 0 starting, 1 spinning on cpu1, -1 pin failed
    std::atomic<bool> stop{false};
    int spin_cpu = -1;
    std::thread t([&] {
      if (!pin_self(1)) {
        state.store(-1);
        return;
      }
      spin_cpu = sched_getcpu();
      state.store(1, std::memory_order_release);
      std::uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed))
        ++n;  // user-mode spin, no PAUSE (avoids PLE exits)
      g_sink = n;
    });
    while (state.load(std::memory_order_acquire) == 0) {
    }
    Toggle with;
    if (state.load() == 1) with = mprotect_toggles(page.p, kRemotePairs, &ok);
    stop.store(true);
    t.join();
    if (state.load() != 1 || spin_cpu != 1) {
      fail = "could not pin the spinner thread to CPU 1";
    } else if (!ok) {
      fail = errno_str("mprotect");
    } else if (r > 0) {  // run 0 is the warm-up
      base_ro.push_back(base.ro);
      base_rw.push_back(base.rw);
      with_ro.push_back(with.ro);
      with_rw.push_back(with.rw);
      diff.push_back((with.pair() - base.pair()) / 2);
    }
  }
  if (!fail.empty()) {
    skip(name, fail);
    return;
  }
  record(name, diff,
         "1-page mprotect toggles (RW->R, R->RW; both flush) with a same-mm thread spinning in "
         "user mode on CPU 1, minus the same toggles alone (paired per run), per call = one "
         "shootdown IPI round trip");
  note("tlb: per call alone RW->R " + fmt("%.1f", util::median(base_ro)) + " / R->RW " +
       fmt("%.1f", util::median(base_rw)) + " ns; with remote spinner RW->R " +
       fmt("%.1f", util::median(with_ro)) + " / R->RW " + fmt("%.1f", util::median(with_rw)) +
       " ns (medians)");
}

// ---------------------------------------------------------------- 8 + 10: sequential sweeps

// Kept out of line so the loop body is exactly what -O2 makes of it.
__attribute__((noinline)) std::uint32_t sum_ints(const int* a, std::size_t n) {
  std::uint32_t s = 0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<std::uint32_t>(a[i]);
  return s;
}

__attribute__((noinline)) std::uint64_t sum_words(const std::uint64_t* a, std::size_t n) {
  std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 += a[i];
    s1 += a[i + 1];
    s2 += a[i + 2];
    s3 += a[i + 3];
    s4 += a[i + 4];
    s5 += a[i + 5];
    s6 += a[i + 6];
    s7 += a[i + 7];
  }
  for (; i < n; ++i) s0 += a[i];
  return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
}

std::size_t llc_test_bytes(const Host& h) {
  // Fits in the LLC but not in L2: 8 MiB when the LLC is >= 16 MiB.
  std::size_t l2 = h.l2_bytes > 0 ? h.l2_bytes : 1 * kMiB;
  std::size_t llc = h.llc_bytes > 0 ? h.llc_bytes : 16 * kMiB;
  if (llc >= 16 * kMiB) return 8 * kMiB;
  return std::max(llc / 2, 2 * l2);
}

constexpr std::size_t kDramBytes = 512 * kMiB;

void measure_sweeps(const Host& h, Mapping& big) {
  std::fprintf(stderr, "[sweep] int sum over LLC-sized and 512 MiB arrays, stream read\n");
  const std::size_t small_bytes = llc_test_bytes(h);
  Mapping small;
  std::string err;
  if (!small.map(small_bytes, true, &err)) {
    skip("sweep_elem_llc_ns", err);
  } else {
    small.populate(1);
    const int* a = reinterpret_cast<const int*>(small.p);
    const std::size_t n = small_bytes / sizeof(int);
    const int reps = static_cast<int>(std::max<std::size_t>(1, (64 * kMiB) / small_bytes));
    record("sweep_elem_llc_ns", repeat([&] {
             std::uint32_t s = sum_ints(a, n);  // warm the cache
             double t0 = now_ns();
             for (int r = 0; r < reps; ++r) {
               escape(a);
               s += sum_ints(a, n);
             }
             g_sink = s;
             return (now_ns() - t0) / (static_cast<double>(n) * reps);
           }),
           "sum of a " + std::to_string(small_bytes / kMiB) +
               " MiB int array (fits LLC, not L2), per 4-byte element; noinline scalar-source loop "
               "`s += a[i]` at -O2 (see README for codegen)");
  }
  if (!big.p) {
    skip("sweep_elem_dram_ns", "no 512 MiB buffer");
    skip("stream_read_gbps", "no 512 MiB buffer");
    skip("stream_all_read_gbps", "no 512 MiB buffer");
    return;
  }
  const int* a = reinterpret_cast<const int*>(big.p);
  const std::size_t n = big.len / sizeof(int);
  record("sweep_elem_dram_ns", repeat([&] {
           escape(a);
           double t0 = now_ns();
           std::uint32_t s = sum_ints(a, n);
           double t1 = now_ns();
           g_sink = s;
           return (t1 - t0) / n;
         }),
         "same loop over a 512 MiB int array (THP-backed), per 4-byte element");

  const auto* w = reinterpret_cast<const std::uint64_t*>(big.p);
  record("stream_read_gbps", repeat([&] {
           escape(w);
           double t0 = now_ns();
           std::uint64_t s = sum_words(w, big.len / 8);
           double t1 = now_ns();
           g_sink = s;
           return static_cast<double>(big.len) / (t1 - t0);  // bytes/ns = GB/s
         }),
         "single thread, sequential sum of 64-bit words (8 accumulators) over 512 MiB, "
         "GB/s (1e9 B/s)");

  // Every online CPU at once, each its own slice: what the memory delivers
  // when it is the bottleneck (mem_bandwidth_gbps). The buffer was first
  // touched by this thread, so on a host of several nodes it is one node's
  // memory, partly read over the interconnect.
  const std::size_t nthreads = static_cast<std::size_t>(std::max(1L, h.ncpus));
  const std::size_t slice = big.len / 8 / nthreads;  // words
  record("stream_all_read_gbps", repeat([&] {
           escape(w);
           std::atomic<std::size_t> ready{0};
           std::atomic<bool> go{false};
           double t0 = 0;
           std::vector<double> end(nthreads, 0);
           std::vector<std::uint64_t> sums(nthreads, 0);
           std::vector<std::thread> threads;
           for (std::size_t i = 0; i < nthreads; ++i) {
             threads.emplace_back([&, i] {
               pin_self(static_cast<int>(i));
               // The last one ready starts the clock for all.
               if (ready.fetch_add(1) + 1 == nthreads) {
                 t0 = now_ns();
                 go.store(true, std::memory_order_release);
               }
               while (!go.load(std::memory_order_acquire)) sched_yield();
               sums[i] = sum_words(w + i * slice, slice);
               end[i] = now_ns();
             });
           }
           for (auto& t : threads) t.join();
           g_sink = std::accumulate(sums.begin(), sums.end(), std::uint64_t{0});
           const double last = *std::max_element(end.begin(), end.end());
           return static_cast<double>(slice * nthreads * 8) / (last - t0);
         }),
         "one thread per online CPU, each pinned, each the sequential sum of its own slice of the "
         "512 MiB, started together; bytes / time until the last ends, GB/s");
}

// ---------------------------------------------------------------- 9: pointer-chase latency

// Link the 64-byte lines of buf into one random cycle (Sattolo) and return the start.
void** build_chase(unsigned char* buf, std::size_t bytes, std::uint64_t seed) {
  const std::size_t lines = bytes / 64;
  std::vector<std::uint32_t> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(seed);
  for (std::size_t i = lines - 1; i > 0; --i) {  // Sattolo: a single cycle through all lines
    std::size_t j = std::uniform_int_distribution<std::size_t>(0, i - 1)(rng);
    std::swap(order[i], order[j]);
  }
  for (std::size_t i = 0; i < lines; ++i) {
    void** cur = reinterpret_cast<void**>(buf + static_cast<std::size_t>(order[i]) * 64);
    *cur = buf + static_cast<std::size_t>(order[(i + 1) % lines]) * 64;
  }
  return reinterpret_cast<void**>(buf + static_cast<std::size_t>(order[0]) * 64);
}

__attribute__((noinline)) void** chase(void** p, std::size_t steps) {
  for (std::size_t i = 0; i < steps; ++i) p = static_cast<void**>(*p);
  return p;
}

std::vector<double> chase_runs(unsigned char* buf, std::size_t bytes, std::size_t steps, int runs) {
  void** p = build_chase(buf, bytes, bytes);
  p = chase(p, std::min(bytes / 64, steps));  // warm up
  std::vector<double> v;
  for (int r = 0; r < runs; ++r) {
    double t0 = now_ns();
    p = chase(p, steps);
    v.push_back((now_ns() - t0) / steps);
  }
  g_sink = reinterpret_cast<std::uintptr_t>(p);
  return v;
}

void measure_latency(const Host& h, Mapping& big) {
  std::fprintf(stderr, "[latency] pointer chase\n");
  const std::size_t llc_bytes = llc_test_bytes(h);
  Mapping small;
  std::string err;
  if (!small.map(llc_bytes, true, &err)) {
    skip("llc_latency_ns", err);
  } else {
    small.populate(0);
    record("llc_latency_ns", chase_runs(small.p, llc_bytes, 2000000, g_runs),
           "dependent loads through a random cyclic permutation of 64 B lines in a " +
               std::to_string(llc_bytes / kMiB) + " MiB THP buffer, per load");
  }
  if (!big.p) {
    skip("mem_latency_local_ns", "no 512 MiB buffer");
  } else {
    record("mem_latency_local_ns", chase_runs(big.p, big.len, 1000000, g_runs),
           "same pointer chase over 512 MiB (THP-backed, so mostly no TLB misses), per load");
  }

  // A short latency curve helps judge where the real LLC ends (VMs often misreport it).
  std::string curve = "latency curve (ns/load, median of 3):";
  for (std::size_t kb : {64, 512, 2048, 4096, 16384, 32768, 65536, 131072}) {
    Mapping m;
    if (!m.map(kb * 1024, true, &err)) break;
    m.populate(0);
    curve += " " + std::to_string(kb >= 1024 ? kb / 1024 : kb) + (kb >= 1024 ? "M=" : "K=") +
             fmt("%.1f", util::median(chase_runs(m.p, kb * 1024, 500000, 3)));
  }
  note(curve);
}

// ---------------------------------------------------------------- 12: syscall

void measure_syscall() {
  std::fprintf(stderr, "[syscall] getppid\n");
  constexpr int kCalls = 200000;
  record("syscall_ns", repeat([] {
           long s = 0;
           double t0 = now_ns();
           for (int i = 0; i < kCalls; ++i) s += syscall(SYS_getppid);
           double t1 = now_ns();
           g_sink = static_cast<std::uint64_t>(s);
           return (t1 - t0) / kCalls;
         }),
         "syscall(SYS_getppid) round trip, per call (includes entry mitigations, e.g. PTI "
         "CR3 switch)");
}

// ---------------------------------------------------------------- 13: spinlock hand-off

struct alignas(64) PingPong {
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  std::atomic<int> turn{0};
  std::atomic<int> ready{0};
};

void player(PingPong& pp, int me, long turns) {
  for (long i = 0; i < turns; ++i) {
    while (pp.turn.load(std::memory_order_relaxed) != me) {
    }
    while (pp.lock.test_and_set(std::memory_order_acquire)) {
      while (pp.lock.test(std::memory_order_relaxed)) {
      }
    }
    pp.turn.store(1 - me, std::memory_order_relaxed);
    pp.lock.clear(std::memory_order_release);
  }
}

void measure_spinlock(const Host& h) {
  std::fprintf(stderr, "[spinlock] ping-pong between CPU 0 and CPU 1\n");
  const char* name = "spinlock_handoff_ns";
  if (h.ncpus < 2) {
    skip(name, "needs 2 CPUs");
    return;
  }
  constexpr long kTurns = 200000;
  bool pin_fail = false;
  auto v = repeat([&] {
    PingPong pp;
    std::thread t([&] {
      if (!pin_self(1)) pin_fail = true;
      pp.ready.store(1);
      player(pp, 1, kTurns);
    });
    while (pp.ready.load() == 0) {
    }
    double t0 = now_ns();
    player(pp, 0, kTurns);
    while (pp.turn.load() != 0) {  // wait for the last hand-back
    }
    double t1 = now_ns();
    t.join();
    return (t1 - t0) / (2.0 * kTurns);
  });
  if (pin_fail) {
    skip(name, "could not pin a thread to CPU 1");
    return;
  }
  record(name, v,
         "two threads on CPU 0/1 alternately take a std::atomic_flag test-and-set lock and pass a "
         "turn word in the same cache line; per hand-off (no PAUSE in spin loops)");
}

// ---------------------------------------------------------------- output

void print_toml(std::FILE* out, const Host& h, const std::string& cmd) {
  std::fprintf(out, "# measured by tools/calibrate/calibrate.cc on %s, %s (%s)%s, %s\n",
               h.kernel.c_str(), h.cpu.c_str(), h.cpu_id.c_str(),
               h.hypervisor ? ", virtual machine" : "", h.date.c_str());
  std::fprintf(out,
               "# command: g++ -std=c++20 -O2 -pthread tools/calibrate/calibrate.cc -o "
               "/tmp/calibrate && %s\n",
               cmd.c_str());
  std::fprintf(out, "# compiler: %s\n", __VERSION__);
  std::fprintf(
      out,
      "# each value: median of %d runs after 1 discarded warm-up; [spread] holds [min, max].\n",
      g_runs);
  std::fprintf(out,
               "# units: *_ns nanoseconds, *_pages pages, *_gbps 1e9 bytes/s; per 4 KiB page "
               "unless noted.\n\n");
  std::fprintf(out, "[host]\n");
  std::fprintf(out, "kernel = \"%s\"\n", h.kernel.c_str());
  std::fprintf(out, "cpu_model = \"%s\"\n", h.cpu.c_str());
  std::fprintf(out, "cpu_id = \"%s\"\n", h.cpu_id.c_str());
  std::fprintf(out, "virtualized = %s   # cpuinfo 'hypervisor' flag\n",
               h.hypervisor ? "true" : "false");
  std::fprintf(out, "cpus = %ld\n", h.ncpus);
  std::fprintf(out, "l2_bytes = %ld\n", h.l2_bytes);
  std::fprintf(out, "llc_bytes = %ld   # source: %s\n", h.llc_bytes, h.cache_source.c_str());
  std::fprintf(out, "date = \"%s\"\n\n", h.date.c_str());

  std::fprintf(out, "[costs]\n");
  for (const auto& e : g_entries) {
    if (e.skipped) {
      std::fprintf(out, "# %s skipped: %s\n", e.name.c_str(), e.method.c_str());
      continue;
    }
    int prec = e.stat.median < 10 ? 3 : (e.stat.median < 100 ? 2 : 1);
    std::fprintf(out, "%s = %.*f   # min %.*f, max %.*f; method: %s\n", e.name.c_str(), prec,
                 e.stat.median, prec, e.stat.min, prec, e.stat.max, e.method.c_str());
  }
  std::fprintf(out, "\n# notes\n");
  for (const auto& n : g_notes) std::fprintf(out, "# %s\n", n.c_str());

  std::fprintf(out, "\n[spread]  # [min, max] over the runs\n");
  for (const auto& e : g_entries)
    if (!e.skipped)
      std::fprintf(out, "%s = [%.4g, %.4g]\n", e.name.c_str(), e.stat.min, e.stat.max);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path;
  std::string cmd = argv[0];
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    cmd += " " + a;
    if (a == "--runs" && i + 1 < argc) {
      g_runs = std::max(3, std::atoi(argv[++i]));
      cmd += std::string(" ") + argv[i];
    } else if (a == "--out" && i + 1 < argc) {
      out_path = argv[++i];
      cmd += " " + out_path;
    } else {
      std::fprintf(stderr, "usage: %s [--runs N] [--out FILE]\n", argv[0]);
      return 2;
    }
  }

  Host h = detect_host();
  std::fprintf(
      stderr, "host: kernel %s | cpu %s (%s)%s | %ld CPUs | L2 %ld KiB | LLC %ld KiB (%s) | %s\n",
      h.kernel.c_str(), h.cpu.c_str(), h.cpu_id.c_str(), h.hypervisor ? " [VM]" : "", h.ncpus,
      h.l2_bytes / 1024, h.llc_bytes / 1024, h.cache_source.c_str(), h.date.c_str());
  if (!pin_self(0))
    std::fprintf(stderr, "calibrate: warning: could not pin to CPU 0; results will be noisier\n");

  {
    std::vector<double> c;
    for (int r = 0; r < 5; ++r) {
      double t0 = now_ns();
      for (int i = 0; i < 10000; ++i) now_ns();
      c.push_back((now_ns() - t0) / 10001);
    }
    g_clock_ns = util::median(c);
    note("clock_gettime(CLOCK_MONOTONIC) costs " + fmt("%.1f", g_clock_ns) +
         " ns; subtracted from per-call mprotect timings");
  }
  double t_start = now_ns();
  // Single-threaded measurements first: before any second thread has ever run
  // in this mm, so no TLB flush can need an IPI.
  measure_file();
  measure_anon();
  measure_cow();
  measure_mprotect();
  measure_syscall();
  measure_copy_zero();
  {
    Mapping big;
    std::string err;
    if (!big.map(kDramBytes, true, &err)) {
      std::fprintf(stderr, "calibrate: 512 MiB buffer: %s\n", err.c_str());
      big.p = nullptr;
    } else {
      big.populate(1);
      note("512 MiB buffer: AnonHugePages = " + std::to_string(anon_huge_kb()) + " kB");
    }
    measure_sweeps(h, big);
    measure_latency(h, big);
  }
  // Multi-threaded measurements last.
  measure_remote_flush(h);
  measure_spinlock(h);
  std::fprintf(stderr, "total %.1f s\n", (now_ns() - t_start) / 1e9);

  std::FILE* out = stdout;
  if (!out_path.empty()) {
    out = std::fopen(out_path.c_str(), "w");
    if (!out) {
      std::fprintf(stderr, "calibrate: %s: %s\n", out_path.c_str(), std::strerror(errno));
      return 1;
    }
  }
  print_toml(out, h, cmd);
  if (out != stdout) std::fclose(out);
  return 0;
}
