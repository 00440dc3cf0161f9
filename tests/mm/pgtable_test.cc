// A PTE table's summaries: the entries in use (walks visit only those) and
// the pages by node that price a sweep, kept up to date as entries change.
#include "mm/pgtable.h"

#include <gtest/gtest.h>

#include <vector>

namespace mmsim::mm {
namespace {

Pte present(uint32_t pfn) { return Pte{pfn, static_cast<uint8_t>(Pte::kPresent | Pte::kYoung)}; }

// Even pfns on node 0, odd ones on node 1; a none entry has no folio.
uint16_t node_of(Pte pte) {
  return pte.maps_folio() ? static_cast<uint16_t>(pte.pfn & 1) : PteTable::kNoFolioNode;
}

uint32_t pages_on(const PteTable& t, uint16_t node) {
  for (const auto& np : t.node_pages(node_of))
    if (np.node == node) return np.pages;
  return 0;
}

TEST(PteTable, NextUsedSkipsEntriesThatAreNone) {
  PteTable t;
  t.set(3, present(10));
  t.set(300, present(11));
  EXPECT_EQ(t.next_used(0, 512), 3u);
  EXPECT_EQ(t.next_used(4, 512), 300u);
  EXPECT_EQ(t.next_used(301, 512), 512u);
  EXPECT_EQ(t.next_used(4, 200), 200u);
}

TEST(PteTable, NodePagesCountEachNodeAndThePagesWithoutAFolio) {
  PteTable t;
  for (uint32_t i = 0; i < 100; ++i) t.set(i, present(2 * i));        // node 0
  for (uint32_t i = 100; i < 130; ++i) t.set(i, present(2 * i + 1));  // node 1
  EXPECT_EQ(pages_on(t, 0), 100u);
  EXPECT_EQ(pages_on(t, 1), 30u);
  EXPECT_EQ(pages_on(t, PteTable::kNoFolioNode), 512u - 130u);
}

TEST(PteTable, NodePagesFollowAnEntryThatChanges) {
  PteTable t;
  t.set(7, present(4));
  EXPECT_EQ(pages_on(t, 0), 1u);
  t.set(7, present(5));  // migrated to node 1
  EXPECT_EQ(pages_on(t, 0), 0u);
  EXPECT_EQ(pages_on(t, 1), 1u);
  t.set(7, Pte{});  // zapped
  EXPECT_EQ(pages_on(t, 1), 0u);
}

TEST(PageTable, ForEachVisitsOnlyTheEntriesInUse) {
  PageTable pt;
  pt.table_build(Vpn(0)).set(5, present(1));
  pt.table_build(Vpn(0)).set(400, present(2));
  std::vector<uint64_t> seen;
  pt.for_each(Vpn(0), Vpn(512), [&](Vpn v, PteTable&, uint32_t) { seen.push_back(v.v); });
  EXPECT_EQ(seen, (std::vector<uint64_t>{5, 400}));
}

}  // namespace
}  // namespace mmsim::mm
