// mmsim-exec: the native executor. Reads a plan (plan/plan.h) and performs its
// programs on this host with real system calls, as the simulator's World runs
// them in its model, then prints what every task did as a plan::RunReport.
//
//   mmsim-exec --plan FILE --scratch DIR [--cgroup-root DIR] [--tmpfs DIR]
//              [--out FILE] [--keep-files]
//
// The top-level process is only a collector: it creates the plan's files in
// DIR (its tmpfs files in a directory of their own under --tmpfs, /dev/shm
// by default, which must be a tmpfs), forks the first task, reads the tasks' results from a pipe
// while the run goes on, reaps what is left, removes the files (unless --keep-files: the caller
// reads their page cache's charges first, then removes them) and writes the report (to FILE, else
// stdout). It maps nothing of the workload and is in no cgroup of the plan. Exit status: 0 the run
// took place (a task may still have failed: see its `end`), 2 bad usage or a bad plan, 3 the host
// refused the setup (scratch dir, cgroup, page size, output file), 128 + N interrupted by signal N
// (SIGINT, SIGTERM, SIGHUP: the run's processes are killed, its files removed, no report written),
// 1 an internal error.
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mempolicy.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.h"
#include "sweep.h"
#include "util/node_share.h"

namespace mmsim::exec {
namespace {

using plan::Op;
using plan::OpKind;

constexpr int kExitBadInput = 2;
constexpr int kExitHostRefused = 3;
constexpr int64_t kNever = INT64_MAX;
constexpr size_t kMaxPlanBytes = size_t{64} << 20;
// Bytes of a result line per message on the pipe: with its header, a message
// stays below PIPE_BUF, so that each write(2) is atomic.
constexpr size_t kChunk = 3500;
static_assert(kChunk + 64 < PIPE_BUF);

int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string errno_name(int err) {
  const char* n = ::strerrorname_np(err);
  return n ? std::string(n) : "errno " + std::to_string(err);
}

std::string signal_name(int sig) {
  const char* n = ::sigabbrev_np(sig);
  return n ? "SIG" + std::string(n) : "signal " + std::to_string(sig);
}

int64_t timeval_ns(const timeval& tv) {
  return int64_t{tv.tv_sec} * 1'000'000'000 + int64_t{tv.tv_usec} * 1000;
}

// Writes all of `text` to `fd`; false on failure.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t w = ::write(fd, text.data(), text.size());
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    text.remove_prefix(static_cast<size_t>(w));
  }
  return true;
}

