// `[run] process_image = "in-use"`: besides the VMAs of the executor's image,
// the pages it keeps resident in them (data 3, bss 3, heap 10, 7 of [stack]
// for a process; the top 2 of a thread's stack, the first written by its
// creator in pthread_create) are faulted in, and those a task keeps using
// are touched again after a NUMA scan pass marks them. The first process
// is forked from mmsim-exec's collector, which faulted the image in: of
// its 23 pages the process writes 9 (2 data, 2 bss, 3 heap, 2 stack), its
// own copies from then on, and the bss's first (glibc's locks) as it
// creates its first thread; the collector's write to the third data page
// after the fork leaves the process's copy its own; it only reads the
// other 12, shared with the collector. At a task's end its report touches
// more (see World::report).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "support/run.h"

namespace mmsim::workload {
namespace {

// Two threads zero their own halves of 8 MiB for `duration`, with NUMA
// balancing as `balancing` says; base pages only, each on its LRU at once
// (a page in an lru_add batch has a reference more, which 6.1's
// change_prot_numa skips: tests/mm/lru_batch_test.cc).
std::string scenario(const std::string& image, int balancing, const std::string& duration) {
  return R"([scenario]
name = "image"
seed = 1

[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "1GiB"
llc_per_socket = "8MiB"

[kernel]
version = "6.1"
transparent_hugepage = "never"
lru_add_batch = 0
numa_balancing = )" +
         std::to_string(balancing) + R"(

[noise]
enabled = false

[run]
program = "main"
process_image = ")" +
         image + R"("

[[programs.main]]
op = "map"
region = "buf"
size = "8MiB"

[[programs.main]]
op = "threads"
count = 2
program = "thread"

[[programs.main]]
op = "wait"

[[programs.thread]]
op = "loop"
duration = ")" +
         duration +
         R"("
body = [{ op = "sweep", region = "buf", mode = "write", slice = "own" }]
)";
}

TEST(ProcessImage, InUsePagesAreFaultedInOnceAtEachTasksStart) {
  const testing::Ran mapped = testing::run_text(scenario("mapped", 0, "10ms"));
  const testing::Ran in_use = testing::run_text(scenario("in-use", 0, "10ms"));
  // The process's 9 written pages (copies of the collector's), the bss
  // page its first thread makes it write, and 3 for each of two threads
  // (its stack's top 2 and its malloc arena's first); the collector's
  // write to a data page after the fork. At their ends the reports: main's
  // writes 4 heap pages it shared with the collector and 3 past the heap's
  // top, each thread's 5 pages of its arena. The executable's code, once
  // for the process (fork left it unmapped): 12 windows and [vdso]'s
  // page at main's start, 4
  // as it makes its first thread, and in the first thread's report 2 (the
  // report's code) and 1 (glibc's exit). Once they have all exited, the
  // collector's 21 as it parses their reports.
  EXPECT_EQ(in_use.vm("pgfault") - mapped.vm("pgfault"),
            9 + 1 + 2 * 3 + 1 + 7 + 2 * 5 + 12 + 1 + 4 + 2 + 1 + 21);
}

// One task that sleeps 1 ms; the run cut at `time_limit` if one is given.
std::string sleeper(const std::string& time_limit = "") {
  return R"([scenario]
name = "image"
seed = 1
)" + (time_limit.empty() ? "" : "time_limit = \"" + time_limit + "\"\n") +
         R"(
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "1GiB"
llc_per_socket = "8MiB"

[kernel]
version = "6.1"

[run]
program = "main"

[[programs.main]]
op = "sleep"
duration = "1ms"
)";
}

TEST(ProcessImage, TheCollectorsFaultsComeBeforeTheRun) {
  // mmsim-exec reads the counters, then forks: its own faults on its image
  // are not the run's. Without a thread, main does not write the bss page
  // of glibc's locks; its report at the end writes 4 heap pages it shared
  // with the collector and 3 fresh ones. The collector's write to a data
  // page after the fork is counted too, and the windows of code main runs
  // at its start (12, and [vdso]'s page) and in its report (2), which fork
  // did not copy. After main's exit, the collector's 21 as it reads and
  // parses the report.
  const testing::Ran ran = testing::run_text(sleeper());
  EXPECT_EQ(ran.vm("pgfault"), 9 + 4 + 3 + 1 + 12 + 1 + 2 + 21);
}

