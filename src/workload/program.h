// Workloads as data: the programs that processes run, made of operations on
// named memory regions. Built and validated by the scenario layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mm/folio.h"
#include "sim/types.h"

namespace mmsim::workload {

enum class OpKind : uint8_t {
  kMap,        // mmap a region
  kUnmap,      // munmap a region
  kFork,       // fork `count` children running `program`
  kThreads,    // start `count` threads (sharing the mm) running `program`
  kWait,       // wait for every child process and thread started by this task
  kLoop,       // repeat `body` `count` times, or while less than `duration` has passed
  kSweep,      // read or write every element of a region, compute_ns per element
  kTouch,      // access one byte of each page of a region
  kMadvise,    // madvise(2) over a region: `advice`
  kMlock,      // mlock a region (populates it)
  kSleep,      // sleep for `duration`
  kCount,      // add `count` to a named per-task counter
  kCgroup,     // move this process to a memory cgroup (charges move per its settings)
  kPin,        // sched_setaffinity(0, ...): run only on `cpus`, or the CPUs of `cpu_nodes`
  kMempolicy,  // set_mempolicy(2): the task's own policy, for VMAs that have none
};

// A pin's or a mempolicy's nodes given by the task's place among the tasks
// its threads or fork op started (util::node_share): its own share of the
// nodes with CPUs, or the share of the task at the other end (mirror); or
// every node with CPUs (all: undoing an earlier pin).
enum class NodeShare : uint8_t { kNone, kOwn, kMirror, kAll };

struct Op {
  OpKind kind = OpKind::kCount;
  uint32_t region = 0;  // region id (kMap, kUnmap, kSweep, kTouch, kMadvise, kMlock)
  // kMap
  uint64_t pages = 0;
  bool shared = false;
  bool writable = false;
  bool exec = false;
  int32_t file = -1;  // scenario file index, -1 for anonymous
  uint64_t file_offset_pages = 0;
  mm::MemPolicy policy;  // kMap: the VMA's (mbind); kMempolicy: the task's
  // kPin, kMempolicy: the nodes by the task's share, not listed
  NodeShare node_share = NodeShare::kNone;
  // kFork, kThreads
  uint32_t program = 0;
  // kFork/kThreads: how many; kLoop: iterations (0 = use duration); kCount: increment
  uint64_t count = 0;
  // kLoop, kSleep
  Tick duration;
  std::vector<Op> body;  // kLoop
  // kSweep, kTouch
  bool write = false;
  // kSweep, kTouch: only the task's own slice of the range: the range in as
  // many equal slices (rounded down) as the threads or fork op that started
  // the task started tasks, the i-th task's the i-th (autonuma-benchmark's
  // numa01_THREAD_ALLOC and numa02). A task no such op started has one.
  bool own_slice = false;
  uint32_t elem_size = 4;  // bytes per element (kSweep)
  double compute_ns = -1;  // per element; < 0: the cost profile's, by `unoptimised`
  // kSweep: the loop as built without optimisation (gcc -O0: sweep_elem_O0_ns,
  // latency-bound), not optimised (-O2: sweep_elem_ns, throughput-bound).
  bool unoptimised = false;
  // kSweep: glibc's memset/bzero over the range (`build = "memset"`): no
  // per-element work, every line written at the memory's streaming rate.
  bool memset = false;
  uint64_t first_page = 0;  // sub-range of the region
  uint64_t nr_pages = 0;    // 0: to the end of the region
  // kMadvise: MADV_DONTNEED, MADV_HUGEPAGE or MADV_NOHUGEPAGE
  enum class Advice : uint8_t { kDontneed, kHugepage, kNohugepage } advice = Advice::kDontneed;
  // kCount
  uint32_t counter = 0;
  // kCgroup: index into Workload::cgroups + 1 (0 is the root)
  uint32_t cgroup = 0;
  // kPin: exactly one of the two is non-empty (ascending, no duplicates)
  std::vector<CpuId> cpus;
  std::vector<NodeId> cpu_nodes;  // numactl --cpunodebind: every CPU of these nodes
};

// Whether running the op advances the task's clock: every op but `count`,
// and a loop whose body does.
inline bool takes_time(const Op& op) {
  if (op.kind == OpKind::kCount) return false;
  if (op.kind != OpKind::kLoop) return true;
  for (const Op& b : op.body) {
    if (takes_time(b)) return true;
  }
  return false;
}

// a + b, or UINT64_MAX when the sum does not fit (counters saturate).
inline uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
// a * b, or UINT64_MAX when the product does not fit.
inline uint64_t mul_sat(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

struct Program {
  std::string name;
  std::vector<Op> ops;
};

// A file the scenario provides (an executable, a data file).
struct FileSpec {
  std::string name;
  uint64_t pages = 0;
  bool cached = false;  // in the page cache before the run starts
  uint16_t cached_node = 0;
  // [[files]] fs = "tmpfs": a shmem file (swap-backed page cache, zero-filled
  // where never written, no write-notify); else a file on disk.
  bool tmpfs = false;
};

struct RegionSpec {
  std::string name;
};

// Everything a World needs to run a workload.
struct Workload {
  std::vector<FileSpec> files;
  std::vector<RegionSpec> regions;
  std::vector<std::string> counters;
  std::vector<Program> programs;
  std::vector<std::string> cgroup_paths;  // [[cgroups]] in order (ids 1..)
  uint32_t init_program = 0;              // the first process runs this
  uint32_t init_cgroup = 0;               // memcg of the first process (0: root)
  // [run] convergence: the program whose tasks must, in each process, all be
  // on one node (perf bench numa's convergence); UINT32_MAX: none.
  uint32_t convergence_program = UINT32_MAX;
  // How many tasks run it over the run (fork and threads ops outside loops).
  uint64_t convergence_tasks = 0;
  std::string init_comm = "init";
  // [run] process_image: "in-use" (true, the default), the VMAs of the
  // process image and the pages mmsim-exec keeps resident in them, faulted
  // in at a task's start and touched again after a NUMA scan pass marks
  // them; "mapped" (false), the VMAs without pages.
  bool image_in_use = true;
  // [run] executable_fs: where mmsim-exec's file lives, whose private
  // mapping holds the image's data VMA: "disk" (false, the default: a
  // native run from the build tree) or "tmpfs" (true: validate's guest runs
  // it from its initramfs, whose rootfs is shmem; up to 6.11 a shmem VMA
  // without a policy is never scanned).
  bool executable_on_tmpfs = false;
};

}  // namespace mmsim::workload