// Sleeps until CLOCK_MONOTONIC reaches `when_ns`.
void sleep_until(int64_t when_ns) {
  timespec ts{};
  ts.tv_sec = when_ns / 1'000'000'000;
  ts.tv_nsec = when_ns % 1'000'000'000;
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// The CPUs of a cpulist ("0-3,8-11", as /sys/devices/system/node/nodeN/cpulist
// holds them; empty for a node with no CPUs), or nullopt if it is not one.
std::optional<std::vector<uint32_t>> parse_cpulist(std::string_view text) {
  std::vector<uint32_t> cpus;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
    const size_t dash = item.find('-');
    uint32_t lo = 0, hi = 0;
    const std::string_view a = item.substr(0, dash);
    const std::string_view b = dash == std::string_view::npos ? a : item.substr(dash + 1);
    const auto ra = std::from_chars(a.data(), a.data() + a.size(), lo);
    const auto rb = std::from_chars(b.data(), b.data() + b.size(), hi);
    if (a.empty() || b.empty() || ra.ec != std::errc() || ra.ptr != a.data() + a.size() ||
        rb.ec != std::errc() || rb.ptr != b.data() + b.size() || hi < lo || hi >= 65536) {
      return std::nullopt;
    }
    for (uint32_t c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

// What every task knows of the run: set before the first task starts, never
// changed after (each process has its own copy).
struct Run {
  plan::Plan plan;
  std::vector<std::string> file_paths;  // one per plan.files
  std::string cgroup_root;
  int pipe_fd = -1;  // the write end of the collector's pipe
  int64_t t0 = 0;    // CLOCK_MONOTONIC at the run's start
  int64_t deadline = kNever;
};

// A region's mapping; len 0: the region is not mapped.
struct Mapping {
  unsigned char* addr = nullptr;
  uint64_t len = 0;
};

// The regions of a process: its threads share them (the simulator's regions
// belong to the mm); a forked child gets a copy.
struct RegionTable {
  explicit RegionTable(std::vector<Mapping> m) : maps(std::move(m)) {}
  std::mutex mu;
  std::vector<Mapping> maps;
};

// The pipe's messages, one line each (text of our own making, no spaces in
// the fields but the chunk's):
//   S tid tgid parent program start_ns     a task started
//   R tid + chunk / R tid . chunk         a piece / the last piece of its
//                                          result, a report `task` line
//   K pid signal end_ns                    a process was killed by a signal
void send(int fd, const std::string& msg) { write_all(fd, msg); }

// One task (a process's first thread, or a thread): runs its program, reports
// its result, then waits for the processes and threads it started.
class Task {
 public:
  // slice_index of slices: which of the tasks its threads or fork op
  // started (an op's own_slice).
  Task(const Run& run, std::shared_ptr<RegionTable> regions, uint32_t program, int64_t parent,
       uint32_t join_cgroup = 0, uint64_t slice_index = 0, uint64_t slices = 1)
      : run_(run),
        regions_(std::move(regions)),
        program_(program),
        parent_(parent),
        join_cgroup_(join_cgroup),
        slice_index_(slice_index),
        slices_(slices) {}

  // Runs everything; never throws.
  void run() {
    tid_ = ::gettid();
    start_ns_ = now_ns() - run_.t0;
    const std::string& name = run_.plan.programs[program_].name;
    ::prctl(PR_SET_NAME, name.substr(0, 15).c_str(), 0, 0, 0);
    send(run_.pipe_fd, "S " + std::to_string(tid_) + " " + std::to_string(::getpid()) + " " +
                           std::to_string(parent_) + " " + std::to_string(program_) + " " +
                           std::to_string(start_ns_) + "\n");
    try {
      counters_.assign(run_.plan.counters.size(), 0);
      if (join_cgroup_ == 0 || do_cgroup(join_cgroup_) == Flow::kGo) {
        run_ops(run_.plan.programs[program_].ops);
      }
    } catch (const std::exception& e) {
      end_ = std::string("error: internal: ") + e.what();
    }
    try {
      report();
    } catch (const std::exception&) {
      // No memory left to say it: the collector reports "error: no report".
    }
    reap();
  }

  // Runs a task as a new process's first (and only) thread, then ends the
  // process: never returns into the frames it was forked from.
  [[noreturn]] static void run_process(const Run& run, std::vector<Mapping> regions,
                                       uint32_t program, int64_t parent, uint32_t join_cgroup,
                                       uint64_t slice_index = 0, uint64_t slices = 1) {
    try {
      Task task(run, std::make_shared<RegionTable>(std::move(regions)), program, parent,
                join_cgroup, slice_index, slices);
      task.run();
    } catch (const std::exception&) {
      ::_exit(1);
    }
    ::_exit(0);
  }

 private:
  enum class Flow { kGo, kStop };

  Flow run_ops(const std::vector<Op>& ops) {
    for (const Op& op : ops) {
      if (past_deadline() || run_op(op) == Flow::kStop) return Flow::kStop;
    }
    return Flow::kGo;
  }

  Flow run_op(const Op& op) {
    switch (op.kind) {
      case OpKind::kMap:
        return do_map(op);
      case OpKind::kUnmap:
        return do_unmap(op);
      case OpKind::kFork:
        return do_fork(op);
      case OpKind::kThreads:
        return do_threads(op);
      case OpKind::kWait:
        reap();
        return Flow::kGo;
      case OpKind::kLoop:
        return do_loop(op);
      case OpKind::kSweep:
      case OpKind::kTouch:
        return do_access(op);
      case OpKind::kMadvise:
      case OpKind::kMlock:
        return do_range_call(op);
      case OpKind::kSleep:
        return do_sleep(op.duration_ns);
      case OpKind::kCount: {
        uint64_t& c = counters_[op.counter];
        c = c > UINT64_MAX - op.count ? UINT64_MAX : c + op.count;
        return Flow::kGo;
      }
      case OpKind::kCgroup:
        return do_cgroup(op.cgroup);
      case OpKind::kPin:
        return do_pin(op);
      case OpKind::kMempolicy:
        return do_mempolicy(op);
    }
    return Flow::kGo;
  }

  // True (and the task's end is time_limit) once the plan's time limit is past.
  bool past_deadline() {
    if (run_.deadline == kNever || now_ns() < run_.deadline) return false;
    end_ = "time_limit";
    return true;
  }

  Flow fail(std::string_view call, int err) {
    end_ = "error: " + std::string(call) + ": " + errno_name(err);
    return Flow::kStop;
  }

  uint64_t page_size() const { return run_.plan.page_size; }

  Flow do_map(const Op& op) {
    const std::lock_guard lock(regions_->mu);
    Mapping& m = regions_->maps[op.region];
    // Mapping a region again is refused and the old mapping kept, as the
    // simulator does (it records the refusal; the task goes on).
    if (m.len) return Flow::kGo;
    if (op.pages > UINT64_MAX / page_size()) return fail("mmap", ENOMEM);
    const uint64_t len = op.pages * page_size();
    const int prot = PROT_READ | (op.writable ? PROT_WRITE : 0) | (op.exec ? PROT_EXEC : 0);
    int flags = op.shared ? MAP_SHARED : MAP_PRIVATE;
    int fd = -1;
    off_t offset = 0;
    if (op.file >= 0) {
      if (op.file_offset_pages > static_cast<uint64_t>(INT64_MAX) / page_size()) {
        return fail("mmap", EOVERFLOW);
      }
      offset = static_cast<off_t>(op.file_offset_pages * page_size());
      const int mode = op.shared && op.writable ? O_RDWR : O_RDONLY;
      fd = ::open(run_.file_paths[static_cast<size_t>(op.file)].c_str(), mode | O_CLOEXEC);
      if (fd < 0) return fail("open", errno);
    } else {
      flags |= MAP_ANONYMOUS;
    }
    void* addr = ::mmap(nullptr, len, prot, flags, fd, offset);
    const int err = errno;
    if (fd >= 0) ::close(fd);
    if (addr == MAP_FAILED) return fail("mmap", err);
    m = Mapping{static_cast<unsigned char*>(addr), len};
    if (op.policy == plan::Policy::kDefault) return Flow::kGo;
    return mbind(m, op);
  }

  // A policy's mode and node mask as mbind(2) and set_mempolicy(2) take
  // them, with the maxnode that covers the mask.
  struct PolicyArgs {
    int mode = MPOL_DEFAULT;
    std::vector<unsigned long> mask;
    unsigned long maxnode = 0;
  };
  static PolicyArgs policy_args(plan::Policy policy, const std::vector<uint16_t>& nodes) {
    PolicyArgs a;
    switch (policy) {
      case plan::Policy::kDefault:
        a.mode = MPOL_DEFAULT;
        break;
      case plan::Policy::kBind:
        a.mode = MPOL_BIND;
        break;
      case plan::Policy::kPreferred:
        a.mode = MPOL_PREFERRED;
        break;
      case plan::Policy::kInterleave:
        a.mode = MPOL_INTERLEAVE;
        break;
    }
    if (a.mode == MPOL_DEFAULT) return a;
    constexpr size_t kBits = sizeof(unsigned long) * CHAR_BIT;
    uint16_t top = 0;
    for (const uint16_t n : nodes) top = std::max(top, n);
    a.mask.assign(top / kBits + 1, 0);
    for (const uint16_t n : nodes) a.mask[n / kBits] |= 1UL << (n % kBits);
    // The kernel reads maxnode - 1 bits.
    a.maxnode = a.mask.size() * kBits + 1;
    return a;
  }

  // mbind(2) of the whole mapping to the op's policy and nodes.
  Flow mbind(const Mapping& m, const Op& op) {
    if (op.policy == plan::Policy::kDefault) return Flow::kGo;
    const PolicyArgs a = policy_args(op.policy, op.nodes);
    if (::syscall(SYS_mbind, m.addr, m.len, a.mode, a.mask.data(), a.maxnode, 0) != 0) {
      return fail("mbind", errno);
    }
    return Flow::kGo;
  }

  // The task's share of the host's nodes with CPUs (util::node_share), read
  // from /sys/devices/system/node/has_cpu.
  std::optional<std::vector<uint16_t>> share_nodes(plan::NodeShare share) {
    const auto text = read_text("/sys/devices/system/node/has_cpu");
    if (!text) return std::nullopt;
    const auto list = parse_cpulist(*text);
    if (!list || list->empty()) return std::nullopt;
    if (share == plan::NodeShare::kAll) return std::vector<uint16_t>(list->begin(), list->end());
    const auto [first, last] =
        util::node_share(slice_index_, slices_, list->size(), share == plan::NodeShare::kMirror);
    std::vector<uint16_t> nodes;
    for (uint64_t i = first; i < last; ++i) nodes.push_back(static_cast<uint16_t>((*list)[i]));
    return nodes;
  }

  // set_mempolicy(2): the task's own policy.
  Flow do_mempolicy(const Op& op) {
    std::vector<uint16_t> nodes = op.nodes;
    if (op.node_share != plan::NodeShare::kNone) {
      auto share = share_nodes(op.node_share);
      if (!share) return fail("node has_cpu", EINVAL);
      nodes = std::move(*share);
    }
    const PolicyArgs a = policy_args(op.policy, nodes);
    if (::syscall(SYS_set_mempolicy, a.mode, a.mask.empty() ? nullptr : a.mask.data(), a.maxnode) !=
        0) {
      return fail("set_mempolicy", errno);
    }
    return Flow::kGo;
  }

  Flow do_unmap(const Op& op) {
    const std::lock_guard lock(regions_->mu);
    Mapping& m = regions_->maps[op.region];
    if (m.len && ::munmap(m.addr, m.len) != 0) return fail("munmap", errno);
    m = Mapping{};
    return Flow::kGo;
  }

  Flow do_fork(const Op& op) {
    for (uint64_t i = 0; i < op.count; ++i) {
      if (past_deadline()) return Flow::kStop;
      // The region table is locked across fork(2), so that the child's copy
      // is the address space it gets.
      std::unique_lock lock(regions_->mu);
      std::vector<Mapping> copy = regions_->maps;
      const pid_t pid = ::fork();
      // The child: a process of its own with this thread only.
      if (pid == 0) run_process(run_, std::move(copy), op.program, tid_, 0, i, op.count);
      const int err = errno;
      lock.unlock();
      if (pid < 0) return fail("fork", err);
      children_.push_back(pid);
    }
    return Flow::kGo;
  }

  static void* thread_main(void* arg) {
    const std::unique_ptr<Task> task(static_cast<Task*>(arg));
    task->run();  // catches what it may throw
    return nullptr;
  }

  Flow do_threads(const Op& op) {
    for (uint64_t i = 0; i < op.count; ++i) {
      if (past_deadline()) return Flow::kStop;
      auto task = std::make_unique<Task>(run_, regions_, op.program, tid_, 0, i, op.count);
      pthread_t thread{};
      const int err = ::pthread_create(&thread, nullptr, thread_main, task.get());
      if (err != 0) return fail("pthread_create", err);
      task.release();  // the thread owns it now
      threads_.push_back(thread);
    }
    return Flow::kGo;
  }

  Flow do_loop(const Op& op) {
    const int64_t begin = now_ns();
    for (uint64_t i = 0;; ++i) {
      if (op.count ? i >= op.count : now_ns() - begin >= op.duration_ns) return Flow::kGo;
      if (past_deadline() || run_ops(op.body) == Flow::kStop) return Flow::kStop;
    }
  }

  Flow do_sleep(int64_t duration_ns) {
    const int64_t now = now_ns();
    const int64_t until = duration_ns > run_.deadline - now ? run_.deadline : now + duration_ns;
    sleep_until(until);
    return past_deadline() ? Flow::kStop : Flow::kGo;
  }

  // The op's range within its region's mapping, as the simulator's op_pages
  // and op_in_region see it.
  struct Range {
    unsigned char* addr = nullptr;
    uint64_t pages = 0;      // the mapped part
    bool in_region = false;  // all of the range is mapped
  };
  Range range_of(const Op& op) {
    Mapping m;
    {
      const std::lock_guard lock(regions_->mu);
      m = regions_->maps[op.region];
    }
    const uint64_t mapped = m.len / page_size();
    Range r;
    if (m.len == 0 || op.first_page >= mapped) return r;
    const uint64_t rest = mapped - op.first_page;
    r.addr = m.addr + op.first_page * page_size();
    r.pages = op.nr_pages ? std::min(op.nr_pages, rest) : rest;
    r.in_region = op.nr_pages <= rest;
    if (op.own_slice) {
      const uint64_t slice = r.pages / slices_;
      r.addr += slice_index_ * slice * page_size();
      r.pages = slice;
    }
    return r;
  }

  Flow do_access(const Op& op) {
    const Range r = range_of(op);
    last_range_ = r;
    const bool sweep = op.kind == OpKind::kSweep;
    const uint64_t elems = page_size() / op.elem_size;
    // memset(3) in pieces of up to 1 MiB, to see the deadline between them.
    constexpr uint64_t kMemsetChunk = uint64_t{1} << 20;
    const uint64_t chunk_pages = std::max<uint64_t>(1, kMemsetChunk / page_size());
    for (uint64_t p = 0; sweep && op.memset && p < r.pages; p += chunk_pages) {
      if (past_deadline()) return Flow::kStop;
      const uint64_t n = std::min(chunk_pages, r.pages - p);
      std::memset(r.addr + p * page_size(), 0, n * page_size());
      asm volatile("" ::: "memory");  // the stores happen (a compiler barrier, as numa01's)
    }
    // The clock is read once in 64 pages: in a guest whose clocksource is
    // emulated a read costs about as much as summing a page (the simulation
    // reads none), and a deadline is seconds away.
    constexpr uint64_t kDeadlinePages = 64;
    for (uint64_t p = 0; !op.memset && p < r.pages; ++p) {
      if (p % kDeadlinePages == 0 && past_deadline()) return Flow::kStop;
      unsigned char* page = r.addr + p * page_size();
      if (!sweep) {
        if (op.write) {
          *reinterpret_cast<volatile unsigned char*>(page) = 1;
        } else {
          sink_ += *reinterpret_cast<const volatile unsigned char*>(page);
        }
        continue;
      }
      if (op.write) {
        if (op.unoptimised) {
          sweep_write_O0(page, page_size(), op.elem_size);
        } else {
          sweep_write(page, page_size(), op.elem_size);
        }
      } else {
        sink_ += op.unoptimised ? sweep_read_O0(page, page_size(), op.elem_size).sum
                                : sweep_read(page, page_size(), op.elem_size).sum;
      }
      if (op.compute_ns >= 0) compute(static_cast<double>(elems) * op.compute_ns);
    }
    if (!r.in_region) {
      // SIMPLIFICATION: the program goes on past its mapping (or follows a
      // pointer to one it never made); what lies there need not fault on the
      // host, so the fault is raised, as the simulator's kill_task does.
      ::raise(SIGSEGV);
    }
    return Flow::kGo;
  }

  // Busy-waits `ns` (on CLOCK_MONOTONIC), at most until the deadline.
  void compute(double ns) {
    const int64_t now = now_ns();
    // Beyond 2^62 ns (146 years) is forever: until the deadline, if any.
    const int64_t span = ns < 0x1p62 ? static_cast<int64_t>(std::llround(ns)) : int64_t{1} << 62;
    const int64_t until = std::min(run_.deadline, now + span);
    while (now_ns() < until) {
    }
  }

  // madvise(2) (MADV_DONTNEED, MADV_HUGEPAGE, MADV_NOHUGEPAGE) or mlock(2)
  // over the mapped part of the range; a range not all mapped then fails
  // with ENOMEM, as the kernel's does.
  Flow do_range_call(const Op& op) {
    const bool madv = op.kind == OpKind::kMadvise;
    const char* call = madv ? "madvise" : "mlock";
    const Range r = range_of(op);
    if (r.pages) {
      const size_t len = r.pages * page_size();
      const int advice = op.advice == plan::Advice::kHugepage     ? MADV_HUGEPAGE
                         : op.advice == plan::Advice::kNohugepage ? MADV_NOHUGEPAGE
                                                                  : MADV_DONTNEED;
      const int rc = madv ? ::madvise(r.addr, len, advice) : ::mlock(r.addr, len);
      if (rc != 0) return fail(call, errno);
    }
    return r.in_region ? Flow::kGo : fail(call, ENOMEM);
  }

  // sched_setaffinity(0, ...) of this thread: the op's CPUs, or those of its
  // nodes as the host's sysfs lists them now (numactl --cpunodebind). Threads
  // and processes it starts later inherit the mask.
  // The text of a small /sys file, or nullopt (errno set).
  static std::optional<std::string> read_text(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    char buf[4096];
    const ssize_t len = ::read(fd, buf, sizeof buf - 1);
    const int err = errno;
    ::close(fd);
    errno = err;
    if (len < 0) return std::nullopt;
    return std::string(buf, static_cast<size_t>(len));
  }

  Flow do_pin(const Op& op) {
    std::vector<uint32_t> cpus = op.cpus;
    std::vector<uint16_t> nodes = op.nodes;
    if (op.node_share != plan::NodeShare::kNone) {
      auto share = share_nodes(op.node_share);
      if (!share) return fail("node has_cpu", EINVAL);
      nodes = std::move(*share);
    }
    for (const uint16_t n : nodes) {
      const auto text = read_text("/sys/devices/system/node/node" + std::to_string(n) + "/cpulist");
      if (!text) return fail("node cpulist", errno);
      const auto list = parse_cpulist(*text);
      if (!list) return fail("node cpulist", EINVAL);
      cpus.insert(cpus.end(), list->begin(), list->end());
    }
    uint32_t top = 0;
    for (const uint32_t c : cpus) top = std::max(top, c);
    cpu_set_t* set = CPU_ALLOC(top + 1);
    if (!set) return fail("sched_setaffinity", ENOMEM);
    const size_t size = CPU_ALLOC_SIZE(top + 1);
    CPU_ZERO_S(size, set);
    for (const uint32_t c : cpus) CPU_SET_S(c, size, set);
    // An empty set (nodes without CPUs) fails here with EINVAL, as it would
    // for taskset.
    const int rc = ::sched_setaffinity(0, size, set);
    const int err = errno;
    CPU_FREE(set);
    return rc == 0 ? Flow::kGo : fail("sched_setaffinity", err);
  }

  // Moves this process into cgroup `index` (0: the run's root).
  Flow do_cgroup(uint32_t index) {
    const std::string path =
        run_.cgroup_root + (index ? run_.plan.cgroups[index - 1] : "") + "/cgroup.procs";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return fail("cgroup.procs", errno);
    const bool ok = write_all(fd, std::to_string(::getpid()) + "\n");
    const int err = errno;
    ::close(fd);
    return ok ? Flow::kGo : fail("cgroup.procs", err);
  }

  // Sends the task's result, in pieces that each fit one atomic write.
  // Of the pages of the task's last sweep or touch, the share present on
  // `node`, in % of those present (move_pages(2) with no target node
  // reports where each page is); -1 if none is.
  double local_pct(int node) const {
    constexpr size_t kBatch = 1024;
    std::vector<void*> pages;
    std::vector<int> status(kBatch);
    uint64_t present = 0, local = 0;
    for (uint64_t p = 0; p < last_range_.pages; p += kBatch) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kBatch, last_range_.pages - p));
      pages.clear();
      for (size_t i = 0; i < n; ++i) pages.push_back(last_range_.addr + (p + i) * page_size());
      if (::syscall(SYS_move_pages, 0, n, pages.data(), nullptr, status.data(), 0) != 0) return -1;
      for (size_t i = 0; i < n; ++i) {
        present += status[i] >= 0;
        local += status[i] == node;
      }
    }
    if (present == 0) return -1;
    return 100.0 * static_cast<double>(local) / static_cast<double>(present);
  }

  void report() {
    rusage ru{};
    ::getrusage(RUSAGE_THREAD, &ru);
    plan::RunReport one;
    plan::TaskResult& t = one.tasks.emplace_back();
    t.tid = tid_;
    t.tgid = ::getpid();
    t.parent = parent_;
    t.program = program_;
    t.start_ns = start_ns_;
    t.end_ns = now_ns() - run_.t0;
    t.user_ns = timeval_ns(ru.ru_utime);
    t.sys_ns = timeval_ns(ru.ru_stime);
    t.minflt = static_cast<uint64_t>(ru.ru_minflt);
    t.majflt = static_cast<uint64_t>(ru.ru_majflt);
    t.nvcsw = static_cast<uint64_t>(ru.ru_nvcsw);
    t.nivcsw = static_cast<uint64_t>(ru.ru_nivcsw);
    t.end = end_;
    t.counters = counters_;
    unsigned cpu = 0, node = 0;
    if (::syscall(SYS_getcpu, &cpu, &node, nullptr) == 0) {
      t.node = node;
      t.local_pct = local_pct(static_cast<int>(node));
    }
    const std::string text = plan::write_report(one);
    // The task line is the report's third line.
    size_t start = text.find('\n');
    start = text.find('\n', start + 1) + 1;
    std::string_view line(text);
    line = line.substr(start, text.size() - start - 1);
    const std::string head = "R " + std::to_string(tid_);
    do {
      const std::string_view chunk = line.substr(0, kChunk);
      line.remove_prefix(chunk.size());
      send(run_.pipe_fd, head + (line.empty() ? " . " : " + ") + std::string(chunk) + "\n");
    } while (!line.empty());
  }

  // Waits for every child process and joins every thread this task started;
  // a child killed by a signal is reported here.
  void reap() {
    for (const pid_t pid : children_) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (WIFSIGNALED(status)) {
        send(run_.pipe_fd, "K " + std::to_string(pid) + " " + std::to_string(WTERMSIG(status)) +
                               " " + std::to_string(now_ns() - run_.t0) + "\n");
      }
    }
    children_.clear();
    for (const pthread_t t : threads_) ::pthread_join(t, nullptr);
    threads_.clear();
  }

  const Run& run_;
  std::shared_ptr<RegionTable> regions_;
  const uint32_t program_;
  const int64_t parent_;
  const uint32_t join_cgroup_;
  const uint64_t slice_index_, slices_;
  Range last_range_;  // of the last sweep or touch (local_pct)
  int64_t tid_ = 0;
  int64_t start_ns_ = 0;
  std::vector<uint64_t> counters_;
  std::vector<pid_t> children_;
  std::vector<pthread_t> threads_;
  std::string end_ = "exit";
  uint64_t sink_ = 0;  // what reads read (kept, not used)
};

