#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace mmsim::sim {
namespace {

struct Recorder : EventHandler {
  std::vector<uint64_t> seen;
  void on_event(EventQueue&, const Event& e) override { seen.push_back(e.arg0); }
};

TEST(EventQueue, RunsEventsInTimeThenPriorityThenInsertionOrder) {
  EventQueue q;
  Recorder r;
  q.schedule(Tick(20), &r, 0, 1);
  q.schedule(Tick(10), &r, 0, 2, 0, 5);
  q.schedule(Tick(10), &r, 0, 3, 0, 1);
  q.schedule(Tick(10), &r, 0, 4, 0, 1);
  q.run();
  EXPECT_EQ(r.seen, (std::vector<uint64_t>{3, 4, 2, 1}));
}

TEST(EventQueue, TheProgressHookSeesEvery65536thEventWithItsTime) {
  EventQueue q;
  Recorder r;
  for (uint64_t i = 0; i < 3 * 65536 + 5; ++i) q.schedule(Tick(static_cast<int64_t>(i)), &r, 0, i);
  std::vector<std::pair<int64_t, uint64_t>> calls;
  q.on_progress([&](Tick now, uint64_t events) { calls.emplace_back(now.ns, events); });
  q.run();
  EXPECT_EQ(calls, (std::vector<std::pair<int64_t, uint64_t>>{
                       {65535, 65536}, {2 * 65536 - 1, 2 * 65536}, {3 * 65536 - 1, 3 * 65536}}));
}

TEST(EventQueue, StopsAtTheRequestedTime) {
  EventQueue q;
  Recorder r;
  q.schedule(Tick(10), &r, 0, 1);
  q.schedule(Tick(30), &r, 0, 2);
  q.run(Tick(20));
  EXPECT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(q.next_time(), Tick(30));
}

}  // namespace
}  // namespace mmsim::sim
