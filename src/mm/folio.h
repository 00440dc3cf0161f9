// Models struct folio and struct page, and the per-node page allocator with
// the kernel's memory policies. A folio is one 4 KiB page (order 0) or a
// PMD-sized transparent huge page (order 9): its head entry and 511 tail
// entries, one per 4 KiB page, each with its own mapcount, in a 512-aligned
// block of the table, so that a tail's head is its pfn rounded down (the
// one other order, a PGD's 1, starts a block too). Only allocated pages have
// state; pfns name table entries, not physical frames
// (SIMPLIFICATION: no buddy allocator, so no fragmentation: a node with 512
// free pages above its watermark has a huge page).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "mm/pgtable.h"
#include "mm/vmstat.h"
#include "sim/check.h"
#include "sim/types.h"
#include "topo/topology.h"

namespace mmsim::mm {

struct Folio {
  enum : uint16_t {
    kAnon = 1,
    kLocked = 2,       // PG_locked
    kDirty = 4,        // PG_dirty
    kLru = 8,          // on an LRU list (PG_lru)
    kMlocked = 16,     // PG_mlocked (its LRU list is the unevictable one)
    kUptodate = 32,    // PG_uptodate
    kShmem = 64,       // page cache of a shmem inode (MAP_SHARED|MAP_ANONYMOUS)
    kInUse = 128,      // allocated (not on the free list)
    kReadahead = 256,  // PG_readahead: a fault on it starts the next readahead window
    // PG_reclaim: reclaim found it dirty or under writeback; its writeback's
    // end rotates it to be reclaimed next. The kernel's PG_readahead is the
    // same bit (a page under readahead is not under writeback), and so here.
    kReclaim = kReadahead,
    kActive = 512,        // PG_active: on an active LRU list
    kReferenced = 1024,   // PG_referenced: seen referenced once by reclaim or an access
    kWorkingset = 2048,   // PG_workingset: part of the workingset (refaulted, or was active)
    kSwapCache = 4096,    // PG_swapcache: an anonymous folio with a swap slot
    kTail = 8192,         // a tail page of a large folio (PageTail): only mapcount is its own
    kLruBatched = 16384,  // in a CPU's lru_add batch (its CPU in lru_prev), not yet on a list
    // The kernel's own memory: no LRU or rmap. Its mapping says what it is
    // (kKernelHugeZero, kKernelPgtable).
    kKernel = 32768,
  };
  // A kKernel folio's mapping: the huge zero page (never charged), or a
  // page-table page (index: its PtLevel; charged to its memcg as kernel
  // memory, unless that is the root).
  static constexpr uint32_t kKernelHugeZero = 0;
  static constexpr uint32_t kKernelPgtable = 1;
  bool is_pgtable() const { return test(kKernel) && mapping == kKernelPgtable; }
  NodeId node;
  uint16_t flags = 0;
  int32_t mapcount = 0;        // PTEs mapping this folio (the kernel's _mapcount + 1)
  uint32_t mapping = 0;        // file id (page cache) or anon_vma id (anonymous)
  uint32_t last_cpupid = ~0u;  // NUMA balancing: last faulting (pid, cpu); all ones = unset
  // Its neighbours on its LRU list (pfns; LruSet's nil at an end).
  uint32_t lru_prev = UINT32_MAX;
  uint32_t lru_next = UINT32_MAX;
  uint16_t memcg = 0;  // its memcg's id (a scenario has at most kMaxMemcgs)

  // The page offset in the file, or the anon linear index (a vpn), below 2^44.
  uint64_t index() const { return static_cast<uint64_t>(hi_ & kIndexHiMask) << 32 | index_lo_; }
  void set_index(uint64_t i);
  // Of a head: 0, or kHugeOrder for a THP.
  uint8_t order() const { return static_cast<uint8_t>(hi_ >> 12); }
  void set_order(uint8_t order) {
    hi_ = static_cast<uint16_t>((hi_ & kIndexHiMask) | (order << 12));
  }
  bool test(uint16_t f) const { return flags & f; }
  uint32_t nr_pages() const { return 1u << order(); }
  bool large() const { return order() != 0; }
  // mlock_count (PTEs of VM_LOCKED VMAs mapping it) is FolioAllocator's, in
  // a side table: few folios are ever mlocked.

