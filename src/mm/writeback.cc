#include "mm/writeback.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mm/memory_manager.h"

namespace mmsim::mm {

namespace {

// dirty_poll_interval: how many more pages a task may dirty before it checks
// the limits again, the square root of its distance below the threshold.
uint64_t dirty_poll_interval(uint64_t dirty, uint64_t thresh) {
  if (thresh <= dirty) return 1;
  return uint64_t{1} << (std::bit_width(thresh - dirty) - 1) / 2;
}

// pos_ratio_polynom for the domain's control line: 1 at the setpoint, halfway
// between the freerun ceiling and the limit, falling as a cubic towards 0 at
// the limit (and rising towards 2 below the setpoint).
double pos_ratio(const DirtyLimits& d) {
  const double limit = static_cast<double>(d.thresh);
  const double dirty = static_cast<double>(d.dirty);
  if (dirty >= limit) return 0;
  const double setpoint = (static_cast<double>(d.freerun()) + limit) / 2;
  const double x = (setpoint - dirty) / (limit - setpoint + 1);
  return std::clamp(1 + x * x * x, 0.0, 2.0);
}

// domain_dirty_limits with vm.dirty_ratio and vm.dirty_background_ratio
// (no *_bytes sysctls modelled).
void domain_dirty_limits(DirtyLimits& d, const MmConfig& c) {
  d.thresh = d.avail * static_cast<uint64_t>(c.dirty_ratio) / 100;
  d.bg_thresh = d.avail * static_cast<uint64_t>(c.dirty_background_ratio) / 100;
  if (d.bg_thresh >= d.thresh) d.bg_thresh = d.thresh / 2;
}

constexpr Tick kMaxPause = milliseconds(200);  // MAX_PAUSE, HZ / 5
constexpr int64_t kHz = 250;                   // Debian's CONFIG_HZ
// MIN_WRITEBACK_PAGES: 4 MiB.
constexpr uint64_t kMinWritebackPages = 1024;
// DIRTY_SCOPE: the global limit's share a chunk may be.
constexpr uint64_t kDirtyScope = 8;

}  // namespace

Writeback::Writeback(MemoryManager& mm) : mm_(mm) {}

void Writeback::account_dirtied(const Folio& f) {
  const uint32_t nr = f.nr_pages();
  mm_.vmstat().add(Vm::nr_dirty, nr);
  mm_.vmstat().add(Vm::nr_dirtied, nr);
  if (f.memcg >= dirty_.size()) dirty_.resize(f.memcg + 1, 0);
  dirty_[f.memcg] += nr;
  dirtied_now_ += nr;
  // __mark_inode_dirty: the inode joins b_dirty when its first page is
  // dirtied, and an idle flusher's periodic wakeup is armed.
  Inode& inode = inodes_[f.mapping];
  if (inode.dirty.empty()) {
    b_dirty_.push_back(f.mapping);
    inode.stamped = false;
    unstamped_ = true;
  }
  inode.dirty.insert(f.index());
  if (!timer_armed_ && mm_.config().dirty_writeback_centisecs > 0) {
    timer_armed_ = true;
    timer_request_ = true;
  }
}

void Writeback::stamp(Tick now) {
  if (!unstamped_) return;
  unstamped_ = false;
  for (auto& [id, inode] : inodes_) {
    if (inode.stamped) continue;
    inode.dirtied_when = now;
    inode.stamped = true;
  }
}

void Writeback::move_account(const Folio& f, Pfn pfn, uint32_t from, uint32_t to) {
  if (f.test(Folio::kAnon) || f.test(Folio::kShmem)) return;
  std::vector<uint64_t>& v = under_writeback(pfn) ? writeback_ : dirty_;
  if (!under_writeback(pfn) && !f.test(Folio::kDirty)) return;
  if (std::max(from, to) >= v.size()) v.resize(std::max(from, to) + 1, 0);
  const uint32_t nr = f.nr_pages();
  v[from] -= nr;
  v[to] += nr;
}

DirtyLimits Writeback::global_limits() const {
  // global_dirtyable_memory: free pages less the reserves
  // (totalreserve_pages: each zone's high watermark), and the file LRUs.
  const VmStat& vm = mm_.vmstat();
  const auto free = static_cast<uint64_t>(std::max<int64_t>(0, vm[Vm::nr_free_pages]));
  uint64_t reserve = 0;
  for (const auto& n : mm_.topology().nodes()) reserve += mm_.folios().watermarks(n.id).high;
  DirtyLimits g;
  g.avail = free - std::min(free, reserve) +
            static_cast<uint64_t>(vm[Vm::nr_inactive_file] + vm[Vm::nr_active_file]) + 1;
  g.file_dirty = static_cast<uint64_t>(vm[Vm::nr_dirty]);
  g.dirty = g.file_dirty + static_cast<uint64_t>(vm[Vm::nr_writeback]);
  domain_dirty_limits(g, mm_.config());
  return g;
}

std::optional<DirtyLimits> Writeback::memcg_limits(uint32_t memcg,
                                                   const DirtyLimits& global) const {
  const std::optional<WbStats> s = mm_.memcg_wb_stats(memcg);
  if (!s) return std::nullopt;
  DirtyLimits m;
  m.file_dirty = s->dirty;
  m.dirty = s->dirty + s->writeback;
  // mdtc_calc_avail: the memcg's file pages, and what room it has left, as
  // far as clean page cache outside it could make room.
  const uint64_t clean = s->filepages - std::min(s->filepages, m.dirty);
  const uint64_t global_clean = global.avail - std::min(global.avail, global.dirty);
  const uint64_t other_clean = global_clean - std::min(global_clean, clean);
  m.avail = s->filepages + std::min(s->headroom, other_clean);
  domain_dirty_limits(m, mm_.config());
  return m;
}

double Writeback::bandwidth_pages() const {
  return kBioPages * 1e9 / std::max(1.0, mm_.costs().storage_write_ns);
}

double Writeback::write_ns(uint64_t pages) const {
  return static_cast<double>(pages) * mm_.costs().storage_write_ns / kBioPages;
}

double Writeback::balance_dirty_pages_ratelimited(TaskDirty& task, uint32_t memcg, uint64_t pages) {
  task.nr_dirtied += pages;
  // With the limit exceeded, every 8 pages (32 KiB).
  const uint64_t ratelimit =
      dirty_exceeded_ ? std::min<uint64_t>(task.nr_dirtied_pause, 8) : task.nr_dirtied_pause;
  if (task.nr_dirtied < ratelimit) return 0;
  // balance_dirty_pages.
  const DirtyLimits g = global_limits();
  const std::optional<DirtyLimits> m = memcg_limits(memcg, g);
  if (g.file_dirty > g.bg_thresh && !in_progress()) start_background(0);
  if (g.dirty <= g.freerun() && (!m || m->dirty <= m->freerun())) {
    // Free running: checked again after a distance set by how far below
    // the threshold each domain is.
    task.nr_dirtied = 0;
    task.nr_dirtied_pause = dirty_poll_interval(g.dirty, g.thresh);
    if (m)
      task.nr_dirtied_pause =
          std::min(task.nr_dirtied_pause, dirty_poll_interval(m->dirty, m->thresh));
    return 0;
  }
  if (!in_progress()) start_background(m ? memcg : 0);
  dirty_exceeded_ = g.dirty > g.thresh || (m && m->dirty > m->thresh);
  // Throttled by the domain whose position ratio is lower.
  const DirtyLimits& s = m && pos_ratio(*m) < pos_ratio(g) ? *m : g;
  const double ratio = pos_ratio(s);
  const double task_ratelimit = bandwidth_pages() * ratio;  // pages a second
  // wb_max_pause: as long as the disk takes to write what is dirty, at
  // least a jiffy, at most MAX_PAUSE.
  const double jiffy_ns = 1e9 / kHz;
  const double bw_jiffy = bandwidth_pages() / 32;  // roundup_pow_of_two(1 + HZ / 8)
  const double max_pause =
      std::min(static_cast<double>(kMaxPause.ns),
               (std::floor(static_cast<double>(s.dirty) / (1 + bw_jiffy)) + 1) * jiffy_ns);
  double pause =
      task_ratelimit <= 0
          ? max_pause
          : std::min(max_pause, static_cast<double>(task.nr_dirtied) * 1e9 / task_ratelimit);
  task.nr_dirtied = 0;
  // Over the limit (a ratelimit of 0) the kernel pauses again until it is
  // below: here the task checks again at its next page.
  task.nr_dirtied_pause = task_ratelimit <= 0 ? 1 : dirty_poll_interval(s.dirty, s.thresh);
  return pause;
}

void Writeback::start_background(uint32_t memcg) {
  // wb_start_background_writeback: queued once; a work in progress goes on.
  background_ = true;
  background_memcg_ = memcg;
  if (!running_) {
    running_ = true;
    wakeup_ = true;
  }
}

void Writeback::wakeup_flusher_threads() {
  // wb_start_writeback(WB_REASON_VMSCAN): everything dirty now; one such
  // work at a time (WB_start_all).
  if (b_dirty_.empty() || all_pages_ > 0) return;
  all_pages_ = static_cast<uint64_t>(mm_.vmstat()[Vm::nr_dirty]);
  if (!running_) {
    running_ = true;
    wakeup_ = true;
  }
}

void Writeback::kupdate_timer() {
  timer_armed_ = false;
  if (b_dirty_.empty()) return;
  kupdate_due_ = true;
  if (!running_) {
    running_ = true;
    wakeup_ = true;
  }
}

bool Writeback::over_bg_thresh(uint32_t memcg) const {
  // Each domain counts its dirty pages only, not those under writeback.
  const DirtyLimits g = global_limits();
  if (g.file_dirty > g.bg_thresh) return true;
  if (memcg == 0) return false;
  const std::optional<DirtyLimits> m = memcg_limits(memcg, g);
  return m && m->file_dirty > m->bg_thresh;
}

uint64_t Writeback::chunk_pages() const {
  // Half a second's worth of the disk, at most an eighth of the global
  // limit, rounded to 4 MiB (and at least that).
  const auto half_second = static_cast<uint64_t>(bandwidth_pages() / 2);
  const uint64_t pages = std::min(half_second, global_limits().thresh / kDirtyScope);
  return (pages + kMinWritebackPages) / kMinWritebackPages * kMinWritebackPages;
}

uint64_t Writeback::write_inode(uint32_t file, Inode& inode, uint64_t budget, uint32_t memcg,
                                Tick now, CpuId cpu, Step& step) {
  const AddressSpace* space = mm_.file(file);
  uint64_t written = 0;
  std::vector<uint32_t> bio;
  auto submit = [&] {
    if (bio.empty()) return;
    // The disk writes bios one after the other, from the pass's end.
    const Tick start = std::max(disk_free_, now + to_tick(step.ns));
    disk_free_ = start + to_tick(write_ns(bio.size()));
    const uint64_t id = next_bio_++;
    for (uint32_t p : bio) writeback_of_[p] = id;
    bios_[id] = std::move(bio);
    bio.clear();
    step.bios.push_back(Bio{id, disk_free_});
  };
  // write_cache_pages over the dirty tag, range_cyclic: from where the last
  // pass stopped to the end, then from the start.
  std::vector<uint64_t> todo;
  auto collect = [&](auto from, auto to) {
    for (auto it = from; it != to && todo.size() < budget; ++it) {
      const uint32_t pfn = space->lookup(*it);
      const Folio& f = mm_.folios().folio(Pfn(pfn));
      if (f.test(Folio::kLocked) || under_writeback(Pfn(pfn))) continue;  // skipped, still dirty
      if (memcg != 0 && !mm_.lru().is_ancestor(memcg, f.memcg)) continue;
      todo.push_back(*it);
    }
  };
  uint64_t& writeback_index = writeback_index_[file];
  collect(inode.dirty.lower_bound(writeback_index), inode.dirty.end());
  collect(inode.dirty.begin(), inode.dirty.lower_bound(writeback_index));
  uint64_t last = UINT64_MAX;
  for (uint64_t index : todo) {
    const Pfn pfn(space->lookup(index));
    Folio& f = mm_.folios().folio(pfn);
    // folio_clear_dirty_for_io: its PTEs clean and read-only, PG_dirty off;
    // folio_start_writeback.
    step.ns += mm_.folio_mkclean(pfn, cpu) + 2 * mm_.costs().lock_ns;
    f.flags &= static_cast<uint16_t>(~Folio::kDirty);
    inode.dirty.erase(index);
    const uint32_t nr = f.nr_pages();
    mm_.vmstat().add(Vm::nr_dirty, -static_cast<int64_t>(nr));
    mm_.vmstat().add(Vm::nr_writeback, nr);
    dirty_[f.memcg] -= nr;
    if (f.memcg >= writeback_.size()) writeback_.resize(f.memcg + 1, 0);
    writeback_[f.memcg] += nr;
    // A bio holds a run of consecutive offsets, up to 128 KiB.
    if (!bio.empty() && (index != last + 1 || bio.size() >= kBioPages)) submit();
    bio.push_back(static_cast<uint32_t>(pfn.v));
    last = index;
    written += nr;
    writeback_index = index + 1;
  }
  submit();
  return written;
}

uint64_t Writeback::pass(uint64_t budget, uint32_t memcg, std::optional<Tick> dirtied_by, Tick now,
                         CpuId cpu, Step& step) {
  const uint64_t chunk = chunk_pages();
  uint64_t written = 0;
  const std::vector<uint32_t> order = b_dirty_;
  for (uint32_t file : order) {
    if (written >= budget) break;
    Inode& inode = inodes_.at(file);
    if (dirtied_by && !(inode.stamped && inode.dirtied_when <= *dirtied_by)) continue;
    written += write_inode(file, inode, std::min(chunk, budget - written), memcg, now, cpu, step);
  }
  std::erase_if(b_dirty_, [&](uint32_t f) { return inodes_.at(f).dirty.empty(); });
  std::erase_if(inodes_, [](const auto& kv) { return kv.second.dirty.empty(); });
  return written;
}

void Writeback::write_all(uint64_t limit, Tick now, CpuId cpu, Step& step) {
  const uint64_t w = pass(std::min(all_pages_, limit), 0, std::nullopt, now, cpu, step);
  all_pages_ = w == 0 ? 0 : all_pages_ - std::min(all_pages_, w);
}

Writeback::Step Writeback::flusher_step(Tick now, CpuId cpu) {
  Step step;
  stamp(now);
  // wb_do_writeback: the write-everything work first, then kupdate's, then
  // background writeback.
  if (all_pages_ > 0) {
    write_all(UINT64_MAX, now, cpu, step);
  } else if (kupdate_due_) {
    // wb_check_old_data_flush: inodes dirty for longer than
    // dirty_expire_centisecs.
    const Tick expire = milliseconds(mm_.config().dirty_expire_centisecs * 10);
    if (now < expire || pass(UINT64_MAX, 0, now - expire, now, cpu, step) == 0)
      kupdate_due_ = false;
  } else if (background_) {
    if (!over_bg_thresh(background_memcg_) ||
        pass(UINT64_MAX, background_memcg_, std::nullopt, now, cpu, step) == 0)
      background_ = false;
  }
  step.more = in_progress();
  if (!step.more) {
    running_ = false;
    // wb_workfn's end: with pages still dirty, the periodic wakeup again.
    if (!b_dirty_.empty() && !timer_armed_ && mm_.config().dirty_writeback_centisecs > 0) {
      timer_armed_ = true;
      timer_request_ = true;
    }
  }
  return step;
}

double Writeback::write_and_wait(CpuId cpu, uint64_t pages) {
  if (all_pages_ == 0) return 0;
  // Timed from the disk's present backlog: it starts when the disk is free.
  const Tick now = disk_free_;
  Step step;
  write_all(pages, now, cpu, step);
  double ns = step.ns;
  for (const Bio& b : step.bios) {
    ns = std::max(ns, static_cast<double>((b.done - now).ns));
    end_bio(b.id);
  }
  return ns;
}

void Writeback::end_bio(uint64_t id) {
  const auto it = bios_.find(id);
  if (it == bios_.end()) return;
  for (uint32_t p : it->second) {
    writeback_of_.erase(p);
    Folio& f = mm_.folios().folio(Pfn(p));
    const uint32_t nr = f.nr_pages();
    mm_.vmstat().add(Vm::nr_writeback, -static_cast<int64_t>(nr));
    mm_.vmstat().add(Vm::nr_written, nr);
    writeback_[f.memcg] -= nr;
    // folio_end_writeback: one that reclaim marked goes to the inactive
    // list's tail, to be reclaimed next.
    if (f.test(Folio::kReclaim)) {
      f.flags &= static_cast<uint16_t>(~Folio::kReclaim);
      mm_.folio_rotate_reclaimable(Pfn(p));
    }
  }
  bios_.erase(it);
}

uint64_t Writeback::tagged_pages() const {
  uint64_t n = 0;
  for (const auto& [id, inode] : inodes_) n += inode.dirty.size();
  return n;
}

}  // namespace mmsim::mm
