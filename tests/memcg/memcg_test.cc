// Memory cgroups end to end (checker on) and the protocol presets.
#include "memcg/memcg.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "report/report.h"
#include "support/fault_drop.h"
#include "support/mm_fixture.h"
#include "support/run.h"

namespace mmsim::memcg {
namespace {

using testing::run_text;

const MemCgroup& group(const testing::Ran& ran, const std::string& path) {
  for (const auto& g : ran.result.memcg) {
    if (g.path == path) return g;
  }
  ADD_FAILURE() << "no memcg " << path;
  static MemCgroup none;
  return none;
}

// Seed B in small: an 8 MiB file mlocked, then 10 x (touch, MADV_DONTNEED).
std::string fault_drop(const std::string& kernel = "3.3", const std::string& memcg = "") {
  return testing::fault_drop_scenario(R"(
[scenario]
sample_interval = "1ms"
[machine]
preset = "2s-16c"
mem_per_node = "256MiB"
[kernel]
version = ")" + kernel + "\"\n[memcg]\n" + memcg,
                                      "8MiB", false, 10);
}

TEST(MemcgFaultDrop, MappedFileRisesOnceAtMlockAndStaysThroughTheLoop) {
  auto ran = run_text(fault_drop());
  const auto& tl = ran.result.timeline;
  ASSERT_GT(tl.size(), 3u);
  // After the mlock every sample shows all 2048 pages mapped in /bench.
  size_t mapped_samples = 0;
  for (const auto& s : tl) {
    if (s.memcg[1] == 2048) ++mapped_samples;
    EXPECT_TRUE(s.memcg[1] == 0 || s.memcg[1] == 2048) << s.t_s << " s: " << s.memcg[1];
  }
  EXPECT_GE(mapped_samples, tl.size() - 2);
}

TEST(MemcgFaultDrop, EveryPageIsChargedOnceAndNothingInTheLoop) {
  auto ran = run_text(fault_drop());
  EXPECT_EQ(group(ran, "/bench").pgpgin, 2048);
  EXPECT_EQ(group(ran, "/bench").pgpgout, 0);
  EXPECT_EQ(group(ran, "/bench").cache, 2048);
}

TEST(MemcgFaultDrop, WithoutFaultAroundTheLoopTakesAFaultPerPagePerPass) {
  // Counted once a fault completes (6.5 on), pgfault is 2048 mlock faults
  // (each a readahead window's major fault or a minor one) and 10 x 2048 in
  // the loop.
  auto ran = run_text(fault_drop(), {"kernel.pgfault_per_attempt=false"});
  EXPECT_EQ(ran.vm("pgfault"), 2048 + 10 * 2048);
  EXPECT_EQ(group(ran, "/bench").pgfault, 2048 + 10 * 2048);
}

TEST(MemcgFaultDrop, CountedPerAttemptAFaultRetriedForItsReadCountsTwice) {
  // 3.3 counts pgfault at handle_mm_fault's entry: the mlock faults that
  // dropped the mmap lock for a readahead read (a miss, or a mark) went in
  // twice, in vmstat and in the memcg alike.
  auto once = run_text(fault_drop(), {"kernel.pgfault_per_attempt=false"});
  auto each = run_text(fault_drop());
  // 8 MiB read in 64 windows of 128 KiB (pgpgin counts KiB): the miss that
  // read the first, and each window's mark, the last one's included (its
  // fault drops the lock for a readahead that finds the end of the file).
  const int64_t windows = each.vm("pgpgin") / 128;
  ASSERT_EQ(windows, 64);
  EXPECT_EQ(each.vm("pgfault") - once.vm("pgfault"), 1 + windows);
  EXPECT_EQ(group(each, "/bench").pgfault - group(once, "/bench").pgfault, 1 + windows);
}

double sys_s(const testing::Ran& ran) {
  double sys = 0;
  for (const auto& t : ran.result.tasks) sys += t.times.sys_ns;
  return sys * 1e-9;
}

TEST(MemcgProtocols, BeginEndWithoutTheGlobalFlagCostsMoreThanWithIt) {
  auto with = run_text(fault_drop("3.4", "stat_protocol = \"begin-end\""));
  auto without = run_text(fault_drop("3.4", "stat_protocol = \"begin-end-no-global\""));
  EXPECT_GT(sys_s(without), sys_s(with));
}

TEST(MemcgProtocols, BeginEndCostsWithinAHalfPercentOfPcgFlagsWhenNothingMoves) {
  // The brackets add a flag read to every rmap; they drop the atomic
  // PCG_FILE_MAPPED bit flip of every 0 <-> 1 mapcount change.
  auto flags = run_text(fault_drop("3.4", "stat_protocol = \"pcg-flags\""));
  auto brackets = run_text(fault_drop("3.4", "stat_protocol = \"begin-end\""));
  EXPECT_NEAR(sys_s(brackets), sys_s(flags), sys_s(flags) * 0.005);
}

TEST(MemcgProtocols, NoneTurnsMemcgOff) {
  auto ran = run_text(fault_drop("3.4", "stat_protocol = \"none\""));
  EXPECT_TRUE(ran.result.memcg.empty());
}

TEST(MemcgProtocols, KernelVersionPresetsTheProtocolAndPageCgroupSize) {
  auto at = [](const char* v) {
    auto lr = scenario::parse_scenario(
        "[machine]\npreset = \"2s-16c\"\n[run]\nprogram = \"m\"\n"
        "[[programs.m]]\nop = \"sleep\"\nduration = \"1ms\"\n",
        "v.toml", {std::string("kernel.version=") + v});
    EXPECT_TRUE(lr.ok());
    return lr.scenario->kernel;
  };
  EXPECT_EQ(at("3.3").memcg.stat_protocol, StatProtocol::kPcgFlags);
  EXPECT_EQ(at("3.4").memcg.stat_protocol, StatProtocol::kBeginEnd);
  EXPECT_EQ(at("2.6").page_cgroup_bytes(), 40u);
  EXPECT_EQ(at("3.2").page_cgroup_bytes(), 32u);
  EXPECT_EQ(at("3.3").page_cgroup_bytes(), 16u);
  EXPECT_EQ(at("3.19").page_cgroup_bytes(), 8u);
  EXPECT_EQ(page_cgroup_bytes(StatProtocol::kNone, KernelVersion{3, 4}), 0u);
}

std::string anon(const std::string& limit, const std::string& ops) {
  return R"(
[machine]
preset = "2s-16c"
mem_per_node = "256MiB"
[kernel]
version = "3.4"
[[cgroups]]
path = "/g"
)" + limit +
         R"(
[run]
program = "main"
process_image = "mapped"
cgroup = "/g"
)" + ops;
}

