#include "workload/access_cost.h"

#include <algorithm>

namespace mmsim::workload {

AccessCost::AccessCost(const topo::Topology& topo, const cost::CostProfile& costs,
                       const mm::FolioAllocator& folios)
    : topo_(topo),
      costs_(costs),
      folios_(folios),
      llc_sets_(topo.nr_sockets()),
      llc_bytes_(topo.nr_sockets(), 0) {}

double AccessCost::miss_fraction(uint32_t pid, CpuId cpu, const mm::Mm& mm, Vpn start,
                                 uint64_t pages) {
  const mm::Vma* vma = mm.find_vma(start);
  if (!vma) return 0;
  // A footprint is the memory, not the mapping: a file's pages, or an
  // anon_vma's (shared with forked children), or the mm's own.
  Key key;
  if (vma->file && !vma->anon_vma) {
    key = {uint64_t{1} << 40 | vma->file->id, vma->file_index(start)};
  } else {
    const uint64_t root = vma->avc.empty() ? (uint64_t{2} << 40 | mm.id()) : vma->avc.front()->id;
    key = {root, start.v};
  }
  const uint16_t socket = topo_.cpu(cpu).socket;
  if (by_task_.size() <= pid) by_task_.resize(pid + 1);
  auto& mine = by_task_[pid];
  bool known = false;
  for (const auto& fp : mine) known |= (fp.socket == socket && fp.key == key);
  if (!known) {
    auto& entry = llc_sets_[socket][key];
    const uint64_t bytes = pages * kPageSize;
    if (entry.second++ == 0) {
      entry.first = bytes;
      llc_bytes_[socket] += bytes;
    }
    mine.push_back(Footprint{socket, key});
  }
  const double ws = static_cast<double>(llc_bytes_[socket]);
  const double llc = static_cast<double>(topo_.llc_bytes(socket));
  return ws <= llc ? 0.0 : 1.0 - llc / ws;
}

void AccessCost::drop_footprints(uint32_t pid) {
  if (pid >= by_task_.size()) return;
  for (const auto& fp : by_task_[pid]) {
    auto& set = llc_sets_[fp.socket];
    auto it = set.find(fp.key);
    if (--it->second.second == 0) {
      llc_bytes_[fp.socket] -= it->second.first;
      set.erase(it);
    }
  }
  by_task_[pid].clear();
}

double AccessCost::page_cost(const AccessSpec& a, NodeId task_node, NodeId node,
                             double miss) const {
  const double dist = topo_.distance_factor(task_node, node);
  if (a.touch) return costs_.mem_latency_ns * dist;
  const uint64_t elems_per_page = kPageSize / a.elem_size;  // elem_size divides the page
  const double elems = static_cast<double>(elems_per_page);
  const double compute = a.compute_ns >= 0 ? a.compute_ns : costs_.sweep_elem_ns;
  return elems * compute + (kPageSize / 64.0) * miss * costs_.dram_line_ns * dist;
}

double AccessCost::mapped_page_cost(const AccessSpec& a, NodeId task_node, const mm::PageTable& pt,
                                    Vpn vpn, double miss) const {
  const mm::Pte pte = pt.get(vpn);
  NodeId node = task_node;
  if (pte.maps_folio()) node = folios_.folio(Pfn(pte.pfn)).node;
  return page_cost(a, task_node, node, miss);
}

double AccessCost::range_cost(const AccessSpec& a, NodeId task_node, const mm::PageTable& pt,
                              Vpn from, Vpn to, double miss) {
  if (!a.touch && miss == 0.0) {
    return static_cast<double>(to.v - from.v) * page_cost(a, task_node, task_node, 0.0);
  }
  const size_t nodes = topo_.nr_nodes();
  node_pages_.assign(nodes, 0);
  uint64_t local = 0;
  for (uint64_t v = from.v; v < to.v;) {
    const uint64_t table_end = ((v >> mm::kPteTableShift) + 1) << mm::kPteTableShift;
    const uint64_t end = std::min(table_end, to.v);
    const mm::PteTable* table = pt.table(Vpn(v));
    for (uint64_t x = v; x < end; ++x) {
      const mm::Pte pte = table ? table->get(x & (mm::kPtesPerTable - 1)) : mm::Pte{};
      if (pte.maps_folio()) {
        ++node_pages_[folios_.folio(Pfn(pte.pfn)).node.v];
      } else {
        ++local;
      }
    }
    v = end;
  }
  node_pages_[task_node.v] += local;
  double sum = 0;
  for (size_t n = 0; n < nodes; ++n) {
    if (!node_pages_[n]) continue;
    sum += static_cast<double>(node_pages_[n]) *
           page_cost(a, task_node, NodeId(static_cast<uint16_t>(n)), miss);
  }
  return sum;
}

}  // namespace mmsim::workload