// --- the collector ---------------------------------------------------------

// The tasks as the pipe tells of them.
class Collector {
 public:
  Collector(const Run& run, int64_t t0) : run_(run), t0_(t0) {}

  // Handles one message line (without its newline).
  void message(std::string_view m) {
    const std::vector<std::string_view> f = words(m, m.empty() || m[0] != 'R' ? 8 : 4);
    if (f.size() == 6 && f[0] == "S") {
      Entry e;
      e.r.tid = num(f[1]);
      e.r.tgid = num(f[2]);
      e.r.parent = num(f[3]);
      e.r.program = static_cast<uint32_t>(num(f[4]));
      e.r.start_ns = num(f[5]);
      by_tid_[e.r.tid] = entries_.size();
      entries_.push_back(std::move(e));
    } else if (f.size() == 4 && f[0] == "R" && (f[2] == "+" || f[2] == ".")) {
      const int64_t tid = num(f[1]);
      std::string& text = partial_[tid];
      text += f[3];
      if (f[2] == ".") {
        finish(tid, text);
        partial_.erase(tid);
      }
    } else if (f.size() == 4 && f[0] == "K") {
      killed(num(f[1]), static_cast<int>(num(f[2])), num(f[3]));
    } else {
      bad_ = true;
    }
  }

  // A process the collector reaped (the first task's, or an orphan's).
  void reaped(pid_t pid, int status) {
    if (WIFSIGNALED(status)) killed(pid, WTERMSIG(status), now_ns() - t0_);
  }