 private:
  static constexpr uint16_t kIndexHiMask = 0x0FFF;
  uint16_t hi_ = 0;  // the index's bits 32-43, then the order (4 bits)
  uint32_t index_lo_ = 0;
};

inline void Folio::set_index(uint64_t i) {
  check(i < (uint64_t{1} << 44), "a folio index of 44 bits or more");
  index_lo_ = static_cast<uint32_t>(i);
  hi_ = static_cast<uint16_t>((hi_ & ~kIndexHiMask) | (i >> 32));
}

// A PMD-sized folio: 2 MiB, HPAGE_PMD_ORDER.
inline constexpr uint8_t kHugeOrder = 9;
inline constexpr uint32_t kHugePages = 1u << kHugeOrder;  // HPAGE_PMD_NR
inline constexpr Pfn huge_head(Pfn pfn) { return Pfn(pfn.v & ~(kHugePages - 1)); }

// One of these per page of the simulated machine: keep it small (issue [11]:
// with the PTE, at most 40 bytes a touched page).
static_assert(sizeof(Folio) == 32);
// Memcg ids a folio can hold.
inline constexpr uint32_t kMaxMemcgs = UINT16_MAX;

// The policies of set_mempolicy(2)/mbind(2) that the model supports.
struct MemPolicy {
  enum class Mode : uint8_t { kDefault, kBind, kPreferred, kInterleave };
  Mode mode = Mode::kDefault;
  std::vector<NodeId> nodes;  // bind/interleave mask, or the preferred node
};

// A node's free-page watermarks (zone->_watermark; one zone per node).
struct Watermarks {
  uint64_t min = 0, low = 0, high = 0;
  uint64_t promo = 0;  // WMARK_PROMO: kswapd's goal in memory-tiering mode
};
// Which watermark an allocation must leave free pages above (alloc_flags'
// ALLOC_WMARK_*); kNone: any free page (unit tests without reclaim).
enum class Mark : uint8_t { kNone, kMin, kLow, kHigh, kPromo };

// The folio table: entries by pfn, grown in chunks of 2 MiB that never move,
// so that it has no reallocation's copy (twice the table, for a moment) and
// no unused capacity beyond its last chunk.
class FolioTable {
 public:
  static constexpr uint32_t kChunkShift = 16;  // 64 Ki folios a chunk, a multiple of kHugePages
  static constexpr uint32_t kChunk = 1u << kChunkShift;
  Folio& operator[](size_t pfn) { return chunks_[pfn >> kChunkShift][pfn & (kChunk - 1)]; }
  const Folio& operator[](size_t pfn) const {
    return chunks_[pfn >> kChunkShift][pfn & (kChunk - 1)];
  }
  size_t size() const { return size_; }
  // Grows to n entries (new ones default), never shrinks.
  void grow_to(size_t n) {
    while (chunks_.size() << kChunkShift < n) chunks_.emplace_back(new_chunk());
    size_ = std::max(size_, n);
  }

 private:
  struct FreeChunk {
    void operator()(Folio* p) const;
  };
  using Chunk = std::unique_ptr<Folio[], FreeChunk>;
  // A chunk is one 2 MiB-aligned block, offered to the host kernel as a
  // transparent huge page (MADV_HUGEPAGE): one host fault fills it, not 512.
  static Chunk new_chunk();
  std::vector<Chunk> chunks_;
  size_t size_ = 0;
};

// Owns all folios and the per-node free-page accounting.
class FolioAllocator {
 public:
  FolioAllocator(const topo::Topology& topo, VmStat& vmstat);