TEST(ProcessImage, ARunCutByItsTimeLimitHasNoReportAndNoCollectorWorkAfterIt) {
  // main still sleeps when the limit ends the run: it has written its 9
  // pages and run its 12 windows of code and [vdso], the collector its page
  // after the fork; no report (7 + 2) and none of the collector's parsing
  // (21).
  const testing::Ran ran = testing::run_text(sleeper("500us"));
  EXPECT_TRUE(ran.result.time_limit_hit);
  EXPECT_EQ(ran.vm("pgfault"), 9 + 1 + 12 + 1);
}

TEST(ProcessImage, AReportsFaultsAreTheRunsButNotInTheTasksMinflt) {
  // mmsim-exec's task reads getrusage, then builds its report: the 7
  // faults of main's report (4 heap pages shared with the collector, 3
  // fresh) count in /proc/vmstat, not in main's minflt. Each thread's 5
  // fresh arena pages likewise, and the code the first report runs (3
  // windows: the report's 2, a thread's exit); and after the tasks' exit,
  // the collector's 21.
  const testing::Ran ran = testing::run_text(scenario("in-use", 0, "10ms"));
  uint64_t minflt = 0;
  for (const auto& t : ran.result.tasks) minflt += t.min_flt;
  // Besides the tasks' own, the collector's write after the fork.
  EXPECT_EQ(static_cast<uint64_t>(ran.vm("pgfault")) - minflt, 7u + 2 * 5 + 1 + 3 + 21);
}

TEST(ProcessImage, TheFirstTaskStartsWhereAForkBesideTheBusyCollectorGoes) {
  // The shell on CPU 0 (noise off): 6.1 forks mmsim native to the idler
  // node 1, whose wakeup brings mmsim-exec beside it, on CPU 3; its fork
  // goes back to node 0 (so did the first task in the 6.12 guests whose
  // shell ran on node 0). 5.10 keeps every fork on the shell's node while
  // it has an idle CPU: mmsim-exec on CPU 0 once the shell waits, and the
  // first task on CPU 1.
  const std::string s = scenario("in-use", 0, "1ms");
  EXPECT_EQ(testing::run_text(s).result.tasks[0].cpu, 0);
  EXPECT_EQ(testing::run_text(s, {"kernel.version=5.10"}).result.tasks[0].cpu, 1);
  // The shell on node 1: the mirror image.
  bool on_node1 = false;
  for (uint64_t seed = 1; seed <= 8 && !on_node1; ++seed) {
    on_node1 = testing::run_text(s, {"noise.enabled=true", "scenario.seed=" + std::to_string(seed)})
                   .result.tasks[0]
                   .node == 1;
  }
  EXPECT_TRUE(on_node1) << "the seed draws the shell's CPU";
}

TEST(ProcessImage, PagesTheProcessOnlyReadsStayUnmarkedWhileSharedWithTheCollector) {
  // One scan pass in 1.1 s. From 4.16 change_prot_numa leaves the pages
  // shared with the collector alone: the 7 of the heap and 5 of [stack]
  // (the bss's first is written, the process has threads).
  auto pass = [](bool skip_shared_cow) {
    std::string s = scenario("in-use", 1, "1100ms");
    const std::string noise = "[noise]";
    s.replace(s.find(noise), noise.size(),
              std::string("[numa]\nskip_shared_cow = ") + (skip_shared_cow ? "true" : "false") +
                  "\n\n" + noise);
    return testing::run_text(s).vm("numa_pte_updates");
  };
  EXPECT_EQ(pass(false) - pass(true), 7 + 5);
}

