// [[files]] fs = "tmpfs": a shmem file against a disk file of the same shape.
// Shmem pages are swap-backed (nr_shmem, memory.stat shmem, never nr_dirty),
// zero-filled where never written (no storage read), and a shared writable
// mapping needs no write-notify (its read-faulted PTEs are writable); a disk
// file's shared writable mapping write-faults on the first write to each
// page. Private mappings of either are COW.
#include <gtest/gtest.h>

#include <string>

#include "memcg/memcg.h"
#include "scenario/scenario.h"
#include "support/run.h"

namespace mmsim::mm {
namespace {

using testing::run_text;

// 64 KiB of file (16 pages), mapped with `flags`, read then written, in
// memcg /a. Fault-around maps 16 pages (kernel 6.1: 64 KiB): all of them,
// with the mmap base not randomised (a page below a 2 MiB boundary, with
// [vvar] and [vdso] below it, 6 pages) and a 9-page mapping first, so that
// the file is one aligned fault-around window.
std::string read_then_write(const std::string& fs, bool cached,
                            const std::string& flags = "shared") {
  return R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "64MiB"
[kernel]
version = "6.1"
randomize_va_space = 0
[[cgroups]]
path = "/a"
[[files]]
name = "f"
size = "64KiB"
fs = ")" +
         fs + "\"\ncached = " + (cached ? "true" : "false") + R"(
[run]
program = "main"
process_image = "mapped"
cgroup = "/a"
[[programs.main]]
op = "map"
region = "pad"
size = "36KiB"
[[programs.main]]
op = "map"
region = "m"
file = "f"
prot = "rw"
flags = ")" +
         flags + R"("
[[programs.main]]
op = "touch"
region = "m"
[[programs.main]]
op = "touch"
region = "m"
mode = "write"
)";
}

const memcg::MemCgroup& memcg_of(const testing::Ran& ran, const std::string& path) {
  for (const auto& g : ran.result.memcg)
    if (g.path == path) return g;
  ADD_FAILURE() << "no memcg " << path;
  static const memcg::MemCgroup none;
  return none;
}

TEST(Tmpfs, ASharedWritableMappingAfterFaultAroundTakesNoWriteFaults) {
  auto tmpfs = run_text(read_then_write("tmpfs", true));
  // One read fault maps all 16 pages writable; the writes need no kernel.
  EXPECT_EQ(tmpfs.vm("pgfault"), 1);
  EXPECT_EQ(tmpfs.result.tasks[0].min_flt, 1u);
}

TEST(Tmpfs, ADiskFilesSharedWritableMappingWriteFaultsOncePerPageAfterFaultAround) {
  auto disk = run_text(read_then_write("disk", true));
  // One read fault maps 16 read-only PTEs; each first write is a
  // write-notify fault (page_mkwrite, wp_page_shared).
  EXPECT_EQ(disk.vm("pgfault"), 17);
  EXPECT_EQ(disk.vm("nr_dirty"), 16);
}

TEST(Tmpfs, APrivateMappingOfEitherIsCopyOnWrite) {
  for (const char* fs : {"tmpfs", "disk"}) {
    SCOPED_TRACE(fs);
    auto ran = run_text(read_then_write(fs, true, "private"));
    EXPECT_EQ(ran.vm("pgfault"), 17);  // a read, then a COW fault per page
    // The copies (the file was cached), and the process's page tables: its
    // PGD (2 pages), PUD, PMD and PTE tables.
    EXPECT_EQ(ran.vm("pgalloc_normal"), 16 + 5);
    EXPECT_EQ(ran.vm("nr_dirty"), 0);  // the file's pages are not written
  }
}

TEST(Tmpfs, PagesOfAnUncachedTmpfsFileAreShmemZeroFilledAndChargedToTheFaultingTask) {
  auto ran = run_text(read_then_write("tmpfs", false));
  EXPECT_EQ(ran.vm("nr_shmem"), 16);
  EXPECT_EQ(ran.vm("nr_file_pages"), 16);
  EXPECT_EQ(ran.vm("pgmajfault"), 0);  // nothing read from storage
  EXPECT_EQ(ran.vm("pgpgin"), 0);
  EXPECT_EQ(ran.vm("nr_dirty"), 0);  // shmem: noop_dirty_folio
  const memcg::MemCgroup& a = memcg_of(ran, "/a");
  EXPECT_EQ(a.shmem, 16);
  EXPECT_EQ(a.cache, 16);  // v1 cache, v2 file: shmem included
  EXPECT_EQ(a.rss, 0);
}

TEST(Tmpfs, PagesOfAnUncachedDiskFileAreReadFromStorageAndAreNotShmem) {
  auto ran = run_text(read_then_write("disk", false));
  EXPECT_EQ(ran.vm("nr_shmem"), 0);
  EXPECT_EQ(ran.vm("nr_file_pages"), 16);
  EXPECT_GT(ran.vm("pgmajfault"), 0);
  EXPECT_EQ(ran.vm("nr_dirty"), 16);
  const memcg::MemCgroup& a = memcg_of(ran, "/a");
  EXPECT_EQ(a.shmem, 0);
  EXPECT_EQ(a.cache, 16);
}

TEST(Tmpfs, ACachedTmpfsFileIsChargedToItsCreatorOutsideTheScenariosCgroups) {
  auto ran = run_text(read_then_write("tmpfs", true));
  EXPECT_EQ(memcg_of(ran, "/").shmem, 16);
  EXPECT_EQ(memcg_of(ran, "/a").shmem, 0);
  EXPECT_EQ(ran.vm("nr_shmem"), 0);  // there before the run: no change over it
}

TEST(Tmpfs, ReclaimNeverEvictsShmemPagesWithoutSwap) {
  // 256 KiB of tmpfs pages in a memcg of 128 KiB: the charges fail (OOM)
  // instead of dropping shmem pages, which only swap could free.
  auto ran = run_text(R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "64MiB"
[kernel]
version = "6.1"
[[cgroups]]
path = "/a"
limit = "128KiB"
[[files]]
name = "f"
size = "256KiB"
fs = "tmpfs"
[run]
program = "main"
process_image = "mapped"
cgroup = "/a"
[[programs.main]]
op = "map"
region = "m"
file = "f"
flags = "shared"
[[programs.main]]
op = "touch"
region = "m"
mode = "write"
)");
  EXPECT_EQ(ran.vm("pgsteal_direct"), 0);
  EXPECT_GT(memcg_of(ran, "/a").shmem, 0);
  EXPECT_LE(memcg_of(ran, "/a").shmem, 32);
  ASSERT_FALSE(ran.result.errors.empty());
  EXPECT_NE(ran.result.errors[0].find("out of memory"), std::string::npos);
}

TEST(TmpfsLoader, TheFsKeyTakesDiskOrTmpfsAndDefaultsToDisk) {
  const std::string base =
      "[machine]\npreset = \"2s-16c\"\n[run]\nprogram = \"m\"\n[[programs.m]]\nop = \"sleep\"\n"
      "duration = \"1ms\"\n[[files]]\nname = \"f\"\nsize = 4096\n";
  auto plain = scenario::parse_scenario(base, "f.toml", {});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain.scenario->workload.files[0].tmpfs);
  auto tmpfs = scenario::parse_scenario(base + "fs = \"tmpfs\"\n", "f.toml", {});
  ASSERT_TRUE(tmpfs.ok());
  EXPECT_TRUE(tmpfs.scenario->workload.files[0].tmpfs);
  auto disk = scenario::parse_scenario(base, "f.toml", {"files.0.fs=disk"});
  ASSERT_TRUE(disk.ok());
  EXPECT_FALSE(disk.scenario->workload.files[0].tmpfs);
  auto bad = scenario::parse_scenario(base + "fs = \"ext4\"\n", "f.toml", {});
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_EQ(bad.diagnostics[0].str(),
            "f.toml:11:6: error: files[0].fs: unknown value \"ext4\" (known: disk, tmpfs)");
  auto typed = scenario::parse_scenario(base + "fs = 1\n", "f.toml", {});
  ASSERT_EQ(typed.diagnostics.size(), 1u);
  EXPECT_EQ(typed.diagnostics[0].key, "files[0].fs");
}

}  // namespace
}  // namespace mmsim::mm