TEST(MemcgCharge, AnonymousFaultsChargeRssAndUnmapUnchargesIt) {
  auto ran = run_text(anon("", R"(
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "unmap"
region = "a"
)"));
  const auto& g = group(ran, "/g");
  EXPECT_EQ(g.pgpgin, 16);
  EXPECT_EQ(g.pgpgout, 16);
  EXPECT_EQ(g.rss, 0);
  EXPECT_EQ(g.max_usage, 32u);  // one CHARGE_BATCH precharged into the CPU's stock
}

TEST(MemcgCharge, AChildsCowCopyIsChargedToTheChildsMemcg) {
  auto ran = run_text(anon("", R"(
[[programs.main]]
op = "map"
region = "a"
size = "16KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "fork"
program = "child"
[[programs.main]]
op = "wait"
[[programs.child]]
op = "touch"
region = "a"
mode = "write"
)"));
  EXPECT_EQ(group(ran, "/g").pgpgin, 4 + 4);
}

TEST(MemcgLimit, AnonymousMemoryBeyondTheLimitIsAnOomNotACrash) {
  auto ran = run_text(anon("limit = \"256KiB\"", R"(
[[programs.main]]
op = "map"
region = "a"
size = "1MiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
)"));
  ASSERT_EQ(ran.result.errors.size(), 1u);
  EXPECT_NE(ran.result.errors[0].find("out of memory"), std::string::npos);
  EXPECT_GT(group(ran, "/g").failcnt, 0u);
  EXPECT_LE(group(ran, "/g").max_usage, 64u);
}

TEST(MemcgLimit, AFileLargerThanTheLimitIsReclaimedAndRefaulted) {
  auto ran = run_text(anon("limit = \"1MiB\"", R"(
[[files]]
name = "f"
size = "4MiB"
[[programs.main]]
op = "map"
region = "m"
file = "f"
prot = "r"
flags = "shared"
[[programs.main]]
op = "loop"
count = 3
body = [ { op = "touch", region = "m" } ]
)"));
  const auto& g = group(ran, "/g");
  EXPECT_LE(g.max_usage, 256u);
  EXPECT_GT(g.failcnt, 0u);
  EXPECT_GT(g.reclaimed, 0u);
  // 3.4: limit reclaim is not global reclaim (pgscan_direct counts only
  // that), and there are no shadow entries yet: every re-read is a read.
  EXPECT_EQ(ran.vm("pgsteal_direct"), 0);
  EXPECT_GT(ran.vm("pgpgin"), 2 * 4096);
  EXPECT_TRUE(ran.result.errors.empty());
}

TEST(MemcgLimit, PageCacheFoliosMovedByNumaBalancingStayReclaimable) {
  // Threads on both nodes read a 512 KiB file mapped read-write (NUMA
  // balancing skips read-only file mappings), so hinting faults migrate its
  // page cache; then a 1 MiB file fills the 1 MiB limit, so reclaim must
  // evict folios of the first file, migrated ones among them: each new
  // folio takes the old one's place on its memcg's LRU (the checker finds
  // every folio on the list its flags name), and reading the first file
  // again refaults what was evicted.
  auto ran = run_text(R"(
[machine]
sockets = 2
cores_per_socket = 4
mem_per_node = "16MiB"
llc_per_socket = "1MiB"
[kernel]
numa_balancing = 1
numa_balancing_scan_delay_ms = 1
[[cgroups]]
path = "/g"
limit = "1MiB"
[[files]]
name = "f"
size = "512KiB"
[[files]]
name = "g"
size = "1MiB"
[run]
program = "main"
process_image = "mapped"
cgroup = "/g"
[[programs.main]]
op = "map"
region = "f"
file = "f"
prot = "rw"
flags = "shared"
[[programs.main]]
op = "threads"
program = "reader"
count = 8
[[programs.main]]
op = "wait"
[[programs.main]]
op = "map"
region = "g"
file = "g"
prot = "r"
flags = "shared"
[[programs.main]]
op = "touch"
region = "g"
[[programs.main]]
op = "touch"
region = "f"
[[programs.reader]]
op = "loop"
count = 200
body = [ { op = "sweep", region = "f" } ]
)");
  EXPECT_GT(ran.vm("numa_pages_migrated"), 0);
  EXPECT_GT(ran.vm("workingset_refault_file"), 0);
  EXPECT_TRUE(ran.result.check_failures.empty());
  EXPECT_TRUE(ran.result.errors.empty());
}

TEST(MemcgMove, TheSlowPathIsTakenWhileChargesMoveAndTheChargesEndInTheNewMemcg) {
  auto ran = run_text(R"(
[machine]
preset = "2s-16c"
mem_per_node = "256MiB"
[kernel]
version = "3.4"
[[cgroups]]
path = "/a"
[[cgroups]]
path = "/b"
move_charge_at_immigrate = 3
[[files]]
name = "data"
size = "16MiB"
[run]
program = "parent"
process_image = "mapped"
cgroup = "/a"
[[programs.parent]]
op = "map"
region = "locked"
file = "data"
prot = "r"
flags = "shared"
[[programs.parent]]
op = "mlock"
region = "locked"
[[programs.parent]]
op = "fork"
program = "looper"
[[programs.parent]]
op = "sleep"
duration = "5ms"
[[programs.parent]]
op = "cgroup"
path = "/b"
[[programs.parent]]
op = "wait"
[[programs.looper]]
op = "map"
region = "reader"
file = "data"
prot = "r"
flags = "shared"
[[programs.looper]]
op = "loop"
count = 20
body = [ { op = "touch", region = "reader" }, { op = "madvise", region = "reader", advice = "dontneed" } ]
)");
  EXPECT_GT(group(ran, "/a").move_lock_slowpath, 0u);
  EXPECT_EQ(group(ran, "/b").cache, 4096);
  EXPECT_EQ(group(ran, "/a").cache, 0);
  EXPECT_EQ(group(ran, "/a").usage, 0u);
}

TEST(MemcgMove, WithoutMoveChargeAtImmigrateNothingMoves) {
  auto ran = run_text(anon("", R"(
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "cgroup"
path = "/"
[[programs.main]]
op = "unmap"
region = "a"
)"));
  EXPECT_EQ(group(ran, "/g").pgpgout, 16);  // uncharged from /g: it stayed there
}

// The report of a cgroup v1 or v2 run ----------------------------------------

// A 1 MiB-limited cgroup that faults in 64 KiB of anonymous memory and reads
// a 64 KiB file, under the given hierarchy.
std::string limited(const std::string& hierarchy) {
  return R"(
[machine]
preset = "2s-16c"
mem_per_node = "256MiB"
[kernel]
version = "6.6"
[memcg]
hierarchy = ")" +
         hierarchy + R"("
[[cgroups]]
path = "/g"
limit = "1MiB"
[[files]]
name = "f"
size = "64KiB"
[run]
program = "main"
process_image = "mapped"
cgroup = "/g"
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "map"
region = "m"
file = "f"
prot = "r"
flags = "shared"
[[programs.main]]
op = "touch"
region = "m"
)";
}

// The "memcg" object of the run's report JSON.
nlohmann::ordered_json memcg_json(const testing::Ran& ran) {
  if (!ran.topology) {
    ADD_FAILURE() << "the scenario did not run";
    return {};
  }
  report::RunInfo info;
  info.scenario = &ran.scenario;
  info.topology = &*ran.topology;
  info.result = &ran.result;
  info.timing = false;
  const nlohmann::ordered_json j = report::run_json(info);
  if (!j.contains("memcg")) {
    ADD_FAILURE() << "no memcg in " << j.dump();
    return {};
  }
  return j.at("memcg");
}

const char* const kV1Files[] = {"memory.usage_in_bytes", "memory.max_usage_in_bytes",
                                "memory.limit_in_bytes", "memory.failcnt",
                                "memory.move_charge_at_immigrate"};
const char* const kV1Stats[] = {"cache", "rss", "mapped_file", "pgpgin", "pgpgout"};
const char* const kV2Files[] = {"memory.current", "memory.max", "memory.peak", "memory.events"};
const char* const kV2Stats[] = {"anon", "file", "file_mapped"};

TEST(MemcgReport, AV2RunReportsMemoryCurrentAndMaxAndNoV1Names) {
  auto ran = run_text(limited("v2"));
  const auto m = memcg_json(ran);
  ASSERT_TRUE(m.contains("cgroups")) << m.dump();
  EXPECT_EQ(m.at("hierarchy"), "v2");
  const auto& g = m.at("cgroups").at("/g");
  EXPECT_EQ(g.at("memory.current").get<uint64_t>(), group(ran, "/g").usage * kPageSize);
  EXPECT_EQ(g.at("memory.max").get<uint64_t>(), uint64_t{1} << 20);
  EXPECT_EQ(m.at("cgroups").at("/").at("memory.max"), "max");
  // The task has exited: its anonymous memory is gone, the file stays cached.
  EXPECT_EQ(g.at("memory.stat").at("anon").get<int64_t>(), 0);
  EXPECT_EQ(g.at("memory.stat").at("file").get<int64_t>(), 16 * 4096);
  for (const auto& [path, files] : m.at("cgroups").items()) {
    for (const char* name : kV2Files) EXPECT_TRUE(files.contains(name)) << path << " " << name;
    for (const char* name : kV2Stats)
      EXPECT_TRUE(files.at("memory.stat").contains(name)) << path << " " << name;
    for (const char* name : kV1Files) EXPECT_FALSE(files.contains(name)) << path << " " << name;
    for (const char* name : kV1Stats)
      EXPECT_FALSE(files.at("memory.stat").contains(name)) << path << " " << name;
  }
}

// The task in /g/h, below /g, which has no task of its own.
std::string nested(const std::string& hierarchy) {
  std::string text = limited(hierarchy);
  text.replace(text.find("[[files]]"), 0, "[[cgroups]]\npath = \"/g/h\"\n");
  const std::string task_in = "cgroup = \"/g\"";
  text.replace(text.find(task_in), task_in.size(), "cgroup = \"/g/h\"");
  return text;
}

TEST(MemcgReport, AV2ParentsMemoryStatCountsItsChildrensPagesAndFaults) {
  auto ran = run_text(nested("v2"));
  const MemCgroup& g = group(ran, "/g");
  const MemCgroup& h = group(ran, "/g/h");
  ASSERT_GT(h.pgfault, 0);
  EXPECT_EQ(g.pgfault, h.pgfault);
  EXPECT_EQ(g.cache, h.cache);
  EXPECT_EQ(g.usage, h.usage);
  EXPECT_GE(group(ran, "/").pgfault, g.pgfault);
  const auto m = memcg_json(ran);
  EXPECT_EQ(m.at("cgroups").at("/g").at("memory.stat").at("pgfault"), h.pgfault);
}

TEST(MemcgReport, AV1ParentsMemoryStatCountsOnlyItsOwn) {
  auto ran = run_text(nested("v1"));
  ASSERT_GT(group(ran, "/g/h").pgfault, 0);
  EXPECT_EQ(group(ran, "/g").pgfault, 0);
  EXPECT_EQ(group(ran, "/g").cache, 0);
  // Usage is hierarchical in both.
  EXPECT_EQ(group(ran, "/g").usage, group(ran, "/g/h").usage);
}

TEST(MemcgReport, AV1RunReportsUsageInBytesAndLimitInBytesAndNoV2Names) {
  auto ran = run_text(limited("v1"));
  const auto m = memcg_json(ran);
  ASSERT_TRUE(m.contains("cgroups")) << m.dump();
  EXPECT_EQ(m.at("hierarchy"), "v1");
  const auto& g = m.at("cgroups").at("/g");
  EXPECT_EQ(g.at("memory.usage_in_bytes").get<uint64_t>(), group(ran, "/g").usage * kPageSize);
  EXPECT_EQ(g.at("memory.limit_in_bytes").get<int64_t>(), int64_t{1} << 20);
  // The task has exited: its anonymous memory is gone, the file stays cached.
  EXPECT_EQ(g.at("memory.stat").at("rss").get<int64_t>(), 0);
  EXPECT_EQ(g.at("memory.stat").at("cache").get<int64_t>(), 16 * 4096);
  EXPECT_EQ(g.at("memory.stat").at("pgpgin").get<int64_t>(), 16 + 16);
  for (const auto& [path, files] : m.at("cgroups").items()) {
    for (const char* name : kV1Files) EXPECT_TRUE(files.contains(name)) << path << " " << name;
    for (const char* name : kV1Stats)
      EXPECT_TRUE(files.at("memory.stat").contains(name)) << path << " " << name;
    for (const char* name : kV2Files) EXPECT_FALSE(files.contains(name)) << path << " " << name;
    for (const char* name : kV2Stats)
      EXPECT_FALSE(files.at("memory.stat").contains(name)) << path << " " << name;
  }
}

// One task that writes 64 KiB and sleeps, in the run's own cgroup ("/"),
// with the executor's image in use; the run cut at `time_limit` if given.
std::string in_root(const std::string& hierarchy, const std::string& time_limit = "") {
  return R"(
[scenario]
)" + (time_limit.empty() ? "" : "time_limit = \"" + time_limit + "\"\n") +
         R"(
[machine]
preset = "2s-16c"
mem_per_node = "256MiB"
[kernel]
version = "6.1"
[memcg]
hierarchy = ")" +
         hierarchy + R"("
[run]
program = "main"
process_image = "in-use"
[[programs.main]]
op = "map"
region = "a"
size = "64KiB"
[[programs.main]]
op = "touch"
region = "a"
mode = "write"
[[programs.main]]
op = "sleep"
duration = "1ms"
)";
}

TEST(MemcgReport, TheExecutorsFileIsChargedOutsideTheRunsCgroup) {
  // The 350 pages of mmsim-exec were cached before the run (a guest's
  // initramfs, unpacked at boot into the real root), and every process
  // maps them; the run's "/" holds none of them, and the memcg that does
  // is not reported.
  for (const char* h : {"v1", "v2"}) {
    auto ran = run_text(in_root(h));
    ASSERT_EQ(ran.result.memcg.size(), 1u) << h;
    const MemCgroup& root = group(ran, "/");
    EXPECT_EQ(root.cache, 0) << h;
    EXPECT_EQ(root.shmem, 0) << h;
    EXPECT_EQ(root.mapped_file, 0) << h;
    EXPECT_GT(root.pgpgin, 16) << h;  // the task's pages and the collector's
    EXPECT_LT(root.pgpgin, 350) << h;
  }
}

TEST(MemcgReport, TheCgroupFilesAreReadOnceTheExecutorHasExited) {
  // mmsim-exec reads the counters, exits, and only then does its launcher
  // read the cgroup files: the collector's anonymous pages are gone too.
  auto ran = run_text(in_root("v1"));
  const MemCgroup& root = group(ran, "/");
  EXPECT_EQ(root.rss, 0);
  EXPECT_EQ(root.pgpgout, root.pgpgin);
  EXPECT_TRUE(ran.result.check_failures.empty());
}

TEST(MemcgReport, ARunCutByItsTimeLimitReportsItsCgroupsWithTheirTasksAlive) {
  auto ran = run_text(in_root("v1", "500us"));
  ASSERT_TRUE(ran.result.time_limit_hit);
  EXPECT_GE(group(ran, "/").rss, 16);  // the task's 64 KiB at least
}

// Charge moving under v1 and v2 (the controller on its own) -------------------

// A memory manager with a memcg controller of two cgroups, /a and /b, the
// second with move_charge_at_immigrate = 3 (anon and file), and a process in
// /a that wrote 4 anonymous pages.
struct MoveWorld {
  explicit MoveWorld(Hierarchy h)
      : vmscan(w.mgr, {}),
        ctl(config(h), w.costs, w.mgr, vmscan, w.topo.nr_cpus(),
            {CgroupSpec{.path = "/a"}, CgroupSpec{.path = "/b", .move_charge_at_immigrate = 3}}) {
    w.mgr.set_memcg(&ctl);
    from = *ctl.find("/a");
    to = *ctl.find("/b");
    mm = w.mgr.mm_alloc();
    mm->memcg = from;
    const Vpn a = w.map(*mm, 4, testing::kRW);
    for (uint64_t i = 0; i < 4; ++i) {
      mm::FaultCtx c = w.ctx();
      c.memcg = from;
      EXPECT_EQ(w.mgr.handle_mm_fault(*mm, Vpn(a.v + i), true, c).status, mm::FaultStatus::kOk);
    }
  }
  ~MoveWorld() {
    w.teardown(*mm);
    mm.reset();
  }
  static MemcgConfig config(Hierarchy h) {
    MemcgConfig c;
    c.hierarchy = h;
    return c;
  }
  // The cgroup op: the task's mm goes to /b (mem_cgroup_move_task).
  void move() {
    ctl.begin_move(*mm, to);
    ctl.finish_move(*mm, to);
  }
  const MemCgroup& group(uint32_t id) const { return ctl.cgroups()[id]; }

  testing::MmWorld w;
  reclaim::Vmscan vmscan;
  Controller ctl;
  std::shared_ptr<mm::Mm> mm;
  uint32_t from = 0, to = 0;
};

TEST(MemcgMove, UnderV1ACgroupOpWithMoveChargeAtImmigrateMovesTheCharges) {
  MoveWorld m(Hierarchy::kV1);
  ASSERT_EQ(m.group(m.from).rss, 4);

  m.move();

  EXPECT_EQ(m.mm->memcg, m.to);
  EXPECT_EQ(m.group(m.from).rss, 0);
  EXPECT_EQ(m.group(m.to).rss, 4);
  EXPECT_EQ(m.group(m.to).usage, 4u);
  EXPECT_TRUE(m.ctl.check_invariants().empty());
}

TEST(MemcgMove, UnderV2ACgroupOpWithMoveChargeAtImmigrateMovesNoCharges) {
  MoveWorld m(Hierarchy::kV2);
  ASSERT_EQ(m.group(m.from).rss, 4);
  const uint64_t usage = m.group(m.from).usage;

  m.move();

  EXPECT_EQ(m.mm->memcg, m.to);  // the task moved
  EXPECT_EQ(m.group(m.from).rss, 4);
  EXPECT_EQ(m.group(m.from).usage, usage);
  EXPECT_EQ(m.group(m.to).rss, 0);
  EXPECT_EQ(m.group(m.to).usage, 0u);
  EXPECT_TRUE(m.ctl.check_invariants().empty());
}

TEST(MemcgMove, AV2ScenarioCannotSetMoveChargeAtImmigrate) {
  const auto lr = scenario::parse_scenario(R"(
[machine]
preset = "2s-16c"
[memcg]
hierarchy = "v2"
[[cgroups]]
path = "/b"
move_charge_at_immigrate = 3
[run]
program = "m"
process_image = "mapped"
[[programs.m]]
op = "sleep"
duration = "1ms"
)",
                                           "v2.toml", {});
  ASSERT_EQ(lr.diagnostics.size(), 1u);
  EXPECT_EQ(lr.diagnostics[0].key, "cgroups[0].move_charge_at_immigrate");
}

}  // namespace
}  // namespace mmsim::memcg
