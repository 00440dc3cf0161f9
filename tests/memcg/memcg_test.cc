// Memory cgroups end to end (checker on) and the protocol presets.
#include "memcg/memcg.h"

#include <gtest/gtest.h>

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
  return R"(
[scenario]
sample_interval = "1ms"
[machine]
preset = "2s-16c"
mem_per_node = "256MiB"
[kernel]
version = ")" + kernel + R"("
[memcg]
)" + memcg + R"(
[[cgroups]]
path = "/bench"
[[files]]
name = "data"
size = "8MiB"
[run]
program = "main"
cgroup = "/bench"
[[programs.main]]
op = "map"
region = "locked"
file = "data"
prot = "r"
flags = "shared"
[[programs.main]]
op = "mlock"
region = "locked"
[[programs.main]]
op = "map"
region = "reader"
file = "data"
prot = "r"
flags = "shared"
[[programs.main]]
op = "loop"
count = 10
body = [ { op = "touch", region = "reader" }, { op = "madvise", region = "reader", advice = "dontneed" } ]
)";
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
  auto ran = run_text(fault_drop());
  // 2048 mlock faults (each a readahead window's major fault or a minor one)
  // and 10 x 2048 in the loop.
  EXPECT_EQ(ran.vm("pgfault"), 2048 + 10 * 2048);
  EXPECT_EQ(group(ran, "/bench").pgfault, 2048 + 10 * 2048);
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

TEST(MemcgProtocols, BeginEndCostsLittleMoreThanPcgFlagsWhenNothingMoves) {
  auto flags = run_text(fault_drop("3.4", "stat_protocol = \"pcg-flags\""));
  auto brackets = run_text(fault_drop("3.4", "stat_protocol = \"begin-end\""));
  EXPECT_GE(sys_s(brackets), sys_s(flags));
  EXPECT_LT(sys_s(brackets), sys_s(flags) * 1.005);
}

TEST(MemcgProtocols, NoneTurnsMemcgOff) {
  auto ran = run_text(fault_drop("3.4", "stat_protocol = \"none\""));
  EXPECT_TRUE(ran.result.memcg.empty());
}

TEST(MemcgProtocols, KernelVersionPresetsTheProtocolAndPageCgroupSize) {
  auto at = [](const char* v) {
    auto lr = scenario::parse_scenario("[machine]\npreset = \"2s-16c\"\n[run]\nprogram = \"m\"\n"
                                       "[[programs.m]]\nop = \"sleep\"\nduration = \"1ms\"\n",
                                       "v.toml", {std::string("kernel.version=") + v});
    EXPECT_TRUE(lr.ok());
    return lr.scenario->kernel.memcg;
  };
  EXPECT_EQ(at("3.3").protocol, StatProtocol::kPcgFlags);
  EXPECT_EQ(at("3.4").protocol, StatProtocol::kBeginEnd);
  EXPECT_EQ(at("3.2").page_cgroup_bytes, 40u);
  EXPECT_EQ(at("3.3").page_cgroup_bytes, 16u);
  EXPECT_EQ(at("3.19").page_cgroup_bytes, 8u);
  EXPECT_EQ(page_cgroup_bytes(StatProtocol::kNone, 3, 4), 0u);
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
)" + limit + R"(
[run]
program = "main"
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
  EXPECT_GT(ran.vm("pgsteal_direct"), 0);
  EXPECT_EQ(ran.vm("pgscan_direct") >= ran.vm("pgsteal_direct"), true);
  EXPECT_GT(ran.vm("workingset_refault"), 0);
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

}  // namespace
}  // namespace mmsim::memcg
