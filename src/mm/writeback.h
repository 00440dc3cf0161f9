// Models the writeback of dirty page cache (mm/page-writeback.c and
// fs/fs-writeback.c):
//  - the dirty accounting: NR_FILE_DIRTY (nr_dirty), NR_WRITEBACK
//    (nr_writeback), nr_dirtied, nr_written, each memcg's file_dirty and
//    file_writeback, and each inode's dirty tag (the set of its dirty
//    offsets, the xarray's PAGECACHE_TAG_DIRTY) and dirtied_when;
//  - the dirty limits of the global domain (global_dirtyable_memory) and of a
//    cgroup v2 memcg (mem_cgroup_wb_stats, mdtc_calc_avail), each
//    domain_dirty_limits' thresh and bg_thresh from vm.dirty_ratio and
//    vm.dirty_background_ratio;
//  - balance_dirty_pages: a task that dirties pages past the freerun ceiling
//    of either domain starts background writeback and sleeps for its pages
//    at its ratelimit, the write bandwidth scaled by the domain's position
//    ratio (0 at the limit: the longest pause, then a check at every page);
//  - the flusher, whose works are, in wb_do_writeback's order, writeback of
//    all dirty pages (reclaim's wakeup_flusher_threads), the periodic
//    kupdate writeback of inodes dirty for dirty_expire_centisecs (every
//    dirty_writeback_centisecs while anything is dirty) and background
//    writeback while a domain is over its background threshold. A pass
//    writes a chunk (writeback_chunk_size) of each inode's dirty pages, in
//    index order from where its last pass stopped (range_cyclic);
//  - a written folio (folio_clear_dirty_for_io, folio_start_writeback):
//    clean, its PTEs clean and read-only (folio_mkclean, so the next write
//    faults and dirties it again), PG_writeback until its bio completes on
//    the disk, a FIFO server writing 128 KiB in the cost profile's
//    storage_write_ns; then folio_end_writeback, which moves a folio that
//    reclaim marked PG_reclaim to the inactive list's tail (pgrotated).
//
// The World owns time: it runs the flusher's passes and the bios' ends as
// events, and puts a throttled task to sleep.
//
// SIMPLIFICATIONS: one bdi_writeback for the machine's one disk (the
// kernel's cgroup writeback gives each memcg its own, writing the inodes
// that memcg owns): a background work started for a memcg's domain writes
// that memcg's pages. The wb-level shares of the limits (wb_thresh, for one
// disk all of it) and the ratelimit's feedback loop are left out:
// dirty_ratelimit is taken as converged to the disk's write bandwidth.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/types.h"

namespace mmsim::mm {

class MemoryManager;
struct Folio;

// A domain's dirty state and limits (struct dirty_throttle_control), in pages.
struct DirtyLimits {
  uint64_t avail = 0;       // dirtyable memory
  uint64_t dirty = 0;       // dirty and under writeback
  uint64_t file_dirty = 0;  // dirty only (what background writeback is judged by)
  uint64_t thresh = 0;
  uint64_t bg_thresh = 0;
  // dirty_freerun_ceiling: below it a dirtier is not throttled.
  uint64_t freerun() const { return (thresh + bg_thresh) / 2; }
};

// A memcg's share of the page cache for its dirty domain
// (mem_cgroup_wb_stats): its file LRU pages, the room left under its limits
// and its ancestors', and its dirty and writeback pages (its subtree's).
struct WbStats {
  uint64_t filepages = 0;
  uint64_t headroom = 0;
  uint64_t dirty = 0;
  uint64_t writeback = 0;
};

// A task's dirtying (task_struct's nr_dirtied, nr_dirtied_pause).
struct TaskDirty {
  uint64_t nr_dirtied = 0;
  uint64_t nr_dirtied_pause = 32;  // 128 KiB, as a new task starts
};

class Writeback {
 public:
  explicit Writeback(MemoryManager& mm);

  // folio_account_dirtied: a page-cache folio of a disk file became dirty.
  void account_dirtied(const Folio& f);
  // Pages dirtied since the last call (what the faulting task just dirtied).
  uint64_t take_dirtied() { return std::exchange(dirtied_now_, 0); }
  // Inodes that became dirty since the last call get `now` as dirtied_when.
  void stamp(Tick now);

  // PG_writeback.
  bool under_writeback(Pfn pfn) const {
    return !writeback_of_.empty() && writeback_of_.contains(static_cast<uint32_t>(pfn.v));
  }
  // mem_cgroup_move_account of a page-cache folio: its dirty or writeback
  // state moves with its charge.
  void move_account(const Folio& f, Pfn pfn, uint32_t from, uint32_t to);
  // Dirty and writeback pages charged to the memcg itself (not its children).
  uint64_t memcg_dirty(uint32_t memcg) const { return memcg < dirty_.size() ? dirty_[memcg] : 0; }
  uint64_t memcg_writeback(uint32_t memcg) const {
    return memcg < writeback_.size() ? writeback_[memcg] : 0;
  }