  bool bad() const { return bad_; }

  plan::RunReport report() {
    // A task with no result died with its process: killed by a signal.
    const int64_t now = now_ns() - t0_;
    std::vector<plan::TaskResult> tasks;
    for (Entry& e : entries_) {
      if (!e.done) {
        e.r.counters.assign(run_.plan.counters.size(), 0);
        const auto k = kills_.find(e.r.tgid);
        e.r.end = k != kills_.end() ? k->second.first : "error: no report";
        e.r.end_ns = k != kills_.end() ? k->second.second : now;
      }
      tasks.push_back(std::move(e.r));
    }
    std::stable_sort(tasks.begin(), tasks.end(),
                     [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
    plan::RunReport r;
    if (!tasks.empty()) {
      int64_t first = INT64_MAX, last = INT64_MIN;
      for (const auto& t : tasks) {
        first = std::min(first, t.start_ns);
        last = std::max(last, t.end_ns);
        if (t.end == "time_limit") r.time_limit_hit = true;
      }
      r.elapsed_ns = std::max<int64_t>(0, last - first);
    }
    r.tasks = std::move(tasks);
    return r;
  }

 private:
  struct Entry {
    plan::TaskResult r;
    bool done = false;
  };

  static std::vector<std::string_view> words(std::string_view m, size_t max) {
    std::vector<std::string_view> out;
    while (!m.empty() && out.size() + 1 < max) {
      const size_t sp = m.find(' ');
      out.push_back(m.substr(0, sp));
      if (sp == std::string_view::npos) return out;
      m.remove_prefix(sp + 1);
    }
    out.push_back(m);
    return out;
  }

  int64_t num(std::string_view s) {
    int64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) bad_ = true;
    return v;
  }

  void finish(int64_t tid, const std::string& line) {
    std::string error;
    auto one = plan::read_report("mmsim-report " + std::to_string(plan::kReportVersion) +
                                     "\nrun elapsed_ns=0 time_limit_hit=0\n" + line,
                                 &error);
    if (!one || one->tasks.size() != 1) {
      bad_ = true;
      return;
    }
    const auto it = by_tid_.find(tid);
    if (it == by_tid_.end()) {
      bad_ = true;
      return;
    }
    entries_[it->second].r = std::move(one->tasks[0]);
    entries_[it->second].done = true;
  }

  void killed(int64_t pid, int sig, int64_t end_ns) {
    kills_[pid] = {"killed by " + signal_name(sig), end_ns};
  }

  const Run& run_;
  const int64_t t0_;
  std::vector<Entry> entries_;
  std::map<int64_t, size_t> by_tid_;                          // the latest task with this tid
  std::map<int64_t, std::string> partial_;                    // results still in pieces
  std::map<int64_t, std::pair<std::string, int64_t>> kills_;  // by pid
  bool bad_ = false;
};

// --- set-up ----------------------------------------------------------------

struct Args {
  std::string plan, scratch, cgroup_root, out;
  std::string tmpfs = "/dev/shm";  // where the plan's tmpfs files go (in a directory of their own)
  bool keep_files = false;         // leave the files (and their page cache) for the caller
};

[[noreturn]] void die(int code, const std::string& msg) {
  std::fprintf(stderr, "mmsim-exec: %s\n", msg.c_str());
  std::exit(code);
}

[[noreturn]] void usage(const std::string& msg) {
  die(kExitBadInput, msg +
                         " (usage: mmsim-exec --plan FILE --scratch DIR [--cgroup-root DIR] "
                         "[--tmpfs DIR] [--out FILE] [--keep-files])");
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    std::string* dest = flag == "--plan"          ? &a.plan
                        : flag == "--scratch"     ? &a.scratch
                        : flag == "--cgroup-root" ? &a.cgroup_root
                        : flag == "--out"         ? &a.out
                        : flag == "--tmpfs"       ? &a.tmpfs
                                                  : nullptr;
    if (flag == "--keep-files") {
      a.keep_files = true;
      continue;
    }
    if (!dest) usage("unknown argument \"" + std::string(flag) + "\"");
    if (i + 1 >= argc) usage(std::string(flag) + " needs a value");
    *dest = argv[++i];
    if (dest->empty()) usage(std::string(flag) + " needs a non-empty value");
  }
  if (a.plan.empty()) usage("--plan is required");
  if (a.scratch.empty()) usage("--scratch is required");
  return a;
}

