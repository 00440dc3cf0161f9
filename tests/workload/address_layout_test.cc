// Where a process's mappings lie: x86-64's mmap base, the vDSO, and the
// scenario's first mapping below them, as guests' kprobe traces of
// mmap_region and map_vdso showed them (6.1 and 6.12, randomised and not).
// Seen through the simulated scan trace, which names each VMA it marks.
#include <gtest/gtest.h>

#include <cstdint>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "support/run.h"

namespace mmsim::workload {
namespace {

using Range = std::pair<uint64_t, uint64_t>;

// A 32 MiB buffer written on node 0, read from node 1 for 3 s: every VMA of
// the process gets scanned. The VMAs the scan visited.
std::set<Range> scanned_vmas(const std::string& version, int randomize, uint64_t seed = 1) {
  const std::string toml = R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "256MiB"
[kernel]
version = ")" + version + R"("
numa_balancing = 1
randomize_va_space = )" + std::to_string(randomize) +
                           R"(
[run]
program = "main"
[[programs.main]]
op = "map"
region = "buf"
size = "32MiB"
[[programs.main]]
op = "touch"
region = "buf"
mode = "write"
[[programs.main]]
op = "pin"
nodes = [1]
[[programs.main]]
op = "loop"
duration = "3s"
body = [{ op = "sweep", region = "buf" }]
)";
  std::string trace;
  testing::run_text(toml, {"scenario.seed=" + std::to_string(seed)}, true, &trace);
  std::set<Range> vmas;
  const std::regex vma(R"(change_prot_numa: vm_start=(0x[0-9a-f]+) vm_end=(0x[0-9a-f]+))");
  std::istringstream in(trace);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, vma))
      vmas.emplace(std::stoull(m[1], nullptr, 16), std::stoull(m[2], nullptr, 16));
  }
  return vmas;
}

constexpr uint64_t kMmapBase = 0x7ffff7fff000;  // TASK_SIZE less the 128 MiB gap
constexpr uint64_t kBuffer = 32u << 20;

TEST(AddressLayout, WithoutRandomisationTheVdsoIsTheFirstMappingBelowTheMmapBase) {
  for (const char* version : {"6.1", "6.12"}) {
    const std::set<Range> vmas = scanned_vmas(version, 0);
    // [vdso]'s 2 pages at the base, [vvar]'s 4 below them (not scanned).
    EXPECT_TRUE(vmas.contains({kMmapBase - 0x2000, kMmapBase})) << version;
    // 6.1 puts the buffer edge to edge below [vvar]; 6.12 aligns it down
    // to 2 MiB (its length is a multiple of 2 MiB).
    const uint64_t top = kMmapBase - 0x6000;
    const uint64_t end = std::string(version) == "6.1" ? top : top & ~uint64_t{0x1fffff};
    EXPECT_TRUE(vmas.contains({end - kBuffer, end})) << version;
  }
}

TEST(AddressLayout, Before6_9ARandomisedVdsoLiesBesideTheStackNotBelowTheMmapBase) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const std::set<Range> vmas = scanned_vmas("6.1", 2, seed);
    // The buffer is the first mapping below a base randomised within 2 MiB.
    bool first = false;
    for (const auto& [start, end] : vmas)
      if (end - start == kBuffer && end <= kMmapBase && end > kMmapBase - 0x200000) first = true;
    EXPECT_TRUE(first) << seed;
    for (const auto& [start, end] : vmas)
      EXPECT_FALSE(end - start == 0x2000 && end > kMmapBase - 0x200000 && end <= kMmapBase)
          << "a [vdso] below the mmap base, seed " << seed;
  }
}

TEST(AddressLayout, From6_9ARandomisedVdsoIsStillTheMmapAreasFirstMapping) {
  const std::set<Range> vmas = scanned_vmas("6.12", 2);
  bool vdso = false;
  for (const auto& [start, end] : vmas)
    if (end - start == 0x2000 && end > kMmapBase - 0x200000 && end <= kMmapBase) vdso = true;
  EXPECT_TRUE(vdso);
}

}  // namespace
}  // namespace mmsim::workload
