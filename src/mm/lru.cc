// Models the LRU list bookkeeping of include/linux/mm_inline.h
// (lruvec_add_folio, lruvec_del_folio, folio_lru_list) and the
// NR_{IN,}ACTIVE_{ANON,FILE} and NR_UNEVICTABLE counters.
#include "mm/lru.h"

#include <algorithm>
#include <string>

#include "sim/check.h"

namespace mmsim::mm {

namespace {

constexpr std::array<Vm, kNrLruLists> kGauge = {
    Vm::nr_inactive_anon, Vm::nr_active_anon, Vm::nr_inactive_file,
    Vm::nr_active_file,   Vm::nr_unevictable,
};

}  // namespace

LruList folio_lru_list(const Folio& f) {
  if (f.test(Folio::kMlocked)) return LruList::kUnevictable;
  const bool anon = f.test(Folio::kAnon) || f.test(Folio::kShmem);
  const bool active = f.test(Folio::kActive);
  if (anon) return active ? LruList::kActiveAnon : LruList::kInactiveAnon;
  return active ? LruList::kActiveFile : LruList::kInactiveFile;
}

LruSet::LruSet(FolioAllocator& folios, VmStat& vmstat, size_t nr_nodes)
    : folios_(folios),
      vmstat_(vmstat),
      nr_nodes_(nr_nodes),
      node_sizes_(nr_nodes),
      node_shmem_(nr_nodes) {
  lruvecs_.resize(nr_nodes_);  // the root memcg's
}

void LruSet::grow(uint32_t memcg) { lruvecs_.resize((static_cast<size_t>(memcg) + 1) * nr_nodes_); }

const Lruvec* LruSet::find(uint32_t memcg, NodeId node) const {
  const size_t i = static_cast<size_t>(memcg) * nr_nodes_ + node.v;
  return i < lruvecs_.size() ? &lruvecs_[i] : nullptr;
}

void LruSet::set_parent(uint32_t memcg, uint32_t parent) {
  if (parent_.size() <= memcg) {
    const size_t old = parent_.size();
    parent_.resize(static_cast<size_t>(memcg) + 1);
    for (size_t i = old; i < parent_.size(); ++i) parent_[i] = 0;
  }
  parent_[memcg] = memcg == 0 ? 0 : parent;
  lruvec(memcg, NodeId(0));  // its lruvecs exist from now on
}

bool LruSet::is_ancestor(uint32_t ancestor, uint32_t memcg) const {
  for (;;) {
    if (memcg == ancestor) return true;
    if (memcg == 0) return false;
    memcg = memcg < parent_.size() ? parent_[memcg] : 0;
  }
}

uint64_t LruSet::hier_size(uint32_t memcg, NodeId n, LruList l) const {
  if (memcg == 0) return node_size(n, l);
  uint64_t sum = 0;
  for (uint32_t m = 0; m < nr_memcgs(); ++m) {
    if (is_ancestor(memcg, m)) sum += lruvecs_[m * nr_nodes_ + n.v].size(l);
  }
  return sum;
}

void LruSet::age_nonresident(uint32_t memcg, NodeId n, uint64_t pages) {
  for (;;) {
    lruvec(memcg, n).nonresident_age += pages;
    if (memcg == 0) return;
    memcg = memcg < parent_.size() ? parent_[memcg] : 0;
  }
}

void LruSet::note_cost(uint32_t memcg, NodeId n, bool file, double pages) {
  for (;;) {
    Lruvec& v = lruvec(memcg, n);
    (file ? v.file_cost : v.anon_cost) += pages;
    double lrusize = 0;
    for (size_t l = 0; l < kNrLruLists - 1; ++l) lrusize += static_cast<double>(v.lists[l].size);
    if (v.anon_cost + v.file_cost > lrusize / 4) {
      v.anon_cost /= 2;
      v.file_cost /= 2;
    }
    if (memcg == 0) return;
    memcg = memcg < parent_.size() ? parent_[memcg] : 0;
  }
}

void LruSet::count_activation(uint32_t memcg, NodeId n, bool file) {
  for (;;) {
    Lruvec& v = lruvec(memcg, n);
    ++(file ? v.activate_file : v.activate_anon);
    if (memcg == 0) return;
    memcg = memcg < parent_.size() ? parent_[memcg] : 0;
  }
}

void LruSet::count(const Folio& f, LruList l, int64_t delta) {
  const auto i = static_cast<size_t>(l);
  uint64_t& size = node_sizes_[f.node.v][i];
  size = static_cast<uint64_t>(static_cast<int64_t>(size) + delta);
  if (f.test(Folio::kShmem) && l != LruList::kUnevictable) {
    uint64_t& shmem = node_shmem_[f.node.v];
    shmem = static_cast<uint64_t>(static_cast<int64_t>(shmem) + delta);
  }
  vmstat_.add(kGauge[i], delta);
}

void LruSet::link(Pfn pfn, bool at_tail) {
  Folio& f = folios_.folio(pfn);
  check(f.test(Folio::kInUse) && !f.test(Folio::kLru | Folio::kTail),
        "LRU add of a folio on a list, free, or a tail");
  const LruList l = folio_lru_list(f);
  Lruvec::List& list = lruvec(f.memcg, f.node).lists[static_cast<size_t>(l)];
  if (at_tail) {
    f.lru_prev = list.tail;
    f.lru_next = Lruvec::kNil;
    if (list.tail != Lruvec::kNil) folios_.folio(Pfn(list.tail)).lru_next = pfn.v;
    list.tail = pfn.v;
    if (list.head == Lruvec::kNil) list.head = pfn.v;
  } else {
    f.lru_prev = Lruvec::kNil;
    f.lru_next = list.head;
    if (list.head != Lruvec::kNil) folios_.folio(Pfn(list.head)).lru_prev = pfn.v;
    list.head = pfn.v;
    if (list.tail == Lruvec::kNil) list.tail = pfn.v;
  }
  list.size += f.nr_pages();
  f.flags |= Folio::kLru;
  count(f, l, f.nr_pages());
}

void LruSet::add(Pfn pfn) { link(pfn, false); }
void LruSet::add_tail(Pfn pfn) { link(pfn, true); }

void LruSet::del(Pfn pfn) {
  Folio& f = folios_.folio(pfn);
  check(f.test(Folio::kLru), "LRU del of a folio on no list");
  const LruList l = folio_lru_list(f);
  Lruvec::List& list = lruvec(f.memcg, f.node).lists[static_cast<size_t>(l)];
  if (f.lru_prev != Lruvec::kNil) {
    folios_.folio(Pfn(f.lru_prev)).lru_next = f.lru_next;
  } else {
    list.head = f.lru_next;
  }
  if (f.lru_next != Lruvec::kNil) {
    folios_.folio(Pfn(f.lru_next)).lru_prev = f.lru_prev;
  } else {
    list.tail = f.lru_prev;
  }
  f.lru_prev = f.lru_next = Lruvec::kNil;
  list.size -= f.nr_pages();
  f.flags &= static_cast<uint16_t>(~Folio::kLru);
  count(f, l, -static_cast<int64_t>(f.nr_pages()));
}

std::vector<std::string> LruSet::check_invariants() const {
  std::vector<std::string> errors;
  // Walk every list from the head: links consistent, each folio on the list
  // its flags name, in the right lruvec; then every PG_lru folio was seen.
  std::vector<uint8_t> seen(folios_.table_size(), 0);
  std::vector<std::array<uint64_t, kNrLruLists>> sizes(nr_nodes_);
  std::vector<uint64_t> shmem(nr_nodes_);
  for (size_t i = 0; i < lruvecs_.size(); ++i) {
    const auto memcg = static_cast<uint32_t>(i / nr_nodes_);
    const NodeId node(static_cast<uint16_t>(i % nr_nodes_));
    for (size_t l = 0; l < kNrLruLists; ++l) {
      const Lruvec::List& list = lruvecs_[i].lists[l];
      uint64_t n = 0;
      uint32_t prev = Lruvec::kNil;
      for (uint32_t p = list.head; p != Lruvec::kNil; p = folios_.folio(Pfn(p)).lru_next) {
        const Folio& f = folios_.folio(Pfn(p));
        if (p >= seen.size() || seen[p] || n > list.size) {
          errors.push_back("LRU list " + std::to_string(l) + " of memcg " + std::to_string(memcg) +
                           " is corrupt (a loop or a folio twice)");
          return errors;
        }
        seen[p] = 1;
        n += f.nr_pages();
        if (!f.test(Folio::kInUse) || !f.test(Folio::kLru) || f.memcg != memcg || f.node != node ||
            static_cast<size_t>(folio_lru_list(f)) != l || f.lru_prev != prev) {
          errors.push_back("folio " + std::to_string(p) + " on LRU list " + std::to_string(l) +
                           " of memcg " + std::to_string(memcg) + " node " +
                           std::to_string(node.v) + " does not belong there");
          return errors;
        }
        if (f.test(Folio::kShmem) && l != static_cast<size_t>(LruList::kUnevictable))
          shmem[node.v] += f.nr_pages();
        prev = p;
      }
      if (n != list.size || prev != list.tail)
        errors.push_back("LRU list " + std::to_string(l) + " of memcg " + std::to_string(memcg) +
                         " holds " + std::to_string(n) + " pages, its size says " +
                         std::to_string(list.size));
      sizes[node.v][l] += n;
    }
  }
  for (uint32_t p = 0; p < folios_.table_size(); ++p) {
    const Folio& f = folios_.folio(Pfn(p));
    if (f.test(Folio::kInUse) && f.test(Folio::kLru) && !seen[p]) {
      errors.push_back("folio " + std::to_string(p) + " has PG_lru but is on no list");
      break;
    }
  }
  for (size_t n = 0; n < nr_nodes_; ++n) {
    if (sizes[n] != node_sizes_[n] || shmem[n] != node_shmem_[n])
      errors.push_back("node " + std::to_string(n) + ": LRU sizes disagree with the lists");
  }
  return errors;
}

}  // namespace mmsim::mm
