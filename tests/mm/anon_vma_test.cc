// An anon_vma's list of VMAs: a VMA leaves it through the slot its link
// remembers (no search), the others keep their order, and when holes
// outnumber the VMAs they are squeezed out and every moved VMA's link is
// told its new slot.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "mm/mm_types.h"

namespace mmsim::mm {
namespace {

// The VMAs of the list, holes skipped.
std::vector<const Vma*> listed(const AnonVma& av) {
  std::vector<const Vma*> out;
  for (const Vma* v : av.slots()) {
    if (v) out.push_back(v);
  }
  return out;
}

struct Chain {
  AnonVma av;
  std::array<Vma, 6> vmas;
  Chain() {
    for (Vma& v : vmas) v.avc.push_back({&av, av.add(&v)});
  }
  void leave(Vma& v) {
    av.remove(v.avc.front().slot);
    v.avc.clear();
  }
};

TEST(AnonVmaList, AVmaLeavingTheMiddleLeavesTheOthersInTheirOrder) {
  Chain c;
  c.leave(c.vmas[2]);
  EXPECT_EQ(listed(c.av),
            (std::vector<const Vma*>{&c.vmas[0], &c.vmas[1], &c.vmas[3], &c.vmas[4], &c.vmas[5]}));
}

TEST(AnonVmaList, WhenHolesOutnumberTheVmasEachMovedLinkPointsAtItsNewSlot) {
  Chain c;
  for (int i : {1, 2, 4, 5}) c.leave(c.vmas[i]);  // 0 and 3 stay, behind holes
  const std::vector<const Vma*> left{&c.vmas[0], &c.vmas[3]};
  ASSERT_EQ(listed(c.av), left);
  for (int i : {0, 3}) {
    const uint32_t slot = c.vmas[i].avc.front().slot;
    size_t n = 0;
    for (const Vma* v : c.av.slots()) n += v != nullptr;
    ASSERT_EQ(n, 2u);
    // The slot the link names holds its VMA: leaving through it works.
    EXPECT_TRUE(c.av.holds(slot, &c.vmas[i])) << i;
  }
  c.leave(c.vmas[0]);
  EXPECT_EQ(listed(c.av), std::vector<const Vma*>{&c.vmas[3]});
  c.leave(c.vmas[3]);
  EXPECT_TRUE(c.av.slots().empty());
}

}  // namespace
}  // namespace mmsim::mm
