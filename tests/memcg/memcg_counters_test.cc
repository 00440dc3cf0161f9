// memcg counters by kernel version: the charge of a migrated page, failcnt
// at the limit, and how limit reclaim shows in /proc/vmstat (checker on).
#include <gtest/gtest.h>

#include <string>

#include "memcg/config.h"
#include "memcg/memcg.h"
#include "scenario/scenario.h"
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

bool has_vmstat(const testing::Ran& ran, const std::string& name) {
  for (const auto& [n, v] : ran.result.vmstat) {
    if (n == name) return true;
  }
  return false;
}

// A task in /t writes 4 MiB on node 0, then, pinned to node 1, reads it for
// 2 s: NUMA balancing migrates its pages to node 1.
std::string migrate_scenario(const std::string& version) {
  return R"(
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "64MiB"
llc_per_socket = "8MiB"
[kernel]
version = ")" +
         version + R"("
numa_balancing = 1
[[cgroups]]
path = "/t"
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "cgroup"
path = "/t"
[[programs.main]]
op = "pin"
nodes = [0]
[[programs.main]]
op = "map"
region = "data"
size = "4MiB"
[[programs.main]]
op = "touch"
region = "data"
mode = "write"
[[programs.main]]
op = "pin"
nodes = [1]
[[programs.main]]
op = "loop"
duration = "2s"
body = [ { op = "sweep", region = "data", elem_size = 8 } ]
)";
}

TEST(MemcgMigrateCharge, UnderRechargeEveryMigratedPageCountsAPageInAndAPageOut) {
  const auto ran = run_text(migrate_scenario("6.1"));
  const int64_t migrated = ran.vm("numa_pages_migrated");
  ASSERT_GT(migrated, 0);
  const auto& g = group(ran, "/t");
  // The first touch, then each new folio; each old folio freed, then every
  // page at exit.
  EXPECT_EQ(g.pgpgin, 1024 + migrated);
  EXPECT_EQ(g.pgpgout, migrated + 1024);
}

TEST(MemcgMigrateCharge, UnderTransferAMigratedPageMovesNoCounter) {
  const auto ran = run_text(migrate_scenario("6.12"));
  ASSERT_GT(ran.vm("numa_pages_migrated"), 0);
  const auto& g = group(ran, "/t");
  EXPECT_EQ(g.pgpgin, 1024);
  EXPECT_EQ(g.pgpgout, 1024);  // at exit only
}

TEST(MemcgMigrateCharge, RechargesFrom4_5To6_6AndBefore3_17) {
  auto at = [](const char* v) {
    scenario::KernelConfig k;
    k.apply_version(*KernelVersion::parse(v));
    return k.memcg.migrate_charge;
  };
  EXPECT_EQ(at("3.16"), MigrateCharge::kRecharge);
  EXPECT_EQ(at("3.17"), MigrateCharge::kTransfer);
  EXPECT_EQ(at("4.4"), MigrateCharge::kTransfer);
  EXPECT_EQ(at("4.5"), MigrateCharge::kRecharge);
  EXPECT_EQ(at("6.6"), MigrateCharge::kRecharge);
  EXPECT_EQ(at("6.7"), MigrateCharge::kTransfer);
}

// A task in /small (limit 4 MiB = 1024 pages, 16 charge batches) reads a
// 16 MiB file once through a shared mapping.
std::string limit_scenario(const std::string& version) {
  return R"(
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "64MiB"
llc_per_socket = "8MiB"
[kernel]
version = ")" +
         version + R"("
numa_balancing = 0
[[cgroups]]
path = "/small"
limit = "4MiB"
[[files]]
name = "f"
size = "16MiB"
[run]
program = "main"
process_image = "mapped"
[[programs.main]]
op = "cgroup"
path = "/small"
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

TEST(MemcgFailcnt, AtTheLimitEveryPageChargedFailsItsBatchAndEachReclaimItsSinglePage) {
  // 4096 pages charged, the last 4096 - 1024 at the limit: each fails the
  // batch attempt (+1); a page that then fails alone too (+1) reclaims,
  // which frees at least one page, so there are fewer such failures than
  // pages reclaimed. (A reclaim that frees a batch's worth or more lets the
  // next charge refill its stock, whose pages count nothing: rare at a limit
  // of 16 batches, not at one of 4.)
  const auto ran = run_text(limit_scenario("6.1"));
  const auto& g = group(ran, "/small");
  const uint64_t at_limit = 4096 - 1024;
  EXPECT_GE(g.failcnt, at_limit);
  EXPECT_LE(g.failcnt, at_limit + static_cast<uint64_t>(g.pgpgout));
  // What was charged and not reclaimed is still cached, within the limit.
  EXPECT_EQ(g.pgpgin - g.pgpgout, g.cache);
  EXPECT_LE(g.cache, 1024);
}

TEST(MemcgFailcnt, TheChargeBatchIs32Until6_0And64From6_1) {
  scenario::KernelConfig k;
  k.apply_version(*KernelVersion::parse("6.0"));
  EXPECT_EQ(k.memcg.charge_batch, 32);
  k.apply_version(*KernelVersion::parse("6.1"));
  EXPECT_EQ(k.memcg.charge_batch, 64);
}

TEST(VmstatReclaim, LimitReclaimCountsInPgscanFileButNotInPgscanDirect) {
  const auto ran = run_text(limit_scenario("6.1"));
  EXPECT_EQ(ran.vm("pgscan_direct"), 0);
  EXPECT_EQ(ran.vm("pgsteal_direct"), 0);
  EXPECT_GE(ran.vm("pgsteal_file"), 4096 - 1024);
  EXPECT_EQ(ran.vm("pgsteal_file"), group(ran, "/small").pgpgout);
  EXPECT_GE(ran.vm("pgscan_file"), ran.vm("pgsteal_file"));
  EXPECT_EQ(ran.vm("pgscan_anon"), 0);
  EXPECT_EQ(ran.vm("pgsteal_anon"), 0);
}

TEST(VmstatReclaim, KernelsBefore5_8HaveNoPerTypeReclaimCounters) {
  const auto ran = run_text(limit_scenario("5.7"));
  EXPECT_FALSE(has_vmstat(ran, "pgscan_file"));
  EXPECT_FALSE(has_vmstat(ran, "pgsteal_file"));
  EXPECT_FALSE(has_vmstat(ran, "pgscan_anon"));
  EXPECT_EQ(ran.vm("pgsteal_direct"), 0);
  EXPECT_GE(group(ran, "/small").pgpgout, 4096 - 1024);
}

}  // namespace
}  // namespace mmsim::memcg
