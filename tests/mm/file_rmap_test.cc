// A file page's rmap walk finds the PTEs that map it through the page's
// own list of mappers (AddressSpace::mappers), not by visiting every VMA of
// the file: the walk's length is the page's mappings, however many
// processes map the file.
#include <gtest/gtest.h>

#include <vector>

#include "mm/memory_manager.h"
#include "mm/mm_types.h"
#include "support/mm_fixture.h"

namespace mmsim::mm {
namespace {

using testing::MmWorld;

constexpr uint32_t kR = Vma::kRead;

std::vector<Mm*> walk(MmWorld& w, Mm& mm, Vpn v) {
  std::vector<Mm*> found;
  w.mgr.rmap_walk(Pfn(mm.pgtable().get(v).pfn), [&](Mm& m, Vma&, Vpn) { found.push_back(&m); });
  return found;
}

TEST(FileRmap, AWalkVisitsOnlyTheMmsThatMapThePage) {
  // Four processes map the file; two fault its first page, one a page
  // beyond fault-around's window.
  MmWorld w;
  auto& file = w.mgr.create_file("exe", 64, false);
  w.mgr.preload_file(file, NodeId(0));
  std::vector<std::shared_ptr<Mm>> mms;
  std::vector<Vpn> at;
  for (int i = 0; i < 4; ++i) {
    mms.push_back(w.mgr.mm_alloc());
    at.push_back(w.map(*mms.back(), 64, kR, &file));
  }
  w.fault(*mms[1], at[1], false);
  w.fault(*mms[3], at[3], false);
  w.fault(*mms[2], Vpn(at[2].v + 40), false);
  EXPECT_EQ(walk(w, *mms[1], at[1]), (std::vector<Mm*>{mms[1].get(), mms[3].get()}));
  EXPECT_EQ(walk(w, *mms[2], Vpn(at[2].v + 40)), std::vector<Mm*>{mms[2].get()});
  EXPECT_EQ(file.i_mmap, 4u);
  w.expect_consistent();
  for (auto& mm : mms) w.teardown(*mm);
  EXPECT_TRUE(file.mappers.empty());
}

TEST(FileRmap, AnUnmappedPageLeavesTheWalkAndAChildsCopiedPteJoinsIt) {
  // A private file mapping with an anon_vma (a written page) is copied by
  // fork, its file PTEs too: the child's copy of the read page is found.
  MmWorld w;
  auto& file = w.mgr.create_file("data", 2, false);
  w.mgr.preload_file(file, NodeId(0));
  auto parent = w.mgr.mm_alloc();
  const Vpn a = w.map(*parent, 2, Vma::kRead | Vma::kWrite, &file);
  w.fault(*parent, a, false);
  w.fault(*parent, Vpn(a.v + 1), true);  // a private copy: the anon_vma
  auto child = w.mgr.mm_alloc();
  w.mgr.dup_mmap(*parent, *child, CpuId(0));
  EXPECT_EQ(walk(w, *parent, a), (std::vector<Mm*>{parent.get(), child.get()}));
  w.mgr.munmap(*parent, a, 1, CpuId(0));
  EXPECT_EQ(walk(w, *child, a), std::vector<Mm*>{child.get()});
  w.expect_consistent();
  w.teardown(*child);
  w.teardown(*parent);
}

TEST(FileRmap, MappersLeaveFromEitherEndAndFromTheMiddle) {
  MmWorld w;  // first: the mms go back to it
  std::vector<std::shared_ptr<Mm>> mms;
  mms.reserve(6);
  for (int i = 0; i < 6; ++i) mms.push_back(w.mgr.mm_alloc());
  PageMappers m;
  for (int i = 0; i < 6; ++i) m.add(mms[i].get(), Vpn(i));
  m.remove(mms[0].get(), Vpn(0));  // the first
  m.remove(mms[5].get(), Vpn(5));  // the last
  m.remove(mms[2].get(), Vpn(2));  // a hole
  std::vector<Vpn> left;
  m.for_each([&](Mm&, Vpn v) { left.push_back(v); });
  EXPECT_EQ(left, (std::vector<Vpn>{Vpn(1), Vpn(3), Vpn(4)}));
  EXPECT_EQ(m.size(), 3u);
  m.remove(mms[3].get(), Vpn(3));
  m.remove(mms[1].get(), Vpn(1));
  m.remove(mms[4].get(), Vpn(4));
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.size(), 0u);
}

}  // namespace
}  // namespace mmsim::mm
