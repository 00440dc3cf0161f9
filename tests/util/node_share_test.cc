// util::node_share: the nodes autonuma-benchmark's bind variants give each
// task, from its place among its siblings.
#include "util/node_share.h"

#include <gtest/gtest.h>

#include <utility>

namespace mmsim::util {
namespace {

using Share = std::pair<uint64_t, uint64_t>;

TEST(NodeShare, TwoProcessesOnFourNodesTakeAHalfEach) {
  EXPECT_EQ(node_share(0, 2, 4, false), (Share{0, 2}));
  EXPECT_EQ(node_share(1, 2, 4, false), (Share{2, 4}));
}

TEST(NodeShare, MirroredProcessesTakeTheOtherHalf) {
  EXPECT_EQ(node_share(0, 2, 4, true), (Share{2, 4}));
  EXPECT_EQ(node_share(1, 2, 4, true), (Share{0, 2}));
}

TEST(NodeShare, ThreadsBeyondTheNodesShareANodeInConsecutiveBlocks) {
  // numa02 on 16 CPUs and 2 nodes: thread i on node i / 8.
  for (uint64_t i = 0; i < 16; ++i)
    EXPECT_EQ(node_share(i, 16, 2, false), (Share{i / 8, i / 8 + 1}));
  // ...and INVERSE_BIND: (15 - i) / 8.
  for (uint64_t i = 0; i < 16; ++i)
    EXPECT_EQ(node_share(i, 16, 2, true), (Share{(15 - i) / 8, (15 - i) / 8 + 1}));
}

TEST(NodeShare, OneTaskTakesEveryNode) { EXPECT_EQ(node_share(0, 1, 8, false), (Share{0, 8})); }

TEST(NodeShare, UnevenCountsStillGiveEveryTaskANode) {
  // 3 tasks on 8 nodes: blocks of 2, 3 and 3.
  EXPECT_EQ(node_share(0, 3, 8, false), (Share{0, 2}));
  EXPECT_EQ(node_share(1, 3, 8, false), (Share{2, 5}));
  EXPECT_EQ(node_share(2, 3, 8, false), (Share{5, 8}));
  // 5 tasks on 2 nodes: 0, 0, 0, 1, 1.
  EXPECT_EQ(node_share(2, 5, 2, false), (Share{0, 1}));
  EXPECT_EQ(node_share(3, 5, 2, false), (Share{1, 2}));
}

}  // namespace
}  // namespace mmsim::util
