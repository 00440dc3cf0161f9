// /proc/vmstat's refault counter by kernel version (mm/workingset.c): none
// before 3.15, workingset_refault in 3.15-5.8, split by LRU type from 5.9.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/run.h"

namespace mmsim::mm {
namespace {

using testing::run_text;

bool has_vmstat(const testing::Ran& ran, const std::string& name) {
  for (const auto& [n, v] : ran.result.vmstat) {
    if (n == name) return true;
  }
  return false;
}

// A 1 MiB memcg limit makes a 4 MiB file read twice go back to storage:
// the second pass reads every page again, each leaving a shadow entry when
// it was evicted.
testing::Ran read_twice(const std::string& version,
                        const std::vector<std::string>& overrides = {}) {
  return run_text(R"(
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "64MiB"
llc_per_socket = "8MiB"
[kernel]
version = ")" + version +
                      R"("
[[cgroups]]
path = "/small"
limit = "1MiB"
[[files]]
name = "f"
size = "4MiB"
[run]
program = "main"
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
op = "loop"
count = 2
body = [ { op = "touch", region = "m" } ]
)",
                  overrides);
}

TEST(WorkingsetRefault, From5_9ARefaultedFilePageCountsAsWorkingsetRefaultFile) {
  const auto ran = read_twice("5.9");
  EXPECT_GT(ran.vm("workingset_refault_file"), 0);
  EXPECT_EQ(ran.vm("workingset_refault_anon"), 0);
  EXPECT_FALSE(has_vmstat(ran, "workingset_refault"));
}

TEST(WorkingsetRefault, From3_15To5_8ARefaultCountsAsWorkingsetRefault) {
  const auto ran = read_twice("5.8");
  EXPECT_GT(ran.vm("workingset_refault"), 0);
  EXPECT_FALSE(has_vmstat(ran, "workingset_refault_file"));
  // The same count in 3.15 as in 5.8, once 5.8's page tables leave the
  // memcg's limit alone as 3.15's do (charged from 4.6).
  EXPECT_EQ(read_twice("3.15").vm("workingset_refault"),
            read_twice("5.8", {"memcg.kmem_pagetables=false"}).vm("workingset_refault"));
}

TEST(WorkingsetRefault, Before3_15NoRefaultIsCounted) {
  const auto ran = read_twice("3.14");
  EXPECT_FALSE(has_vmstat(ran, "workingset_refault"));
  EXPECT_FALSE(has_vmstat(ran, "workingset_refault_file"));
  EXPECT_FALSE(has_vmstat(ran, "workingset_refault_anon"));
}

}  // namespace
}  // namespace mmsim::mm