std::optional<std::string> read_file(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxPlanBytes) {
      *error = "larger than 64 MiB";
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return text;
}

bool uses_cgroups(const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    if (op.kind == OpKind::kCgroup || uses_cgroups(op.body)) return true;
  }
  return false;
}

// The files the collector created, removed on every way out.
std::vector<std::string> g_created;

// The signal that interrupted the collector (SIGINT, SIGTERM or SIGHUP), or
// 0; and the run's process group, once it exists.
volatile sig_atomic_t g_interrupted = 0;
volatile sig_atomic_t g_run_group = 0;

void on_interrupt(int sig) {
  g_interrupted = sig;
  if (g_run_group > 0) ::kill(-static_cast<pid_t>(g_run_group), SIGKILL);
}

constexpr int kInterrupts[] = {SIGINT, SIGTERM, SIGHUP};

// Without SA_RESTART, so that the collector's read(2) returns on the signal.
void set_interrupt_handlers(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  for (const int sig : kInterrupts) ::sigaction(sig, &sa, nullptr);
}

// The --out file, once created; removed if no report is written to it.
std::string g_out;

// The directory made for the tmpfs files, once made; removed after them.
std::string g_tmpfs_dir;

void remove_files() {
  for (const std::string& p : g_created) ::unlink(p.c_str());
  g_created.clear();
  if (!g_tmpfs_dir.empty()) ::rmdir(g_tmpfs_dir.c_str());
  g_tmpfs_dir.clear();
}

