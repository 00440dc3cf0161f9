// Threads that write a page another thread of the process is still
// zero-filling: each allocates, charges and zeroes its own folio, finds the
// entry set under the page-table lock and frees its folio
// (do_anonymous_page, __do_huge_pmd_anonymous_page).
#include <gtest/gtest.h>

#include <string>

#include "support/run.h"

namespace mmsim {
namespace {

using testing::run_text;

// Main maps `size`; `count` threads write all of it, the later ones after
// `delay` (none: they start together, a clone apart). `first` and `later`
// are ops each kind of thread runs before its write.
std::string writers(const std::string& thp, const std::string& size, int count,
                    const std::string& delay = "", const std::string& first = "",
                    const std::string& later = "") {
  // 2 nodes of 2 CPUs, with room for THPs.
  std::string s = R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "1GiB"
[kernel]
version = "6.12"
numa_balancing = 0
transparent_hugepage = ")" +
                  thp +
                  R"("
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "map"
region = "data"
size = ")" + size +
                  R"("
[[programs.main]]
op = "threads"
count = 1
program = "first"
[[programs.main]]
op = "threads"
count = )" + std::to_string(count - 1) +
                  R"(
program = "later"
[[programs.main]]
op = "wait"
)" + first + R"(
[[programs.first]]
op = "touch"
region = "data"
mode = "write"
)" + later;
  if (!delay.empty()) s += "[[programs.later]]\nop = \"sleep\"\nduration = \"" + delay + "\"\n";
  return s + R"([[programs.later]]
op = "touch"
region = "data"
mode = "write"
)";
}

// The process's page tables for 2 MiB of THP-aligned data: its PGD (2
// pages), PUD and PMD tables, and the PTE table the THP's PMD deposits.
constexpr int64_t kTables = 5;

int64_t pages_allocated(const testing::Ran& ran) {
  int64_t sum = 0;
  for (const auto& [name, v] : ran.result.vmstat)
    if (name.starts_with("pgalloc_")) sum += v;
  return sum;
}

const workload::TaskResult& task(const testing::Ran& ran, uint32_t pid) {
  for (const auto& t : ran.result.tasks)
    if (t.pid == pid) return t;
  ADD_FAILURE() << "no task " << pid;
  return ran.result.tasks.front();
}

TEST(FaultRace, ASecondWriterOfATHPUnderZeroFillZeroesAWholeTHPAndFreesIt) {
  const auto ran = run_text(writers("always", "2MiB", 2), {"noise.enabled=false"});
  EXPECT_EQ(ran.vm("thp_fault_alloc"), 1);  // the winner's only
  EXPECT_EQ(ran.vm("pgfault"), 2);
  // And the loser's table to deposit, allocated and freed with its THP.
  EXPECT_EQ(pages_allocated(ran), 1024 + kTables + 1);
  // Both paid a 2 MiB zeroing.
  const double winner = task(ran, 2).times.sys_ns, loser = task(ran, 3).times.sys_ns;
  EXPECT_GT(loser, 0.5 * winner);
}

TEST(FaultRace, AWriterArrivingAfterTheZeroFillEndedFindsTheTHPMapped) {
  const auto ran = run_text(writers("always", "2MiB", 2, "10ms"), {"noise.enabled=false"});
  EXPECT_EQ(ran.vm("thp_fault_alloc"), 1);
  EXPECT_EQ(ran.vm("pgfault"), 1);
  EXPECT_EQ(pages_allocated(ran), 512 + kTables);
  EXPECT_EQ(task(ran, 3).min_flt, 0u);
}

TEST(FaultRace, WritersInLockstepAllocateAPageInNearlyEveryFaultButOnlyOneAPageIsMapped) {
  const auto ran = run_text(writers("never", "1MiB", 3), {"noise.enabled=false"});
  // The page tables: what writers that come after the first wrote it all
  // allocate besides its 256 pages.
  const int64_t tables =
      pages_allocated(run_text(writers("never", "1MiB", 3, "10ms"), {"noise.enabled=false"})) - 256;
  const int64_t faults = ran.vm("pgfault");
  EXPECT_GT(faults, 256);  // they raced for some pages
  // Without noise a follower's lag stays as it is, except after a spurious
  // fault, which leaves it closer behind than the handler's entry work: at
  // most one each for the two followers.
  EXPECT_LE(pages_allocated(ran) - tables, faults);
  EXPECT_GE(pages_allocated(ran) - tables, faults - 2);
  uint64_t rss_faults = 0;
  for (uint32_t pid = 2; pid <= 4; ++pid) rss_faults += task(ran, pid).min_flt;
  EXPECT_EQ(rss_faults, static_cast<uint64_t>(faults));
}