  // Allocates a page for a fault on a CPU of `local` under `policy`: the
  // first node of the zonelist (the allowed nodes by distance from the
  // preferred one) whose free pages are above `mark`. For interleave, `ilx`
  // selects the node (the page offset, as the kernel does). nullopt when
  // every allowed node is at or below the mark.
  // An order-kHugeOrder allocation needs its 512 pages above the mark.
  std::optional<Pfn> alloc(const MemPolicy& policy, NodeId local, uint64_t ilx,
                           Mark mark = Mark::kNone, uint8_t order = 0);
  // The zonelist of such an allocation: the nodes it may use, in order.
  std::vector<NodeId> zonelist(const MemPolicy& policy, NodeId local, uint64_t ilx) const;
  // Allocates a folio of `order` on exactly `node` (__GFP_THISNODE) above
  // `mark`.
  std::optional<Pfn> alloc_on(NodeId node, Mark mark = Mark::kNone, uint8_t order = 0);
  void set_watermarks(NodeId n, Watermarks w) { nodes_[n.v].wmark = w; }
  const Watermarks& watermarks(NodeId n) const { return nodes_[n.v].wmark; }
  uint64_t mark_pages(NodeId n, Mark m) const;
  // zone_watermark_ok: free pages, less those the allocation takes but one,
  // strictly above the mark.
  bool above(NodeId n, Mark m, uint8_t order = 0) const {
    const uint64_t need = mark_pages(n, m) + (1u << order) - 1;
    return free_pages(n) > need;
  }
  // Frees the folio (all its pages, for a large one).
  void free(Pfn pfn);
  // Splits a large folio into kHugePages order-0 folios in place
  // (__split_huge_page): each tail becomes a folio of its own, with the
  // head's flags but PG_lru and its own mapcount. The caller gives each its
  // identity (index, LRU) and its accounting.
  void split(Pfn head);

  // folio->mlock_count of a folio (its head): side state, as few are mlocked.
  uint32_t mlock_count(Pfn head) const {
    const auto it = mlock_count_.find(head.v);
    return it == mlock_count_.end() ? 0 : it->second;
  }
  void set_mlock_count(Pfn head, uint32_t n) {
    if (n) {
      mlock_count_[head.v] = n;
    } else {
      mlock_count_.erase(head.v);
    }
  }
  Folio& folio(Pfn pfn) { return folios_[pfn.v]; }
  const Folio& folio(Pfn pfn) const { return folios_[pfn.v]; }
  uint64_t capacity_pages(NodeId n) const { return nodes_[n.v].capacity; }
  uint64_t used_pages(NodeId n) const { return nodes_[n.v].used; }
  uint64_t free_pages(NodeId n) const {
    return nodes_[n.v].capacity - nodes_[n.v].used - nodes_[n.v].held;
  }
  // Keeps up to `pages` free pages of the node out of reach until set back
  // to 0: the pages a kswapd pass frees become free at the pass's end.
  void hold(NodeId n, uint64_t pages) {
    NodeState& s = nodes_[n.v];
    s.held = std::min(pages, s.capacity - s.used);
  }
  size_t table_size() const { return folios_.size(); }
  // Folios allocated now, on every node.
  uint64_t in_use() const {
    return folios_.size() - free_slots_.size() - free_blocks_.size() * kHugePages;
  }
  const topo::Topology& topology() const { return topo_; }

 private:
  struct NodeState {
    uint64_t capacity = 0;
    uint64_t used = 0;
    uint64_t held = 0;  // free, but not yet (see hold)
    Watermarks wmark;
  };
  // The preferred node and the allowed set (nullptr: all) of an allocation.
  struct Target {
    NodeId preferred;
    const std::vector<NodeId>* allowed = nullptr;
  };
  Target target(const MemPolicy& policy, NodeId local, uint64_t ilx) const;
  Pfn take(NodeId node, uint8_t order);
  // A free 512-aligned block of table entries for a large folio.
  uint32_t take_block();
  // Gathers the blocks whose entries are all free singles back into whole
  // blocks, when that can pay (see take_block).
  void compact_blocks();
  bool table_full() const;
  const topo::Topology& topo_;
  VmStat& vmstat_;
  FolioTable folios_;
  std::vector<uint32_t> free_slots_;
  std::vector<uint32_t> free_blocks_;  // first pfns of whole free blocks
  size_t compact_at_ = kHugePages;     // free singles that make compact_blocks worth a try
  std::vector<NodeState> nodes_;
  std::unordered_map<uint32_t, uint32_t> mlock_count_;  // by head pfn; absent: 0
};

}  // namespace mmsim::mm