TEST(ProcessImage, MarkedImagePagesAreTouchedAgainAndTakeHintingFaults) {
  const testing::Ran mapped = testing::run_text(scenario("mapped", 1, "4s"));
  const testing::Ran in_use = testing::run_text(scenario("in-use", 1, "4s"));
  ASSERT_GT(mapped.vm("numa_pte_updates"), 0);
  // Every pass marks the image pages in use as well as the buffer, and the
  // tasks fault them back.
  EXPECT_GT(in_use.vm("numa_pte_updates"), mapped.vm("numa_pte_updates"));
  EXPECT_GT(in_use.vm("numa_hint_faults"), mapped.vm("numa_hint_faults"));
}

TEST(ProcessImage, AfterAScanPassTasksTouchOnlyThePagesTheyKeepUsing) {
  // One pass at 1 s marks the image's own pages; its threads then fault on
  // the 2 heap pages and the [stack] page every task uses, glibc's locks in
  // the bss, the data page of main_arena's tail, and their own stack tops
  // (2 each; their arenas' pages only as they count). main, waiting,
  // touches none. At their ends, the first report reads malloc's state (a
  // data and a bss page).
  const testing::Ran mapped = testing::run_text(scenario("mapped", 1, "1100ms"));
  const testing::Ran in_use = testing::run_text(scenario("in-use", 1, "1100ms"));
  EXPECT_EQ(in_use.vm("numa_hint_faults") - mapped.vm("numa_hint_faults"),
            2 + 1 + 1 + 1 + 2 * 2 + 2);
}

TEST(ProcessImage, AMarkedThreadStackChargesItsWholeVmaToTheScanBudget) {
  // 256 MiB is the whole budget of a pass (numa_balancing_scan_size_mb).
  // With the image in use, a pass that marks the threads' stacks (8 MiB
  // each above a PROT_NONE guard page the scan skips) runs out of budget
  // that many pages into the buffer, so the first pass marks 2 x 2048 pages
  // fewer of it. The stacks are VMAs of their own, as from 6.7 (MAP_STACK's
  // VM_NOHUGEPAGE keeps the first from merging with the buffer above it).
  auto big = [](const std::string& image) {
    std::string s = scenario(image, 1, "1100ms");
    const std::string from = "size = \"8MiB\"";
    s.replace(s.find(from), from.size(), "size = \"256MiB\"");
    const std::string thp = "transparent_hugepage = \"never\"";
    s.replace(s.find(thp), thp.size(), thp + "\nmap_stack_nohugepage = true");
    return s;
  };
  const testing::Ran mapped = testing::run_text(big("mapped"));
  const testing::Ran in_use = testing::run_text(big("in-use"));
  EXPECT_EQ(mapped.vm("numa_pte_updates"), 65536);
  // Below the buffer, in the order of the walk: data (3 pages, 3 in use),
  // bss (6, 3), heap (34, 10), each thread's arena (33 writable, 1) and
  // stack (2048, 2); each charges its whole span. [stack] is above the
  // buffer.
  const int64_t charged = 3 + 6 + 34 + 2 * 33 + 2 * 2048;
  // The heap's 6 pages shared with the collector stay unmarked (4.16+).
  const int64_t marked = 3 + 3 + 4 + 2 * 1 + 2 * 2;
  // The last chunk ends at a 2 MiB boundary: up to 511 pages past the
  // budget.
  EXPECT_GE(in_use.vm("numa_pte_updates"), 65536 - charged + marked);
  EXPECT_LT(in_use.vm("numa_pte_updates"), 65536 - charged + marked + 512);
}

// The scenario's two threads, with THP as the kernel version has it, idle
// for 1 ms instead of sweeping, so that only their stacks fault.
testing::Ran run_idle_threads(const std::string& version) {
  std::string s = scenario("in-use", 0, "1ms");
  const std::string from = "version = \"6.1\"\ntransparent_hugepage = \"never\"";
  s.replace(s.find(from), from.size(), "version = \"" + version + "\"");
  const std::string loop = "body = [{ op = \"sweep\"";
  s.replace(s.find(loop), loop.size(), "body = [{ op = \"sleep\", duration = \"100us\" }]\n#");
  return testing::run_text(s);
}