TEST(FaultRace, ALaterFaultThatZeroesFasterGoesOnWithoutWaitingForTheFirst) {
  // The memory is bound to node 0. The first writer runs on node 1 and
  // zeroes its THP remotely; the later one, a clone behind on node 0, zeroes
  // locally, sooner. The page-table lock goes to the first to get there
  // (World's lose_fault_race): the later fault ends first and its task goes
  // on; the first finds the entry set. One THP either way, two faults.
  const auto bound_on = [](const std::string& program, int node) {
    return "[[programs." + program + "]]\nop = \"mempolicy\"\npolicy = \"bind\"\nnodes = [0]\n" +
           "[[programs." + program + "]]\nop = \"pin\"\nnodes = [" + std::to_string(node) + "]\n";
  };
  const auto ran =
      run_text(writers("always", "2MiB", 2, "", bound_on("first", 1), bound_on("later", 0)),
               {"noise.enabled=false"});
  ASSERT_EQ(ran.vm("thp_fault_alloc"), 1);
  EXPECT_EQ(ran.vm("pgfault"), 2);
  // The same fault on node 0, alone, is the shorter.
  const auto local =
      run_text(writers("always", "2MiB", 2, "10ms", bound_on("first", 0), bound_on("later", 1)),
               {"noise.enabled=false"});
  const auto& first = task(ran, 2);
  const auto& later = task(ran, 3);
  // Each task's sys time here is its fault (and its pin and policy).
  const auto done = [](const workload::TaskResult& t) { return t.start_s * 1e9 + t.times.sys_ns; };
  ASSERT_LT(task(local, 2).times.sys_ns, first.times.sys_ns);
  ASSERT_GT(later.start_s, first.start_s);
  EXPECT_LT(done(later), done(first));
}

TEST(FaultRace, ALoserPaysForPuttingBackTheFolioItZeroed) {
  // folio_put after the failed check: the uncharge and the free. A free
  // made 100 us dearer makes the loser's fault that much longer for each
  // page it frees, its THP and the table it allocated to deposit (past the
  // winner's end, where the loser would otherwise wait), and the winner's
  // not at all (it frees nothing).
  const auto sys = [](const std::string& free_ns) {
    const auto ran = run_text(writers("always", "2MiB", 2),
                              {"noise.enabled=false", "costs.page_free_ns=" + free_ns});
    EXPECT_EQ(pages_allocated(ran), 1024 + kTables + 1);
    return std::pair{task(ran, 2).times.sys_ns, task(ran, 3).times.sys_ns};
  };
  const auto [winner, loser] = sys("100000");
  const auto [winner_dear, loser_dear] = sys("200000");
  EXPECT_DOUBLE_EQ(winner_dear, winner);
  // Two frees: the folio and the table it would have deposited.
  EXPECT_NEAR(loser_dear - loser, 2 * 100000, 1);
}

TEST(FaultRace, AWriterWhoseHandlerFindsTheTHPJustMappedTakesASpuriousFault) {
  // The later writer starts `delay_ns` after the first (a sleep): it loses
  // the race if its handler looks at the PMD before the first fault set it,
  // takes a spurious fault (counted, nothing allocated) if after, and no
  // fault at all if it reaches the THP once it is mapped.
  enum class Outcome { kLost, kSpurious, kNone };
  const auto outcome = [](int64_t delay_ns) {
    const auto ran = run_text(writers("always", "2MiB", 2, std::to_string(delay_ns) + "ns"),
                              {"noise.enabled=false"});
    if (ran.vm("pgfault") == 1) return Outcome::kNone;
    EXPECT_EQ(ran.vm("pgfault"), 2);
    return pages_allocated(ran) == 1024 + kTables + 1 ? Outcome::kLost : Outcome::kSpurious;
  };
  // The last delay with a fault: the later writer's access then comes just
  // before the first fault's end.
  int64_t lo = 0, hi = 10'000'000;  // a fault at 0, none at 10 ms
  ASSERT_EQ(outcome(lo), Outcome::kLost);
  ASSERT_EQ(outcome(hi), Outcome::kNone);
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (outcome(mid) == Outcome::kNone ? hi : lo) = mid;
  }
  EXPECT_EQ(outcome(lo), Outcome::kSpurious);
  // Spurious for the handler's entry work before the end (the cost
  // profile's fault_entry_ns, 404 ns), lost before that.
  EXPECT_EQ(outcome(lo - 300), Outcome::kSpurious);
  EXPECT_EQ(outcome(lo - 500), Outcome::kLost);
}

}  // namespace
}  // namespace mmsim