  // The global domain's limits now (global_dirty_limits).
  DirtyLimits global_limits() const;
  // The memcg's domain, if it has one (a non-root memcg under cgroup v2).
  std::optional<DirtyLimits> memcg_limits(uint32_t memcg, const DirtyLimits& global) const;

  // balance_dirty_pages_ratelimited after a task of `memcg` dirtied
  // `pages`: the pause it sleeps, in ns (0: none).
  double balance_dirty_pages_ratelimited(TaskDirty& task, uint32_t memcg, uint64_t pages);
  // wakeup_flusher_threads (reclaim found only unqueued dirty pages):
  // writeback of every page dirty now.
  void wakeup_flusher_threads();

  // Whether the flusher was given work while idle; cleared by the call.
  bool take_wakeup() { return std::exchange(wakeup_, false); }
  // Whether the kupdate timer should be armed (something is dirty and it
  // is not); cleared by the call. The caller runs kupdate_timer() after
  // dirty_writeback_centisecs.
  bool take_timer_request() { return std::exchange(timer_request_, false); }
  void kupdate_timer();

  // One bio: its folios (pfns) and when the disk has written them.
  struct Bio {
    uint64_t id = 0;
    Tick done;
  };
  // One pass of the flusher at `now`: the bios it submitted, its CPU time
  // and whether it has more to do (its next pass then follows at once).
  struct Step {
    std::vector<Bio> bios;
    double ns = 0;
    bool more = false;
  };
  Step flusher_step(Tick now, CpuId cpu);
  // The first `pages` of the write-everything work (if any) written at
  // once, their bios' ends too: for a reclaimer that waits on the writeback
  // it woke. The flusher's pass goes on with the rest. Returns the pass's
  // time and the disk's.
  double write_and_wait(CpuId cpu, uint64_t pages);
  // The bio's end: folio_end_writeback for each of its folios.
  void end_bio(uint64_t id);

  // For the checker: the inode dirty tags against the folios' PG_dirty.
  uint64_t tagged_pages() const;

 private:
  struct Inode {
    std::set<uint64_t> dirty;  // offsets tagged dirty
    Tick dirtied_when;
    bool stamped = false;
  };
  // writeback_chunk_size for works that are not data-integrity syncs.
  uint64_t chunk_pages() const;
  // One pass over the dirty inodes, oldest first: up to a chunk of each,
  // `budget` in all, of `memcg`'s subtree (0: any), of inodes dirtied at
  // or before `dirtied_by` (none: any). Returns the pages written.
  uint64_t pass(uint64_t budget, uint32_t memcg, std::optional<Tick> dirtied_by, Tick now,
                CpuId cpu, Step& step);
  // A pass of the write-everything work, of at most `limit` pages.
  void write_all(uint64_t limit, Tick now, CpuId cpu, Step& step);
  // Writes up to `budget` dirty pages of the inode from its writeback_index
  // (of `memcg` and its subtree only, unless 0); returns pages written.
  uint64_t write_inode(uint32_t file, Inode& inode, uint64_t budget, uint32_t memcg, Tick now,
                       CpuId cpu, Step& step);
  // wb_over_bg_thresh for a background work started for `memcg` (0: the
  // global domain only).
  bool over_bg_thresh(uint32_t memcg) const;
  void start_background(uint32_t memcg);
  bool in_progress() const { return all_pages_ > 0 || kupdate_due_ || background_; }
  // Pages one bio carries, and the disk's time for them.
  static constexpr uint32_t kBioPages = 32;  // 128 KiB
  double write_ns(uint64_t pages) const;
  // The disk's write bandwidth in pages a second.
  double bandwidth_pages() const;

  MemoryManager& mm_;
  std::vector<uint64_t> dirty_, writeback_;  // by memcg
  std::map<uint32_t, Inode> inodes_;         // dirty inodes, by file id
  // Each file's mapping->writeback_index: where its next cyclic writeback
  // starts (kept while it is clean).
  std::unordered_map<uint32_t, uint64_t> writeback_index_;
  std::vector<uint32_t> b_dirty_;                        // dirty inodes, oldest first
  std::unordered_map<uint32_t, uint64_t> writeback_of_;  // folio under writeback -> its bio
  std::map<uint64_t, std::vector<uint32_t>> bios_;       // bios in flight: their folios
  uint64_t next_bio_ = 1;
  uint64_t dirtied_now_ = 0;
  bool unstamped_ = false;
  // The flusher's works: pages left of a write-everything work, a kupdate
  // pass due, background writeback (and for which memcg's domain).
  uint64_t all_pages_ = 0;
  bool kupdate_due_ = false;
  bool background_ = false;
  uint32_t background_memcg_ = 0;
  bool running_ = false;  // a pass is scheduled
  bool wakeup_ = false;
  bool timer_armed_ = false;
  bool timer_request_ = false;
  bool dirty_exceeded_ = false;  // wb->dirty_exceeded
  Tick disk_free_;               // when the disk has written every bio submitted so far
};

}  // namespace mmsim::mm
