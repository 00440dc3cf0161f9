#include "workload/access_cost.h"

#include <algorithm>

namespace mmsim::workload {

namespace {

constexpr uint64_t kLine = cost::kLineBytes;

// Lines of a page a sweep reads: all of them for elements up to a line,
// else one per element.
uint64_t lines_per_page(const AccessSpec& a) {
  return a.elem_size <= kLine ? kPageSize / kLine : kPageSize / a.elem_size;
}

}  // namespace

AccessCost::AccessCost(const cost::CostProfile& costs, const mm::FolioAllocator& folios,
                       cost::CacheModel& cache, const cost::Bandwidth& bandwidth)
    : costs_(costs), folios_(folios), cache_(cache), bandwidth_(bandwidth) {}

std::optional<AccessCost::Memory> AccessCost::memory_at(const mm::Mm& mm, Vpn start) {
  const mm::Vma* vma = mm.find_vma(start);
  if (!vma) return std::nullopt;
  // A footprint is the memory, not the mapping: a file's pages, or an
  // anon_vma's (shared with forked children), or the mm's own.
  if (vma->file && !vma->anon_vma) {
    return Memory{{uint64_t{1} << 40 | vma->file->id, vma->file_index(start)}, true};
  }
  const uint64_t root = vma->avc.empty() ? (uint64_t{2} << 40 | mm.id()) : vma->avc.front().av->id;
  return Memory{{root, start.v}, vma->file != nullptr};
}

void AccessCost::add_footprint(const Accessor& who, const mm::Mm& mm, Vpn start, uint64_t pages,
                               const AccessSpec& a, bool faults) {
  const std::optional<Memory> m = memory_at(mm, start);
  if (!m) return;
  const uint64_t per_page = a.touch ? kLine : lines_per_page(a) * kLine;
  cache_.add_footprint(who.pid, who.cpu, m->key, pages * per_page);
  if (a.touch && faults) add_meta_footprint(who, mm, start, pages);
}

void AccessCost::add_meta_footprint(const Accessor& who, const mm::Mm& mm, Vpn start,
                                    uint64_t pages) {
  const std::optional<Memory> m = memory_at(mm, start);
  if (!m) return;
  // The same pages' metadata, under its own name (bit 41).
  const cost::CacheModel::Key key{m->key.first | uint64_t{1} << 41, m->key.second};
  cache_.add_footprint(who.pid, who.cpu, key, pages * cache_.meta_bytes_per_page(m->file));
}

double AccessCost::page_cost(const AccessSpec& a, const Accessor& who, NodeId node,
                             bool after_fault) const {
  return page_cost_at(a, who, node, after_fault, bandwidth_.factor(who.node, node));
}

double AccessCost::page_cost_at(const AccessSpec& a, const Accessor& who, NodeId node,
                                bool after_fault, double mem_factor) const {
  if (a.touch) {
    const auto p = after_fault ? cost::Pattern::kDependent : cost::Pattern::kIndependent;
    return cache_.task_line_ns(who.pid, who.cpu, node, p, mem_factor);
  }
  const double elem = a.memset            ? costs_.memset_line_ns
                      : a.compute_ns >= 0 ? a.compute_ns
                      : a.unoptimised     ? costs_.sweep_elem_O0_ns
                                          : costs_.sweep_elem_ns;
  // The -O0 loop (and a given per-element time) waits on its own chain; the
  // optimised one and a memset keep the core's issue busy.
  const double smt = !who.sibling_busy                    ? 1.0
                     : a.unoptimised || a.compute_ns >= 0 ? costs_.smt_latency_factor
                                                          : costs_.smt_throughput_factor;
  const uint64_t lines = lines_per_page(a);
  const uint64_t elems_per_line = kPageSize / a.elem_size / lines;  // exact: both divide 4096
  const double compute = static_cast<double>(elems_per_line) * elem * smt;
  // Elements a page apart are not prefetched (the streamer stops at the page
  // boundary) but overlap.
  const auto p = a.elem_size >= kPageSize ? cost::Pattern::kIndependent : cost::Pattern::kStream;
  const double memory = cache_.task_line_ns(who.pid, who.cpu, node, p, mem_factor);
  return static_cast<double>(lines) * std::max(compute, memory);
}

double AccessCost::faulted_page_cost(const AccessSpec& a, const Accessor& who,
                                     const mm::PageTable& pt, Vpn vpn) const {
  const mm::Pte pte = pt.get(vpn);
  NodeId node = who.node;
  if (pte.maps_folio()) node = folios_.folio(Pfn(pte.pfn)).node;
  return page_cost(a, who, node, true);
}

uint64_t AccessCost::pages_by_node(const mm::PageTable& pt, Vpn from, Vpn to,
                                   std::vector<uint64_t>& by_node) const {
  by_node.assign(cache_.nr_nodes(), 0);
  uint64_t unmapped = 0;
  for (uint64_t v = from.v; v < to.v;) {
    const uint64_t table_end = ((v >> mm::kPteTableShift) + 1) << mm::kPteTableShift;
    const uint64_t end = std::min(table_end, to.v);
    const mm::PteTable* table = pt.table(Vpn(v));
    if (!table) {
      unmapped += end - v;
      v = end;
      continue;
    }
    if (end - v == mm::kPtesPerTable) {
      // A whole table: its pages by node, cached in the table.
      const auto node_of = [&](mm::Pte pte) {
        return pte.maps_folio() ? folios_.folio(Pfn(pte.pfn)).node.v : mm::PteTable::kNoFolioNode;
      };
      for (const auto& np : table->node_pages(node_of)) {
        if (np.node == mm::PteTable::kNoFolioNode) {
          unmapped += np.pages;
        } else {
          by_node[np.node] += np.pages;
        }
      }
      v = end;
      continue;
    }
    for (uint64_t x = v; x < end; ++x) {
      const mm::Pte pte = table->get(x & (mm::kPtesPerTable - 1));
      if (pte.maps_folio()) {
        ++by_node[folios_.folio(Pfn(pte.pfn)).node.v];
      } else {
        ++unmapped;
      }
    }
    v = end;
  }
  return unmapped;
}

double AccessCost::range_cost(const AccessSpec& a, const Accessor& who, const mm::PageTable& pt,
                              Vpn from, Vpn to, Traffic* traffic) {
  // Pages not yet mapped will be faulted in locally.
  const uint64_t local = pages_by_node(pt, from, to, node_pages_);
  node_pages_[who.node.v] += local;
  // The bytes a page brings from DRAM: its lines read, less the LLC's hits.
  const double page_bytes = traffic
                                ? static_cast<double>((a.touch ? 1 : lines_per_page(a)) * kLine) *
                                      cache_.task_mem_fraction(who.pid, who.cpu)
                                : 0.0;
  if (traffic) traffic->bytes.resize(node_pages_.size(), 0.0);
  double sum = 0;
  for (size_t n = 0; n < node_pages_.size(); ++n) {
    if (!node_pages_[n]) continue;
    const NodeId node(static_cast<uint16_t>(n));
    const auto pages = static_cast<double>(node_pages_[n]);
    const double f = bandwidth_.factor(who.node, node);
    const double cost = page_cost_at(a, who, node, false, f);
    sum += pages * cost;
    if (traffic) {
      traffic->ns += pages * (f == 1.0 ? cost : page_cost_at(a, who, node, false, 1.0));
      traffic->bytes[n] += pages * page_bytes;
    }
  }
  return sum;
}

}  // namespace mmsim::workload