TEST(ProcessImage, BeforeSixSevenTheFirstThreadsStackJoinsTheBufferAndItsTopFaultsATHP) {
  // glibc maps the stack PROT_NONE just below the buffer, then opens all
  // but its guard page: on 6.1 that part merges with the buffer, so the
  // 2 MiB range across their boundary lies inside one VMA, and
  // pthread_create's write to the stack's top faults a THP there. From 6.7
  // MAP_STACK sets VM_NOHUGEPAGE: the stack stays apart, in base pages.
  EXPECT_EQ(run_idle_threads("6.1").vm("thp_fault_alloc"), 1);
  EXPECT_EQ(run_idle_threads("6.12").vm("thp_fault_alloc"), 0);
}

TEST(ProcessImage, AThreadThatEndsBeforeItsProcessHandsBackItsStackBelowItsLastFrames) {
  // start_thread's end (advise_stack_range): MADV_DONTNEED from the stack
  // block's start to 16 KiB below the thread's last frame. On 6.1 the
  // first thread's stack top is a THP shared with the buffer above: the
  // range ends inside it, and its PMD is split (a 6.1 guest counts
  // thp_split_pmd 1 in zero-fill-race).
  const testing::Ran ran = run_idle_threads("6.1");
  ASSERT_EQ(ran.vm("thp_fault_alloc"), 1);
  EXPECT_EQ(ran.vm("thp_split_pmd"), 1);
}

TEST(ProcessImage, AThreadsStackTopIsFirstTouchedByItsCreator) {
  // pthread_create writes the struct pthread and TLS in the top page: that
  // fault is main's (besides its 9 image pages, the 12 windows of code and
  // the [vdso] page it runs at its start and, at its first thread, the
  // bss's first and 4 windows of code); the thread's frames, in the next
  // page, and its arena's first page are its own.
  const testing::Ran mapped = testing::run_text(scenario("mapped", 0, "10ms"));
  const testing::Ran in_use = testing::run_text(scenario("in-use", 0, "10ms"));
  auto minflt = [](const testing::Ran& r, const std::string& comm) {
    uint64_t n = 0;
    for (const auto& t : r.result.tasks)
      if (t.comm == comm) n += t.min_flt;
    return n;
  };
  EXPECT_EQ(minflt(in_use, "main") - minflt(mapped, "main"), 9u + 12 + 1 + 1 + 4 + 2);
  EXPECT_EQ(minflt(in_use, "thread") - minflt(mapped, "thread"), 2u * 2);
}

// For each hinting fault in a scan trace on the first page of a thread
// arena (64 MiB-aligned, HEAP_MAX_SIZE), its task_numa_fault flags.
std::vector<std::string> arena_fault_flags(const std::string& trace) {
  std::vector<std::string> flags;
  bool arena = false;
  std::istringstream in(trace);
  for (std::string line; std::getline(in, line);) {
    if (const size_t at = line.find("mpol_misplaced: addr=0x"); at != std::string::npos) {
      const uint64_t addr = std::stoull(line.substr(at + 23), nullptr, 16);
      arena = addr >= (uint64_t{1} << 40) && addr % (64u << 20) == 0;
    } else if (const size_t f = line.find("task_numa_fault:"); f != std::string::npos) {
      if (arena) flags.push_back(line.substr(line.find("flags=", f) + 6));
      arena = false;
    }
  }
  return flags;
}