[[noreturn]] void refuse(const std::string& msg) {
  remove_files();
  if (!g_out.empty()) ::unlink(g_out.c_str());
  die(kExitHostRefused, msg);
}

// Creates `path` with `bytes` of non-zero data on disk, not in the page cache
// (or, when `cached`, read back into it). On a tmpfs (`tmpfs`): the data
// written (in memory: shmem) when `cached`, else a file of holes, whose pages
// the run's faults allocate.
void create_file(const std::string& path, uint64_t bytes, bool cached, bool tmpfs) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) refuse("cannot create " + path + ": " + std::strerror(errno));
  g_created.push_back(path);
  if (tmpfs && !cached) {
    if (bytes > static_cast<uint64_t>(INT64_MAX) || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0)
      refuse("cannot size " + path + ": " + std::strerror(errno));
    ::close(fd);
    return;
  }
  std::vector<unsigned char> chunk(size_t{1} << 20);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<unsigned char>(1 + i * 31 % 255);
  uint64_t done = 0;
  while (done < bytes) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), bytes - done));
    if (!write_all(fd, std::string_view(reinterpret_cast<const char*>(chunk.data()), n))) {
      refuse("cannot write " + path + ": " + std::strerror(errno));
    }
    done += n;
  }
  if (tmpfs) {
    ::close(fd);
    return;
  }
  if (::fsync(fd) != 0) refuse("cannot fsync " + path + ": " + std::strerror(errno));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  if (!cached) return;
  const int rfd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (rfd < 0) refuse("cannot read " + path + ": " + std::strerror(errno));
  for (;;) {
    const ssize_t n = ::read(rfd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) refuse("cannot read " + path + ": " + std::strerror(errno));
    if (n == 0) break;
  }
  ::close(rfd);
}

