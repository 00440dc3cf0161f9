// Models the LRU lists of include/linux/mmzone.h and mm/swap.c: per node and
// per memcg (a lruvec), an inactive and an active list for anonymous
// (swap-backed) and for file folios, and the unevictable list. Lists are
// intrusive, threaded through the folios (struct folio's lru), so every
// operation is O(1) and a folio is on at most one list.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "mm/folio.h"
#include "mm/vmstat.h"
#include "sim/types.h"

namespace mmsim::mm {

// enum lru_list, in the kernel's order.
enum class LruList : uint8_t {
  kInactiveAnon,
  kActiveAnon,
  kInactiveFile,
  kActiveFile,
  kUnevictable,
};
inline constexpr size_t kNrLruLists = 5;

inline constexpr bool is_file_lru(LruList l) {
  return l == LruList::kInactiveFile || l == LruList::kActiveFile;
}
inline constexpr bool is_active_lru(LruList l) {
  return l == LruList::kActiveAnon || l == LruList::kActiveFile;
}

// The list a folio belongs on by its flags (folio_lru_list): unevictable if
// mlocked; else anon for swap-backed folios (anonymous and shmem), file
// otherwise; active if PG_active.
LruList folio_lru_list(const Folio& f);

// One lruvec: the lists of one memcg on one node. Each list runs from its
// head (most recently added) to its tail (the oldest, where reclaim starts).
struct Lruvec {
  struct List {
    uint32_t head = kNil;
    uint32_t tail = kNil;
    uint64_t size = 0;  // in pages (a THP counts 512)
  };
  static constexpr uint32_t kNil = UINT32_MAX;
  std::array<List, kNrLruLists> lists;
  // Recent reclaim costs (lruvec->anon_cost, file_cost: pages scanned and
  // rotated, and refaults), which get_scan_count balances scanning by.
  double anon_cost = 0;
  double file_cost = 0;
  // nonresident_age: evictions and activations seen here or below, the
  // clock of refault distances (mm/workingset.c).
  uint64_t nonresident_age = 0;
  // WORKINGSET_ACTIVATE_{ANON,FILE} here or below: refaults that activated.
  uint64_t activate_anon = 0;
  uint64_t activate_file = 0;
  uint64_t size(LruList l) const { return lists[static_cast<size_t>(l)].size; }
};

class LruSet {
 public:
  LruSet(FolioAllocator& folios, VmStat& vmstat, size_t nr_nodes);

  // The lruvec of memcg on node (created empty when first asked for).
  Lruvec& lruvec(uint32_t memcg, NodeId node) {
    const size_t i = static_cast<size_t>(memcg) * nr_nodes_ + node.v;
    if (i >= lruvecs_.size()) [[unlikely]]
      grow(memcg);
    return lruvecs_[i];
  }
  const Lruvec* find(uint32_t memcg, NodeId node) const;
  size_t nr_memcgs() const { return lruvecs_.size() / nr_nodes_; }
  size_t nr_nodes() const { return nr_nodes_; }
  // The memcg tree, for the hierarchical sizes and ages (the root is 0 and
  // has no parent; an unknown memcg is taken as the root's child).
  void set_parent(uint32_t memcg, uint32_t parent);
  bool is_ancestor(uint32_t ancestor, uint32_t memcg) const;
  // Pages on list l of memcg and its descendants on node n (what
  // lruvec_page_state reads: memcg statistics are hierarchical).
  uint64_t hier_size(uint32_t memcg, NodeId n, LruList l) const;
  // workingset_age_nonresident: the lruvec's age and its ancestors' advance.
  void age_nonresident(uint32_t memcg, NodeId n, uint64_t pages = 1);
  // lru_note_cost: `pages` of reclaim cost (written out, or restored
  // workingset) for a type, on the lruvec and its ancestors; each halves
  // both costs once they pass a quarter of its pages.
  void note_cost(uint32_t memcg, NodeId n, bool file, double pages);
  // A refault that activated a folio of memcg on node n (and its ancestors).
  void count_activation(uint32_t memcg, NodeId n, bool file);

  // Puts the folio at the head of the list its flags name, in the lruvec of
  // its memcg and node; sets PG_lru (lruvec_add_folio).
  void add(Pfn pfn);
  // At the tail instead (lruvec_add_folio_tail: rotation to be reclaimed next).
  void add_tail(Pfn pfn);
  // Takes it off its list; clears PG_lru (lruvec_del_folio).
  void del(Pfn pfn);
  // Off its list, flags changed by `change`, back at the head of the list its
  // flags now name (activation, deactivation, mlock).
  template <class F>
  void relist(Pfn pfn, F&& change) {
    del(pfn);
    change(folios_.folio(pfn));
    add(pfn);
  }
  // The oldest folio of a list, or nullopt if it is empty.
  std::optional<Pfn> tail(const Lruvec& v, LruList l) const {
    const uint32_t t = v.lists[static_cast<size_t>(l)].tail;
    return t == Lruvec::kNil ? std::nullopt : std::optional<Pfn>(Pfn(t));
  }
  // The folio after pfn towards the head (newer), or nullopt.
  std::optional<Pfn> newer(Pfn pfn) const {
    const uint32_t p = folios_.folio(pfn).lru_prev;
    return p == Lruvec::kNil ? std::nullopt : std::optional<Pfn>(Pfn(p));
  }
  // Pages on list l summed over the memcgs, of node n.
  uint64_t node_size(NodeId n, LruList l) const { return node_sizes_[n.v][static_cast<size_t>(l)]; }
  // Of those on node n's anon lists, the shmem pages (which reclaim here
  // does not swap: see Vmscan).
  uint64_t node_shmem(NodeId n) const { return node_shmem_[n.v]; }

  // Lists against folios: every folio with PG_lru is on the list its flags
  // name, exactly once, in its memcg's lruvec on its node; sizes add up.
  std::vector<std::string> check_invariants() const;

 private:
  // Makes room for memcg's lruvecs.
  void grow(uint32_t memcg);
  void link(Pfn pfn, bool at_tail);
  void count(const Folio& f, LruList l, int64_t delta);
  FolioAllocator& folios_;
  VmStat& vmstat_;
  size_t nr_nodes_;
  std::vector<Lruvec> lruvecs_;   // memcg * nr_nodes + node
  std::vector<uint32_t> parent_;  // by memcg; the root's is itself
  std::vector<std::array<uint64_t, kNrLruLists>> node_sizes_;
  std::vector<uint64_t> node_shmem_;
};

}  // namespace mmsim::mm