TEST(ProcessImage, AThreadsArenaPageWaitsInTheBatchOfTheCpuItStartedOnSoItsMigrationFails) {
  // glibc makes a thread's arena at its first malloc, as it starts: the
  // trim's munmap drains that CPU's lru_add batch, then the arena's first
  // page faults in and waits there. The thread pins itself to node 1 and
  // writes its counters in that page each pass: on 6.12 every hinting
  // fault on it fails to isolate (TNF_MIGRATE_FAIL, 0x10), as a 6.12
  // guest's trace of validate/anon-migrate-threads shows; without the
  // batch it moves at the first.
  std::string s = scenario("in-use", 1, "4s");
  const std::string from = "version = \"6.1\"\ntransparent_hugepage = \"never\"\nlru_add_batch = 0";
  s.replace(s.find(from), from.size(), "version = \"6.12\"\ntransparent_hugepage = \"never\"");
  s.replace(s.find("[[programs.main]]"), 0, "[[programs.main]]\nop = \"pin\"\nnodes = [0]\n\n");
  const std::string loop = "[[programs.thread]]\nop = \"loop\"";
  s.replace(s.find(loop), loop.size(), "[[programs.thread]]\nop = \"pin\"\nnodes = [1]\n\n" + loop);
  const std::string body = "slice = \"own\" }]";
  s.replace(s.find(body), body.size(),
            body.substr(0, body.size() - 1) + ", { op = \"count\", counter = \"passes\" }]");
  std::string with_batch, without_batch;
  testing::run_text(s, {}, true, &with_batch);
  testing::run_text(s, {"kernel.lru_add_batch=0"}, true, &without_batch);
  const std::vector<std::string> with = arena_fault_flags(with_batch);
  ASSERT_GE(with.size(), 4u);  // 2 threads, 2 passes or more
  for (const std::string& f : with) EXPECT_EQ(f, "0x10");
  const std::vector<std::string> without = arena_fault_flags(without_batch);
  ASSERT_GE(without.size(), 4u);
  EXPECT_EQ(std::count(without.begin(), without.end(), "0x1"), 2);  // each moves once
  EXPECT_EQ(std::count(without.begin(), without.end(), "0x10"), 0);
}

TEST(ProcessImage, UpTo6_11TheDataVmaOfAnExecutableOnTmpfsIsNeverScanned) {
  // The image's data VMA is a private mapping of mmsim-exec's file; from a
  // guest's initramfs (shmem) it has a get_policy with no policy set, which
  // vma_policy_mof takes for "no MPOL_F_MOF" (6.1 guests' scan traces
  // never name it; 6.12's do). Its 3 pages in use go unmarked.
  auto ptes = [](const std::string& version, const std::string& fs) {
    std::string s = scenario("in-use", 1, "1100ms");
    s.replace(s.find("version = \"6.1\""), 15, "version = \"" + version + "\"");
    s.replace(s.find("[run]"), 5, "[run]\nexecutable_fs = \"" + fs + "\"");
    return testing::run_text(s).vm("numa_pte_updates");
  };
  EXPECT_EQ(ptes("6.1", "disk") - ptes("6.1", "tmpfs"), 3);
  EXPECT_EQ(ptes("6.12", "disk"), ptes("6.12", "tmpfs"));
}

// The diagnostics of preparing a scenario that must not run.
std::vector<std::string> refusals(const std::string& text) {
  scenario::Source source;
  source.path = "test.toml";
  source.text = text;
  const auto prepared = scenario::prepare(source);
  EXPECT_FALSE(prepared.run);
  std::vector<std::string> out;
  for (const auto& d : prepared.diagnostics) out.push_back(d.str());
  return out;
}

TEST(ProcessImage, AnUnknownExecutableFsIsAnErrorAtItsKey) {
  std::string s = scenario("in-use", 0, "10ms");
  s.replace(s.find("[run]"), 5, "[run]\nexecutable_fs = \"nfs\"");
  const std::vector<std::string> d = refusals(s);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].find("test.toml:21:17: error: run.executable_fs: \"nfs\""), std::string::npos)
      << d[0];
}

TEST(ProcessImage, AnUnknownModeIsAnErrorAtItsKey) {
  const std::vector<std::string> d = refusals(scenario("resident", 0, "10ms"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].find("test.toml:22:17: error: run.process_image:"), std::string::npos) << d[0];
}

}  // namespace
}  // namespace mmsim::workload