// The host's counters: every /proc/vmstat line, and the iowait of /proc/stat's
// "cpu" line in ns (0 when unreadable).
struct HostCounters {
  plan::Counters vmstat;
  int64_t iowait_ns = 0;
};

HostCounters read_host_counters() {
  HostCounters h;
  std::string error;
  if (const auto text = read_file("/proc/vmstat", &error)) h.vmstat = plan::parse_counters(*text);
  if (const auto text = read_file("/proc/stat", &error)) {
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0;
    const long hz = ::sysconf(_SC_CLK_TCK);
    if (std::sscanf(text->c_str(), "cpu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
                    &iowait) == 5 &&
        hz > 0) {
      h.iowait_ns = static_cast<int64_t>(iowait) * (1'000'000'000 / hz);
    }
  }
  return h;
}

int run_main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  Run run;
  {
    std::string error;
    const auto text = read_file(args.plan, &error);
    if (!text) die(kExitBadInput, args.plan + ": cannot read: " + error);
    auto plan = plan::read_plan(*text, &error);
    if (!plan) die(kExitBadInput, args.plan + ": " + error);
    run.plan = std::move(*plan);
  }
  const plan::Plan& plan = run.plan;
  bool cgroups = plan.init_cgroup != 0 || !plan.cgroups.empty();
  for (const plan::Program& p : plan.programs) cgroups = cgroups || uses_cgroups(p.ops);
  if (cgroups && args.cgroup_root.empty()) {
    die(kExitBadInput,
        args.plan + ": the plan moves tasks between cgroups: --cgroup-root is required");
  }

  // What the host must provide.
  const long host_page = ::sysconf(_SC_PAGESIZE);
  if (host_page <= 0 || static_cast<uint64_t>(host_page) != plan.page_size) {
    refuse("the plan's page size is " + std::to_string(plan.page_size) + " bytes, this host's " +
           std::to_string(host_page));
  }
  struct stat st {};
  if (::stat(args.scratch.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      ::access(args.scratch.c_str(), W_OK | X_OK) != 0) {
    refuse("scratch directory " + args.scratch + " is not a writable directory");
  }
  if (cgroups) {
    run.cgroup_root = args.cgroup_root;
    while (run.cgroup_root.size() > 1 && run.cgroup_root.back() == '/') run.cgroup_root.pop_back();
    std::vector<std::string> paths = {""};
    paths.insert(paths.end(), plan.cgroups.begin(), plan.cgroups.end());
    for (const std::string& p : paths) {
      const std::string procs = run.cgroup_root + p + "/cgroup.procs";
      if (::access(procs.c_str(), W_OK) != 0) {
        refuse("cgroup " + run.cgroup_root + p + " is missing or not writable (" + procs + ": " +
               std::strerror(errno) + ")");
      }
    }
  }
  int out_fd = STDOUT_FILENO;
  if (!args.out.empty()) {
    out_fd = ::open(args.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) refuse("cannot write " + args.out + ": " + std::strerror(errno));
    g_out = args.out;
  }
  // A task killed by a signal leaves no core file behind.
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  if (std::any_of(plan.files.begin(), plan.files.end(),
                  [](const plan::File& f) { return f.tmpfs; })) {
    struct statfs sfs {};
    if (::statfs(args.tmpfs.c_str(), &sfs) != 0) {
      refuse("tmpfs directory " + args.tmpfs + ": " + std::strerror(errno));
    }
    if (sfs.f_type != TMPFS_MAGIC) {
      refuse("the plan has tmpfs files, but " + args.tmpfs +
             " is not a tmpfs (give a tmpfs directory with --tmpfs)");
    }
    std::string tmpl = args.tmpfs + "/mmsim-exec-XXXXXX";
    if (!::mkdtemp(tmpl.data())) {
      refuse("cannot create a directory in " + args.tmpfs + ": " + std::strerror(errno));
    }
    g_tmpfs_dir = tmpl;
  }
  for (const plan::File& f : plan.files) {
    const std::string path = (f.tmpfs ? g_tmpfs_dir : args.scratch) + "/" + f.name;
    run.file_paths.push_back(path);
    create_file(path, f.pages * plan.page_size, f.cached, f.tmpfs);
  }

  // The run: the first task in a child; orphans come back to the collector.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) refuse(std::string("pipe: ") + std::strerror(errno));
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  run.pipe_fd = fds[1];
  run.t0 = now_ns();
  if (plan.time_limit_ns > 0) run.deadline = run.t0 + plan.time_limit_ns;
  // An interrupt kills the whole run: its tasks are a process group of
  // their own, which the collector kills.
  set_interrupt_handlers(on_interrupt);
  std::fflush(nullptr);
  const HostCounters before = read_host_counters();
  const pid_t first = ::fork();
  if (first < 0) refuse(std::string("fork: ") + std::strerror(errno));
  if (first == 0) {
    set_interrupt_handlers(SIG_DFL);
    ::setpgid(0, 0);
    ::close(fds[0]);
    if (out_fd != STDOUT_FILENO) ::close(out_fd);
    Task::run_process(run, std::vector<Mapping>(plan.regions.size()), plan.init_program, 0,
                      plan.init_cgroup);
  }
  ::setpgid(first, first);  // also here: the child may not have run yet
  g_run_group = first;
  if (g_interrupted) ::kill(-first, SIGKILL);
  ::close(fds[1]);

  Collector collector(run, run.t0);
  std::string buf;
  char chunk[8192];
  for (;;) {
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // every task's process has ended
    buf.append(chunk, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
      collector.message(std::string_view(buf).substr(start, nl - start));
    }
    buf.erase(0, start);
  }
  ::close(fds[0]);
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;  // ECHILD: nothing left
    collector.reaped(pid, status);
  }
  const HostCounters after = read_host_counters();
  // --keep-files: the caller reads the page cache's charges, then removes them.
  if (!args.keep_files || g_interrupted) remove_files();
  if (g_interrupted) {
    // No report: the run did not end on its own.
    if (!g_out.empty()) ::unlink(g_out.c_str());
    std::fprintf(stderr, "mmsim-exec: interrupted by %s; the run's processes were killed\n",
                 signal_name(g_interrupted).c_str());
    return 128 + g_interrupted;
  }
  plan::RunReport report = collector.report();
  report.vmstat = plan::counters_delta(before.vmstat, after.vmstat);
  report.iowait_ns = after.iowait_ns - before.iowait_ns;
  if (!write_all(out_fd, plan::write_report(report))) {
    die(kExitHostRefused, "cannot write the report: " + std::string(std::strerror(errno)));
  }
  if (out_fd != STDOUT_FILENO && ::close(out_fd) != 0) {
    die(kExitHostRefused, "cannot write " + args.out + ": " + std::strerror(errno));
  }
  if (collector.bad() || !buf.empty()) {
    die(1, "internal error: a malformed message from a task (please report it)");
  }
  return 0;
}

}  // namespace
}  // namespace mmsim::exec

int main(int argc, char** argv) {
  try {
    return mmsim::exec::run_main(argc, argv);
  } catch (const std::exception& e) {
    mmsim::exec::remove_files();
    std::fprintf(stderr, "mmsim-exec: internal error: %s\n", e.what());
    return 1;
  }
}
