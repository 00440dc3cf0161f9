// mmsim validate's pieces that need no guest: the initramfs format, the
// kernel cache, the QEMU machine, counters flattened and judged, running a
// host command. (The guest itself is exercised by .ci/run's short
// validation and by `make validate`.)
#include "validate/validate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "native/host.h"
#include "topo/topology.h"
#include "validate/command.h"
#include "validate/guest.h"
#include "validate/initramfs.h"
#include "validate/kernels.h"

namespace mmsim::validate {
namespace {

namespace fs = std::filesystem;

struct CpioEntry {
  std::string name;
  uint32_t mode;
  std::string data;
};

// A reader of the newc format, independent of the writer's code.
std::vector<CpioEntry> read_newc(const std::string& a) {
  std::vector<CpioEntry> out;
  size_t p = 0;
  auto field = [&](int i) {
    return static_cast<uint32_t>(std::stoul(a.substr(p + 6 + 8 * i, 8), nullptr, 16));
  };
  while (p + 110 <= a.size()) {
    EXPECT_EQ(a.substr(p, 6), "070701");
    const uint32_t mode = field(1), size = field(6), namesize = field(11);
    std::string name = a.substr(p + 110, namesize - 1);
    size_t data = (p + 110 + namesize + 3) / 4 * 4;
    if (name == "TRAILER!!!") break;
    out.push_back({name, mode, a.substr(data, size)});
    p = (data + size + 3) / 4 * 4;
  }
  return out;
}

TEST(ScanTrace, AFlushIsTheTimeOfAScanCallThatChangedOneToSixteenPtes) {
  // As the guest's ftrace prints the kprobes, two tasks interleaved.
  const std::string trace =
      "# tracer: nop\n"
      "  thread-165  [004] .....  9.788602: task_numa_work: (task_numa_work+0x0/0x3a0) "
      "numa_scan_seq=0 numa_scan_period=1000\n"
      "  thread-165  [004] .....  9.788700: change_prot_numa: (change_prot_numa+0x0/0xb0) "
      "vm_start=0x55e000 vm_end=0x564000 start=0x55e000 end=0x564000\n"
      "  thread-166  [005] .....  9.789000: change_prot_numa: (change_prot_numa+0x0/0xb0) "
      "vm_start=0x55e000 vm_end=0x564000 start=0x55e000 end=0x564000\n"
      "  thread-165  [004] .....  9.800700: change_prot_numa_ret: (task_numa_work+0x227/0x3a0 <- "
      "change_prot_numa) updated=3\n"
      "  thread-166  [005] .....  9.789010: change_prot_numa_ret: (task_numa_work+0x227/0x3a0 <- "
      "change_prot_numa) updated=0\n"
      "  thread-165  [004] .....  9.800800: change_prot_numa: (change_prot_numa+0x0/0xb0) "
      "vm_start=0x7f0000000000 vm_end=0x7f0010000000 start=0x7f0000000000 end=0x7f000d000000\n"
      "  thread-165  [004] .....  9.900800: change_prot_numa_ret: (task_numa_work+0x227/0x3a0 <- "
      "change_prot_numa) updated=51383\n";
  // Only thread-165's first call: the other changed nothing (no flush), the
  // last too much to be a flush alone.
  const std::vector<double> f = scan_flush_ns(trace);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0], 12e6, 1);
}

TEST(ScanTrace,
     BaseMigrationStepsAreTimedPerTaskWithoutTheirFlushesThpFailedOrSwitchedOnesLeftOut) {
  auto line = [](const char* task, const char* at, const char* event) {
    return fmt::format("  {}  [002] .....  {}: {}\n", task, at, event);
  };
  const std::string ok =
      "mm_migrate_pages: nr_succeeded=1 nr_failed=0 nr_thp_succeeded=0 nr_thp_failed=0 "
      "nr_thp_split=0 mode=MIGRATE_ASYNC reason=numa_misplaced";
  const std::string thp =
      "mm_migrate_pages: nr_succeeded=512 nr_failed=0 nr_thp_succeeded=1 nr_thp_failed=0 "
      "nr_thp_split=0 nr_split=0 mode=MIGRATE_ASYNC reason=numa_misplaced";
  const std::string trace =
      "# tracer: nop\n" +
      line("reader-125", "4.000000", "migrate_misplaced: (migrate_misplaced_page+0x0/0x7d0)") +
      line("reader-126", "4.000002", "migrate_misplaced: (migrate_misplaced_page+0x0/0x7d0)") +
      line("reader-125", "4.000010", "migrate_unmap: (try_to_migrate+0x0/0x110)") +
      line("reader-126", "4.000011", "migrate_unmap: (try_to_migrate+0x0/0x110)") +
      line("reader-125", "4.000014", "migrate_copy: (folio_copy+0x0/0x80)") +
      line("reader-125", "4.000017",
           "migrate_copy_ret: (migrate_folio_extra+0x3c/0x70 <- folio_copy)") +
      line("reader-126", "4.000020", "migrate_copy: (folio_copy+0x0/0x80)") +
      line("reader-126", "4.000520",
           "migrate_copy_ret: (migrate_folio_extra+0x3c/0x70 <- folio_copy)") +
      line("reader-125", "4.000040", ok.c_str()) + line("reader-126", "4.000900", thp.c_str()) +
      // Isolated, then given up: no unmap; the next one's start replaces it.
      line("reader-125", "4.001000", "migrate_misplaced: (migrate_misplaced_page+0x0/0x7d0)") +
      line("reader-125", "4.002000", "migrate_misplaced: (migrate_misplaced_page+0x0/0x7d0)") +
      line("reader-125", "4.002005", "migrate_unmap: (try_to_migrate+0x0/0x110)") +
      line("reader-125", "4.002006", "migrate_copy: (folio_copy+0x0/0x80)") +
      line("reader-125", "4.002008",
           "migrate_copy_ret: (migrate_folio_extra+0x3c/0x70 <- folio_copy)") +
      line("reader-125", "4.002020", ok.c_str()) +
      // Switched out meanwhile: left out. A TLB shootdown inside is taken out.
      line("reader-125", "4.003000", "migrate_misplaced: (migrate_misplaced_page+0x0/0x7d0)") +
      line("reader-125", "4.003001",
           "sched_switch: prev_comm=reader prev_pid=125 prev_prio=120 prev_state=R+ ==> "
           "next_comm=kworker/2:1 next_pid=41 next_prio=120") +
      line("reader-125", "4.003900", "migrate_unmap: (try_to_migrate+0x0/0x110)") +
      line("reader-125", "4.003901", "migrate_copy: (folio_copy+0x0/0x80)") +
      line("reader-125", "4.003903",
           "migrate_copy_ret: (migrate_folio_extra+0x3c/0x70 <- folio_copy)") +
      line("reader-125", "4.003910", ok.c_str()) +
      line("reader-126", "4.004000", "migrate_misplaced: (migrate_misplaced_page+0x0/0x7d0)") +
      line("reader-126", "4.004010", "migrate_unmap: (try_to_migrate+0x0/0x110)") +
      line("reader-126", "4.004011", "tlb_flush: (native_flush_tlb_multi+0x0/0x100)") +
      line("reader-126", "4.004019",
           "tlb_flush_ret: (flush_tlb_mm_range+0xe1/0x140 <- native_flush_tlb_multi)") +
      line("reader-126", "4.004021", "migrate_copy: (folio_copy+0x0/0x80)") +
      line("reader-126", "4.004023",
           "migrate_copy_ret: (migrate_folio_extra+0x3c/0x70 <- folio_copy)") +
      line("reader-126", "4.004030", ok.c_str());

  const MigrationTimes m = misplaced_migration_ns(trace);

  ASSERT_EQ(m.moved.size(), 3u);
  EXPECT_NEAR(m.isolate[0], 10e3, 1);
  EXPECT_NEAR(m.moved[0], 30e3, 1);
  EXPECT_NEAR(m.copy[0], 3e3, 1);
  EXPECT_NEAR(m.isolate[1], 5e3, 1);
  EXPECT_NEAR(m.moved[1], 15e3, 1);
  EXPECT_NEAR(m.copy[1], 2e3, 1);
  EXPECT_NEAR(m.isolate[2], 10e3, 1);
  EXPECT_NEAR(m.moved[2], 12e3, 1);  // 20 us less the flush's 8
}

TEST(ScanTrace, AHugePageClearIsTimedFromItsCallToItsReturnUnlessItsTaskWasSwitchedOut) {
  auto line = [](const char* task, const char* at, const char* event) {
    return fmt::format("          {}     [002] .....     {}: {}\n", task, at, event);
  };
  const std::string trace =
      line("writer-163", "5.000000", "zero_huge: (clear_huge_page+0x0/0x1b0)") +
      line("writer-164", "5.000100", "zero_huge: (clear_huge_page+0x0/0x1b0)") +
      line("writer-163", "5.006800",
           "zero_huge_ret: (__do_huge_pmd_anonymous_page+0x9f/0x5a0 <- clear_huge_page)") +
      line("writer-164", "5.000200",
           "sched_switch: prev_comm=writer prev_pid=164 prev_prio=120 prev_state=R+ ==> "
           "next_comm=kworker/2:1 next_pid=41 next_prio=120") +
      line("writer-164", "5.009000",
           "zero_huge_ret: (__do_huge_pmd_anonymous_page+0x9f/0x5a0 <- clear_huge_page)") +
      line("writer-165", "5.010000",
           "zero_huge_ret: (__do_huge_pmd_anonymous_page+0x9f/0x5a0 <- clear_huge_page)");

  const std::vector<double> z = huge_zero_ns(trace);

  ASSERT_EQ(z.size(), 1u);  // 164's was switched out, 165's return has no call
  EXPECT_NEAR(z[0], 6.8e6, 1);
}

TEST(GuestNoise, TheProbesReportsAreTheBlocksBetweenTheirMarkers) {
  const std::string data =
      "MMSIM-RUN 1 0\n{}\nMMSIM-END 1\nMMSIM-NOISE 0\n{\"a\":1}\r\nMMSIM-NOISE-END 0\n"
      "MMSIM-NOISE 1\n{\"a\":\n2}\nMMSIM-NOISE-END 1\nMMSIM-NOISE-ALONE 0\n{\"b\":3}\n"
      "MMSIM-NOISE-ALONE-END 0\nMMSIM-DONE\n";

  const std::vector<std::string> r = parse_noise_reports(data);
  const std::vector<std::string> alone = parse_noise_reports(data, "MMSIM-NOISE-ALONE");

  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], "{\"a\":1}\n");
  EXPECT_EQ(r[1], "{\"a\":\n2}\n");
  EXPECT_EQ(alone, std::vector<std::string>{"{\"b\":3}\n"});
}

TEST(GuestNoise, ThePeakOfBusyTasksCountsOnlyTasksAliveTogether) {
  // Two overlap, a third starts as the first ends.
  EXPECT_EQ(peak_busy_tasks({{0.0, 1.0}, {0.5, 2.0}, {1.0, 3.0}}), 2);
  EXPECT_EQ(peak_busy_tasks({}), 0);
}

nlohmann::ordered_json probe_report(double rate, double irq_ns, double wake_ns, double clone_cv,
                                    double forks) {
  return nlohmann::ordered_json::parse(fmt::format(
      R"({{"fwq":{{"quanta":100000,"plain_cv":0.07,"interruptions":500,
           "interruptions_per_s":{},"interruption_mean_ns":{},"interruption_cv":4.5}},
          "wakeup":{{"samples":1000,"excess_mean_ns":{},"excess_cv":6}},
          "clone":{{"samples":300,"excess_mean_ns":400000,"excess_cv":{}}},
          "fork":{{"samples":{},"excess_mean_ns":3000000,"excess_cv":1.2}}}})",
      rate, irq_ns, wake_ns, clone_cv, forks));
}

// Whether validate's sets for the guest's noise include `set`.
bool sets_have(const GuestNoise& g, const std::string& set) {
  return std::find(g.sets.begin(), g.sets.end(), set) != g.sets.end();
}

TEST(GuestNoise, EachKeyIsTheMedianOverTheProbesAsSetsOfTheSimulationsNoise) {
  const GuestNoise g = guest_noise(
      {probe_report(1000, 400000, 80000, 4, 50), probe_report(1400, 300000, 120000, 5, 50),
       probe_report(900, 500000, 100000, 3, 50)},
      {});

  const std::vector<std::string> want = {
      "noise.irq_rate=1667",           "noise.irq_duration=400000ns",
      "noise.irq_duration_cv=4.5",     "noise.cost_jitter_cv=0.07",
      "noise.wakeup_latency=100000ns", "noise.wakeup_latency_cv=6",
      "noise.clone_latency=400000ns",  "noise.clone_latency_cv=4",
      "noise.fork_latency=3000000ns",  "noise.fork_latency_cv=1.2"};
  EXPECT_EQ(g.sets, want);
  EXPECT_NE(g.note.find("3 busy vCPUs"), std::string::npos) << g.note;
}

// The probe's 876 interruptions a second of 0.936 ms take 82 % of its wall
// time: in a second of work there are 876 / 0.18 of them (4,865).
TEST(GuestNoise, TheInterruptionRateIsPerSecondOfWorkNotOfWallTime) {
  const GuestNoise g = guest_noise({probe_report(876, 936000, 80000, 4, 50)}, {});

  EXPECT_NE(std::find(g.sets.begin(), g.sets.end(), "noise.irq_rate=4865"), g.sets.end())
      << fmt::format("{}", fmt::join(g.sets, " "));
  EXPECT_NE(g.note.find("876/s of 0.936 ms mean (cv 4.5), 82% of the time, so 4865/s of work"),
            std::string::npos)
      << g.note;
}

TEST(GuestNoise, AKeyTheUserSetOrNoProbeMeasuredIsLeftAlone) {
  const GuestNoise g = guest_noise({probe_report(1000, 400000, 80000, 4, 0)}, {"noise.irq_rate=5"});

  for (const auto& s : g.sets) {
    EXPECT_FALSE(s.starts_with("noise.irq_rate=")) << s;
    EXPECT_FALSE(s.starts_with("noise.fork_latency")) << s;  // no fork was timed
  }
  EXPECT_EQ(g.sets.size(), 7u);
}

TEST(GuestNoise, AValueOutsideItsKeysRangeIsClampedAndSaid) {
  const GuestNoise g = guest_noise({probe_report(1000, 400000, 80000, 14, 50)}, {});

  EXPECT_NE(std::find(g.sets.begin(), g.sets.end(), "noise.clone_latency_cv=10"), g.sets.end());
  EXPECT_NE(g.note.find("clone_latency_cv 14 to 10"), std::string::npos) << g.note;
}

TEST(GuestNoise, TheRatePerSecondOfWorkIsClampedToItsKeysRangeToo) {
  // 6 million a second of 1 us: all of the time, so the least share of work
  // (5 %) leaves 19 s of interruptions in a second of work, 19 million of
  // them, above the key's 10 million.
  const GuestNoise g = guest_noise({probe_report(6e6, 1000, 80000, 4, 50)}, {});

  EXPECT_NE(std::find(g.sets.begin(), g.sets.end(), "noise.irq_rate=1e+07"), g.sets.end())
      << fmt::format("{}", fmt::join(g.sets, " "));
  EXPECT_NE(g.note.find("irq_rate per second of work 1.9e+07 to 1e+07"), std::string::npos)
      << g.note;
  EXPECT_NE(g.note.find(", so 10000000/s of work"), std::string::npos) << g.note;  // as set
}

// A probe's "user" section: the guest's pace of a memset and the loops.
nlohmann::ordered_json probe_with_pace(double memset_line, double sweep, double samples) {
  nlohmann::ordered_json j = probe_report(1000, 400000, 80000, 4, 50);
  j["user"] = {{"samples", samples},
               {"memset_line_ns", memset_line},
               {"sweep_elem_ns", sweep},
               {"sweep_elem_O0_ns", 9.5},
               {"memset_ring_page_ns", 2100}};
  return j;
}

TEST(GuestUserPace, EachCostIsTheMedianOverTheProbesAsSetsOfTheSimulationsCosts) {
  const GuestNoise g = guest_user_pace(
      {probe_with_pace(31, 1.8, 300), probe_with_pace(29, 2.2, 300), probe_with_pace(40, 1.9, 300)},
      {});

  const std::vector<std::string> want = {"costs.memset_line_ns=31", "costs.sweep_elem_ns=1.9",
                                         "costs.sweep_elem_O0_ns=9.5"};
  EXPECT_EQ(g.sets, want);
  EXPECT_NE(g.note.find("a page took a memset 2.1 us"), std::string::npos) << g.note;
}

TEST(GuestUserPace, ACostTheUserSetOrAProbeWithoutSamplesIsLeftAlone) {
  const GuestNoise user = guest_user_pace({probe_with_pace(31, 1.8, 300)},
                                          {"costs.memset_line_ns=2", "costs.sweep_elem_ns=1"});
  const GuestNoise none = guest_user_pace({probe_with_pace(31, 1.8, 0)}, {});
  const GuestNoise older = guest_user_pace({probe_report(1000, 400000, 80000, 4, 50)}, {});

  EXPECT_EQ(user.sets, std::vector<std::string>{"costs.sweep_elem_O0_ns=9.5"});
  EXPECT_TRUE(none.sets.empty());
  EXPECT_TRUE(older.sets.empty());  // a probe without the section
  EXPECT_TRUE(older.note.empty());
}

TEST(GuestNoise, BusyVcpusBeyondTheHostsCpusShareThemRoundRobinAndTheInterruptionsKeepTheRest) {
  // 4 busy vCPUs on 2 host CPUs, each losing 2,892 interruptions a second of
  // 0.177 ms: 51.19 % of its time. The host's share is 50 %, round robin: a
  // turn off is one slice, the probes' 0.177 ms (probes without buckets):
  // per second of work 1 s of turns, and the rest
  // is 1 / 0.48812 - 2 = 4.869 % of interruptions of 0.177 ms, 275.1 of
  // them.
  const std::vector<nlohmann::ordered_json> probes(4, probe_report(2892, 177000, 80000, 4, 50));
  const GuestNoise g = guest_noise(probes, {}, 2);

  EXPECT_TRUE(sets_have(g, "noise.host_cpus=2"));
  EXPECT_TRUE(sets_have(g, "noise.host_slice=177000ns"))
      << fmt::format("{}", fmt::join(g.sets, " "));
  EXPECT_TRUE(sets_have(g, "noise.host_slice_cv=4.5"));
  EXPECT_TRUE(sets_have(g, "noise.irq_rate=275.1"));
  EXPECT_TRUE(sets_have(g, "noise.irq_duration=177000ns"));
  EXPECT_NE(g.note.find("the host's 2 CPUs give 4 busy vCPUs 50% of their time (noise.host_cpus), "
                        "round robin in slices of 0.177 ms (noise.host_slice, cv 4.5: turns off "
                        "of 0.177 ms, cv 4.5, their mean interruption), which leaves 275/s of "
                        "work of the interruptions"),
            std::string::npos)
      << g.note;
}

TEST(GuestNoise, AFluidShareTheUserAsksForStretchesTheInterruptionsToo) {
  // As ...RoundRobin..., with noise.host_slice=0: per second of work the rest is
  // 0.5 / 0.48812 - 1 = 2.435 % of interruptions of 0.177 ms, 137.6 of them.
  const std::vector<nlohmann::ordered_json> probes(4, probe_report(2892, 177000, 80000, 4, 50));
  const GuestNoise g = guest_noise(probes, {"noise.host_slice=0"}, 2);

  EXPECT_TRUE(sets_have(g, "noise.host_cpus=2"));
  EXPECT_TRUE(sets_have(g, "noise.irq_rate=137.6")) << fmt::format("{}", fmt::join(g.sets, " "));
  EXPECT_TRUE(sets_have(g, "noise.irq_duration=177000ns"));
  EXPECT_NE(g.note.find("the host's 2 CPUs give 4 busy vCPUs 50% of their time (noise.host_cpus), "
                        "which leaves 138/s of work of the interruptions"),
            std::string::npos)
      << g.note;
}

TEST(GuestNoise, ProbesThatLostLessThanTheHostsShareKeepNoInterruptions) {
  // 8 busy vCPUs on 2 host CPUs can run 25 % of the time; these lost 51 %.
  const std::vector<nlohmann::ordered_json> probes(8, probe_report(2892, 177000, 80000, 4, 50));
  const GuestNoise more = guest_noise(probes, {}, 2);
  // 2 lost 10 %: less than 8 on 2 at most could have, and all of it stays.
  const std::vector<nlohmann::ordered_json> quiet(8, probe_report(1000, 100000, 80000, 4, 50));
  const GuestNoise less = guest_noise(quiet, {}, 2);

  EXPECT_NE(std::find(more.sets.begin(), more.sets.end(), "noise.irq_rate=0"), more.sets.end())
      << fmt::format("{}", fmt::join(more.sets, " "));
  EXPECT_NE(std::find(less.sets.begin(), less.sets.end(), "noise.irq_rate=0"), less.sets.end());
  EXPECT_NE(less.note.find("no more than the 90% the probes had: no interruptions are left"),
            std::string::npos)
      << less.note;
}

TEST(GuestNoise, NoSharingWithAsManyHostCpusAsBusyVcpusOrWhenTheUserSetsIt) {
  const std::vector<nlohmann::ordered_json> probes(2, probe_report(2892, 177000, 80000, 4, 50));
  const GuestNoise as_many = guest_noise(probes, {}, 2);
  for (const GuestNoise& g :
       {as_many, guest_noise(probes, {}, 0),
        guest_noise({probes[0], probes[0], probes[0]}, {"noise.host_cpus=0"}, 2)}) {
    // All the interruptions stay, per second of work: 2,892 over 48.8 %.
    EXPECT_NE(std::find(g.sets.begin(), g.sets.end(), "noise.irq_rate=5925"), g.sets.end())
        << fmt::format("{}", fmt::join(g.sets, " "));
  }
  EXPECT_EQ(as_many.sets.back(), "noise.host_cpus=2");  // known, though it changes nothing yet
  for (const auto& s : guest_noise(probes, {}, 0).sets) EXPECT_FALSE(s.starts_with("noise.host_"));
}

TEST(GuestNoise, TheLoneProbesInterruptionsAreEveryVcpusAndTheBusyOnesGrowWithTheirNumber) {
  // 4 busy vCPUs on 2 host CPUs lose 51.19 %: per second of work 2.435 %
  // beyond the share (BusyVcpusBeyondTheHostsCpus...). Alone, a vCPU lost
  // 1,500 a second of 40 us, 6 %: 1/0.94 - 1 = 6.383 % of work, 1,596 a
  // second of it. The busy ones lost less beyond the share than that: no
  // interruptions grow with their number.
  const std::vector<nlohmann::ordered_json> probes(4, probe_report(2892, 177000, 80000, 4, 50));
  const std::vector<nlohmann::ordered_json> alone = {probe_report(1500, 40000, 0, 0, 0)};
  const GuestNoise quiet = guest_noise(probes, {}, 2, alone);
  // 4 busy vCPUs on 4 host CPUs: nothing shared, 1/0.48812 - 1 = 104.87 %
  // of work; beyond the lone one's 6.383 %, 98.49 % at 0.177 ms, 5,564 a
  // second, over the 3 other busy vCPUs: 1,855 each.
  const GuestNoise loud = guest_noise(probes, {}, 0, alone);

  for (const GuestNoise* g : {&quiet, &loud}) {
    EXPECT_TRUE(sets_have(*g, "noise.irq_rate=1596")) << fmt::format("{}", fmt::join(g->sets, " "));
    EXPECT_TRUE(sets_have(*g, "noise.irq_duration=40000ns"));
    EXPECT_TRUE(sets_have(*g, "noise.irq_busy_duration=177000ns"));
    EXPECT_TRUE(sets_have(*g, "noise.irq_busy_duration_cv=4.5"));
  }
  EXPECT_TRUE(sets_have(quiet, "noise.irq_busy_rate=0"));
  EXPECT_NE(quiet.note.find("each other busy vCPU adds none"), std::string::npos) << quiet.note;
  EXPECT_TRUE(sets_have(loud, "noise.irq_busy_rate=1855"))
      << fmt::format("{}", fmt::join(loud.sets, " "));
  EXPECT_NE(loud.note.find("alone, a vCPU lost 6% (1500/s of 0.04 ms: 1596/s of work, "
                           "noise.irq_rate), and each other busy vCPU adds 1855/s of work"),
            std::string::npos)
      << loud.note;
}

TEST(GuestNoise, ASliceTheUserSetsIsTheOneTheScenarioRead) {
  const std::vector<nlohmann::ordered_json> probes(4, probe_report(2892, 177000, 80000, 4, 50));
  const GuestNoise two = guest_noise(probes, {"noise.host_slice=\"2ms\""}, 2, {}, 2e6);
  const GuestNoise fluid = guest_noise(probes, {"noise.host_slice=\"0s\""}, 2, {}, 0);

  EXPECT_NE(two.note.find("round robin in slices of 2 ms (noise.host_slice)"), std::string::npos)
      << two.note;
  for (const auto& s : two.sets) EXPECT_FALSE(s.starts_with("noise.host_slice=")) << s;
  EXPECT_EQ(fluid.note.find("noise.host_slice"), std::string::npos) << fluid.note;
}

TEST(GuestNoise, EightBusyVcpusOnTwoHostCpusWaitThreeSlicesATurn) {
  // Round robin, a turn off is 8 / 2 - 1 = 3 slices: the probes' 0.9 ms
  // (cv 4.5, probes without buckets) gives slices of 0.3 ms, cv 4.5 x
  // sqrt(3) = 7.794.
  const std::vector<nlohmann::ordered_json> probes(8, probe_report(1000, 900000, 80000, 4, 50));
  const GuestNoise g = guest_noise(probes, {}, 2);

  EXPECT_TRUE(sets_have(g, "noise.host_slice=300000ns"))
      << fmt::format("{}", fmt::join(g.sets, " "));
  EXPECT_TRUE(sets_have(g, "noise.host_slice_cv=7.794"));
}

TEST(GuestNoise, RoundRobinWhatTheBusyOnesLoseBeyondTheirTurnsAndTheLoneProbeGrowsWithTheirNumber) {
  // 4 busy vCPUs on 2 host CPUs lose 3,390 a second of 0.177 ms, 60.00 %:
  // per second of work 1 s of the host's turns off, and 1 / 0.39997 - 2 =
  // 50.02 % beyond them; beyond the lone probe's 6.383 %, 43.64 % at 0.177
  // ms, 2,465 a second, over the 3 other busy vCPUs: 821.8 each.
  const std::vector<nlohmann::ordered_json> probes(4, probe_report(3390, 177000, 80000, 4, 50));
  const GuestNoise g = guest_noise(probes, {}, 2, {probe_report(1500, 40000, 0, 0, 0)});
  EXPECT_TRUE(sets_have(g, "noise.host_slice=177000ns"))
      << fmt::format("{}", fmt::join(g.sets, " "));
  EXPECT_TRUE(sets_have(g, "noise.irq_rate=1596"));
  EXPECT_TRUE(sets_have(g, "noise.irq_busy_rate=821.8"));
}

// A probe's report with its interruptions by length over `work_ns` of work:
// per bucket {from_ns, count, mean_ns, cv}.
nlohmann::ordered_json with_lengths(nlohmann::ordered_json j, double work_ns,
                                    const std::vector<std::array<double, 4>>& buckets) {
  j["fwq"]["work_ns"] = work_ns;
  j["fwq"]["by_length"] = nlohmann::ordered_json::array();
  for (const auto& [from, n, mean, cv] : buckets) {
    j["fwq"]["by_length"].push_back({{"from_ns", from},
                                     {"count", n},
                                     {"sum_ns", n * mean},
                                     {"sum_sq_ns2", n * mean * mean * (1 + cv * cv)}});
  }
  return j;
}

TEST(LengthsBeyond, WhatTheLoneProbeHadAsOftenPerSecondOfWorkIsNotBeyond) {
  // Two busy probes over 1 s of work each, the lone one over 0.5 s.
  const nlohmann::ordered_json busy = with_lengths(probe_report(0, 0, 0, 0, 0), 1e9,
                                                   {{16000, 300, 20000, 0}, {2048000, 40, 3e6, 1}});
  const nlohmann::ordered_json lone =
      with_lengths(probe_report(0, 0, 0, 0, 0), 0.5e9, {{16000, 100, 18000, 0}});

  const std::vector<LengthBucket> b = lengths_beyond({busy, busy}, {lone});

  ASSERT_EQ(b.size(), 2U);
  EXPECT_DOUBLE_EQ(b[0].per_s, 100);      // 300 a second, less the lone probe's 200
  EXPECT_DOUBLE_EQ(b[0].mean_ns, 20000);  // the busy probes' length
  EXPECT_DOUBLE_EQ(b[1].per_s, 40);
  EXPECT_DOUBLE_EQ(b[1].mean_sq_ns2, 2 * 3e6 * 3e6);
}

TEST(LengthsBeyond, AProbeWithoutLengthsGivesNone) {
  EXPECT_TRUE(lengths_beyond({probe_report(2892, 177000, 80000, 4, 50)}, {}).empty());
}

TEST(SplitTurns, TheTurnsAreTheLongestInterruptionsThatTakeTheShare) {
  // Per second of work: 10,000 of 20 us (0.2 s) and 500 of 2 ms, cv 0.5 (1 s).
  const TurnSplit s =
      split_turns({{16000, 10000, 20000, 20000.0 * 20000}, {2048000, 500, 2e6, 1.25 * 4e12}}, 1);

  EXPECT_DOUBLE_EQ(s.turn_ns, 2e6);
  EXPECT_DOUBLE_EQ(s.turn_cv, 0.5);
  EXPECT_DOUBLE_EQ(s.rest_ns, 20000);
  EXPECT_DOUBLE_EQ(s.rest_cv, 0);
}

TEST(SplitTurns, TheBucketAtTheCutGoesInPartToEachSide) {
  // Half of the 2 ms ones take the share of 0.5 s; 250 of them and the
  // 10,000 short ones are the rest: 0.7 s over 10,250, 68.29 us.
  const TurnSplit s = split_turns({{16000, 10000, 20000, 4e8}, {2048000, 500, 2e6, 4e12}}, 0.5);

  EXPECT_DOUBLE_EQ(s.turn_ns, 2e6);
  EXPECT_NEAR(s.rest_ns, 0.7e9 / 10250, 1e-6);
}

TEST(SplitTurns, InterruptionsShortOfTheShareAreAllTurns) {
  const TurnSplit s = split_turns({{16000, 10000, 20000, 4e8}, {2048000, 100, 2e6, 4e12}}, 1);

  EXPECT_NEAR(s.turn_ns, (0.2e9 + 0.2e9) / 10100, 1e-6);
  EXPECT_EQ(s.rest_ns, 0);
}

TEST(GuestNoise, TheHostsTurnsAreTheLongestOfWhatTheBusyProbesLostBeyondTheLoneOne) {
  // 4 busy vCPUs on 2 host CPUs, each over 1 s of work: 10,000 interruptions
  // of 20 us and 500 of 2 ms (cv 0.5), 10,500 over 2.2 s of wall time; the
  // lone probe 2,000 of 20 us over 1.04 s. Beyond it, 8,000 of 20 us and the
  // 500 of 2 ms, which take the share's 1 s of each second of work: turns of
  // 2 ms. The rest, 1 / (1 - 1.2 / 2.2) - 2 = 20 %, less the lone probe's 4 %,
  // is 8,000 of 20 us over the 3 other busy vCPUs: 2,667 each.
  const nlohmann::ordered_json busy =
      with_lengths(probe_report(10500 / 2.2, 1.2e9 / 10500, 80000, 4, 50), 1e9,
                   {{16000, 10000, 20000, 0}, {2048000, 500, 2e6, 0.5}});
  const nlohmann::ordered_json lone =
      with_lengths(probe_report(2000 / 1.04, 20000, 0, 0, 0), 1e9, {{16000, 2000, 20000, 0}});

  const GuestNoise g = guest_noise({busy, busy, busy, busy}, {}, 2, {lone});

  EXPECT_TRUE(sets_have(g, "noise.host_slice=2000000ns"))
      << fmt::format("{}", fmt::join(g.sets, " "));
  EXPECT_TRUE(sets_have(g, "noise.host_slice_cv=0.5"));
  EXPECT_TRUE(sets_have(g, "noise.irq_rate=2000"));
  EXPECT_TRUE(sets_have(g, "noise.irq_busy_duration=20000ns"));
  EXPECT_TRUE(sets_have(g, "noise.irq_busy_duration_cv=0"));
  EXPECT_TRUE(sets_have(g, "noise.irq_busy_rate=2667"));
  EXPECT_NE(g.note.find("round robin in slices of 2 ms (noise.host_slice, cv 0.5: turns off of "
                        "2 ms, cv 0.5, the longest of what they lost beyond the lone vCPU)"),
            std::string::npos)
      << g.note;
}

TEST(GuestNoise, OneBusyVcpuHasNoLoneProbeToSetApart) {
  const GuestNoise g = guest_noise({probe_report(876, 936000, 80000, 4, 50)}, {}, 0,
                                   {probe_report(1500, 40000, 0, 0, 0)});
  EXPECT_NE(std::find(g.sets.begin(), g.sets.end(), "noise.irq_rate=4865"), g.sets.end());
  for (const auto& s : g.sets) EXPECT_FALSE(s.starts_with("noise.irq_busy")) << s;
}

// A probe that no interruption stretched: its section has no lengths.
nlohmann::ordered_json never_interrupted() {
  nlohmann::ordered_json j = probe_report(0, 0, 80000, 4, 50);
  j["fwq"]["interruptions"] = 0;
  return j;
}

TEST(GuestNoise, ProbesNeverInterruptedSetNoInterruptions) {
  const GuestNoise g = guest_noise({never_interrupted(), never_interrupted()}, {});
  EXPECT_NE(std::find(g.sets.begin(), g.sets.end(), "noise.irq_rate=0"), g.sets.end())
      << fmt::format("{}", fmt::join(g.sets, " "));
}

TEST(GuestNoise, ALoneProbeNeverInterruptedLeavesEveryInterruptionToTheBusy) {
  // 2 busy vCPUs, nothing shared: 1/0.48812 - 1 = 104.87 % of work at
  // 0.177 ms, 5,925 a second, all for the one other busy vCPU.
  const std::vector<nlohmann::ordered_json> probes(2, probe_report(2892, 177000, 80000, 4, 50));
  const GuestNoise g = guest_noise(probes, {}, 0, {never_interrupted()});

  EXPECT_TRUE(sets_have(g, "noise.irq_rate=0")) << fmt::format("{}", fmt::join(g.sets, " "));
  EXPECT_TRUE(sets_have(g, "noise.irq_busy_rate=5925"));
}

TEST(GuestNoise, ARateOrLengthTheUserSetsKeepsTheBusyProbesRestAsIrqRate) {
  const std::vector<nlohmann::ordered_json> probes(2, probe_report(2892, 177000, 80000, 4, 50));
  const GuestNoise g =
      guest_noise(probes, {"noise.irq_duration=10us"}, 0, {probe_report(1500, 40000, 0, 0, 0)});
  for (const auto& s : g.sets) {
    EXPECT_FALSE(s.starts_with("noise.irq_busy")) << s;
    EXPECT_FALSE(s.starts_with("noise.irq_duration=")) << s;
  }
}

TEST(GuestNoise, NoProbeGivesNoSets) { EXPECT_TRUE(guest_noise({}, {}).sets.empty()); }

TEST(Initramfs, IsANewcArchiveWithParentsFirstAndATrailer) {
  Initramfs ir;
  ir.add_file("bin/tool", "#!/bin/sh\n", 0755);
  ir.add_symlink("bin/sh", "busybox");
  ir.add_dir("proc");
  const std::string a = ir.archive();
  EXPECT_EQ(a.size() % 4, 0u);
  EXPECT_NE(a.find("TRAILER!!!"), std::string::npos);
  const auto e = read_newc(a);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].name, "bin");
  EXPECT_EQ(e[0].mode, 040755u);
  EXPECT_EQ(e[1].name, "bin/tool");
  EXPECT_EQ(e[1].mode, 0100755u);
  EXPECT_EQ(e[1].data, "#!/bin/sh\n");
  EXPECT_EQ(e[2].name, "bin/sh");
  EXPECT_EQ(e[2].mode, 0120777u);
  EXPECT_EQ(e[2].data, "busybox");
  EXPECT_EQ(e[3].name, "proc");
}

TEST(Initramfs, BusyboxCpioListsWhatWasAdded) {
  if (::access("/bin/busybox", X_OK) != 0) GTEST_SKIP() << "no /bin/busybox";
  Initramfs ir;
  ir.add_file("etc/a", "x");
  ir.add_file("b", std::string(5, 'y'));
  const fs::path f = fs::temp_directory_path() / ("mmsim-cpio-" + std::to_string(::getpid()));
  std::ofstream(f, std::ios::binary) << ir.archive();
  native::SignalScope signals;
  const CommandResult r = run_command(
      {.argv = {"/bin/sh", "-c", "/bin/busybox cpio -t < " + f.string()}, .timeout_s = 30},
      signals);
  fs::remove(f);
  EXPECT_TRUE(r.ok()) << r.what() << r.err;
  EXPECT_EQ(r.out, "etc\netc/a\nb\n");
}

TEST(Initramfs, SharedLibrariesOfAStaticProgramAreNone) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a sanitizer build's mmsim-exec is linked dynamically";
#endif
  native::SignalScope signals;
  std::vector<std::string> libs;
  std::string why;
  ASSERT_TRUE(shared_libraries(MMSIM_EXEC_PATH, signals, &libs, &why)) << why;
  EXPECT_TRUE(libs.empty());
}

TEST(Initramfs, SharedLibrariesOfADynamicProgramIncludeTheLoader) {
  native::SignalScope signals;
  std::vector<std::string> libs;
  std::string why;
  ASSERT_TRUE(shared_libraries("/bin/sh", signals, &libs, &why)) << why;
  bool loader = false, libc = false;
  for (const auto& l : libs) {
    loader |= l.find("ld-linux") != std::string::npos;
    libc |= l.find("libc.so") != std::string::npos;
  }
  EXPECT_TRUE(loader);
  EXPECT_TRUE(libc);
}

TEST(Kernels, SeriesPackagesAreTheGenericImagesNewestFirst) {
  const std::vector<std::string> names = {"linux-image-6.1.0-9-amd64-unsigned",
                                          "linux-image-6.1.0-50-amd64-unsigned",
                                          "linux-image-6.1.0-50-cloud-amd64-unsigned",
                                          "linux-image-6.1.0-50-rt-amd64-unsigned",
                                          "linux-image-6.1.0-50-amd64",
                                          "linux-image-6.12.107+deb12-amd64-unsigned",
                                          "linux-image-6.12.9+deb12-amd64-unsigned",
                                          "linux-image-6.1.0-50-amd64-dbg"};
  EXPECT_EQ(series_packages(names, "6.1"),
            (std::vector<std::string>{"linux-image-6.1.0-50-amd64-unsigned",
                                      "linux-image-6.1.0-9-amd64-unsigned"}));
  EXPECT_EQ(series_packages(names, "6.12"),
            (std::vector<std::string>{"linux-image-6.12.107+deb12-amd64-unsigned",
                                      "linux-image-6.12.9+deb12-amd64-unsigned"}));
  EXPECT_TRUE(series_packages(names, "5.10").empty());
}

TEST(Kernels, TheCacheHoldsWhatAFetchRecordedAndItsConfig) {
  const fs::path cache = fs::temp_directory_path() / ("mmsim-kcache-" + std::to_string(::getpid()));
  fs::create_directories(cache / "6.12" / "boot");
  std::ofstream(cache / "6.12" / "boot" / "vmlinuz-6.12.9+deb12-amd64") << "kernel";
  std::ofstream(cache / "6.12" / "boot" / "config-6.12.9+deb12-amd64")
      << "CONFIG_MEMCG=y\n# CONFIG_MEMCG_V1 is not set\nCONFIG_BRD=m\n";
  EXPECT_FALSE(cached_kernel(cache.string(), "6.12")) << "no record yet";
  std::ofstream(cache / "6.12" / "mmsim-kernel.txt")
      << "package=linux-image-6.12.9+deb12-amd64-unsigned\nversion=6.12.9-1\n"
         "release=6.12.9+deb12-amd64\n";
  const auto k = cached_kernel(cache.string(), "6.12");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->version, "6.12.9-1");
  EXPECT_EQ(k->vmlinuz(), (cache / "6.12" / "boot" / "vmlinuz-6.12.9+deb12-amd64").string());
  EXPECT_EQ(k->config("MEMCG"), "y");
  EXPECT_EQ(k->config("BRD"), "m");
  EXPECT_EQ(k->config("MEMCG_V1"), "");
  EXPECT_FALSE(cached_kernel(cache.string(), "6.1"));
  fs::remove_all(cache);
}

topo::MachineSpec two_by_two(uint64_t mem) {
  topo::MachineSpec s;
  s.name = "t";
  s.sockets = 2;
  s.cores_per_socket = 2;
  s.mem_per_node = mem;
  s.llc_per_socket = 8 << 20;
  s.distance = {{10, 21}, {21, 10}};
  return s;
}

TEST(Guest, TheQemuMachineHasTheScenariosNodesCpusMemoryAndDistances) {
  const topo::Topology t(two_by_two(1ull << 30));
  const GuestMachine g = guest_machine(t);
  EXPECT_EQ(g.nr_cpus(), 4u);
  EXPECT_EQ(g.total_mem(), 2ull << 30);
  BootSpec b;
  b.vmlinuz = "/k";
  b.initrd = "/i";
  b.data_path = "/d";
  b.cmdline = "quiet";
  const auto a = qemu_argv(g, b, "tcg");
  auto has = [&](const std::string& x) { return std::find(a.begin(), a.end(), x) != a.end(); };
  EXPECT_TRUE(has("memory-backend-ram,id=mem1,size=1024M"));
  EXPECT_TRUE(has("node,nodeid=0,memdev=mem0,cpus=0-1"));
  EXPECT_TRUE(has("node,nodeid=1,memdev=mem1,cpus=2-3"));
  EXPECT_TRUE(has("dist,src=0,dst=1,val=21"));
  EXPECT_TRUE(has("dist,src=1,dst=0,val=21"));
  EXPECT_TRUE(has("2048M"));
  EXPECT_TRUE(has("console=ttyS0 panic=-1 clocksource=tsc tsc=reliable quiet"));
  EXPECT_TRUE(has("file:/d"));
  EXPECT_TRUE(has("tcg"));
}

TEST(Guest, TheClocksourceIsTheLastWordOfTheGuestsUpLine) {
  EXPECT_EQ(guest_clocksource("[ 1.0] x\nMMSIM-GUEST-UP 6.1.0-57-amd64 tsc-early\r\nmore\n"),
            "tsc-early");
  EXPECT_EQ(guest_clocksource("MMSIM-GUEST-UP 6.12.118+deb12-amd64 hpet"), "hpet");
  EXPECT_EQ(guest_clocksource("MMSIM-GUEST-UP 6.1.0-57-amd64\n"), "");  // an older init
  EXPECT_EQ(guest_clocksource("no up line"), "");
}

TEST(Guest, ATcgGuestKeepsTheHostsTscAsItsClockAndAKvmGuestItsOwnChoice) {
  const GuestMachine g = guest_machine(topo::Topology(two_by_two(1ull << 30)));
  BootSpec b;
  b.cmdline = "quiet";
  auto append = [&](const std::string& accel) {
    const auto a = qemu_argv(g, b, accel);
    const auto at = std::find(a.begin(), a.end(), "-append");
    return at == a.end() || at + 1 == a.end() ? std::string() : *(at + 1);
  };
  EXPECT_NE(append("tcg").find("tsc=reliable"), std::string::npos);
  EXPECT_NE(append("tcg").find("clocksource=tsc"), std::string::npos);
  EXPECT_EQ(append("kvm").find("tsc"), std::string::npos);
}

TEST(Guest, TheGuestHasTheModelsSocketsAndCoresSoThatItsCachesAndSchedDomainsMatch) {
  const GuestMachine g = guest_machine(topo::Topology(two_by_two(1ull << 30)));
  const auto a = qemu_argv(g, BootSpec{}, "tcg");
  EXPECT_NE(std::find(a.begin(), a.end(), "4,sockets=2,cores=2,threads=1"), a.end());
  // SMT presets number the first threads of every core first: not QEMU's
  // order, so the plain count.
  const GuestMachine x = guest_machine(topo::Topology(*topo::preset("xeon-8s-144c")));
  EXPECT_EQ(x.sockets, 0u);
  EXPECT_NE(std::find(a.begin(), a.end(), "-smp"), a.end());
}

TEST(Guest, AMemoryNodeGetsItsHomeAsInitiatorAndAnHmatOfEveryCpuNodesAccess) {
  topo::MachineSpec spec = *topo::preset("dram-cxl");
  spec.sockets = 1;
  spec.distance.clear();  // the preset's is over two sockets
  spec.cores_per_socket = 2;
  spec.mem_per_node = 512ull << 20;
  spec.memory_node_mem = 512ull << 20;
  const GuestMachine g = guest_machine(topo::Topology(spec));
  ASSERT_TRUE(g.hmat);
  BootSpec b;
  const auto a = qemu_argv(g, b, "tcg");
  auto has = [&](const std::string& x) { return std::find(a.begin(), a.end(), x) != a.end(); };
  EXPECT_TRUE(has("hmat=on"));
  EXPECT_TRUE(has("node,nodeid=1,memdev=mem1,initiator=0"));
  EXPECT_TRUE(
      has("hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,"
          "latency=100"));
  EXPECT_TRUE(
      has("hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,"
          "latency=180"));
  EXPECT_TRUE(
      has("hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,"
          "bandwidth=36000M"));
  EXPECT_TRUE(has("dist,src=0,dst=1,val=18"));
  // Without the figures there is no HMAT.
  spec.memory_node_bandwidth_mbps = 0;
  EXPECT_FALSE(guest_machine(topo::Topology(spec)).hmat);
}

TEST(Guest, AMachineTooBigForThisHostSaysWhichSetWouldFit) {
  const topo::Topology t(two_by_two(16ull << 30));
  const std::string why = guest_misfit(guest_machine(t), 8ull << 30);
  EXPECT_NE(why.find("more than half of this host's"), std::string::npos) << why;
  EXPECT_NE(why.find("--set machine.mem_per_node=2048MiB"), std::string::npos) << why;
  EXPECT_EQ(guest_misfit(guest_machine(topo::Topology(two_by_two(1ull << 30))), 8ull << 30), "");
  EXPECT_NE(guest_misfit(guest_machine(topo::Topology(two_by_two(64ull << 20))), 8ull << 30)
                .find("at least 256MiB"),
            std::string::npos);
}

TEST(Counters, AReportIsFlattenedToVmstatMetricsMemcgAndTaskSums) {
  const auto j = nlohmann::ordered_json::parse(R"({
    "metrics": {"passes": 3},
    "vmstat": {"pgfault": 10, "pgalloc_dma32": 5, "pgalloc_normal": 2},
    "tasks": [{"minflt": 4, "majflt": 1}, {"minflt": 6, "majflt": 0}],
    "memcg": {"cgroups": {"/a": {"memory.failcnt": 7, "reclaimed_pages": 9,
                                 "memory.stat": {"rss": 4096}}}}})");
  const auto f = flat_counters(j);
  EXPECT_EQ(f.at("pgfault"), 10);
  EXPECT_EQ(f.at("pgalloc"), 7) << "allocations over all zones";
  EXPECT_EQ(f.at("metric:passes"), 3);
  EXPECT_EQ(f.at("tasks:minflt"), 10);
  EXPECT_EQ(f.at("tasks:majflt"), 1);
  EXPECT_EQ(f.at("memcg:/a:memory.failcnt"), 7);
  EXPECT_EQ(f.at("memcg:/a:rss"), 4096);
  EXPECT_EQ(f.count("memcg:/a:reclaimed_pages"), 0u) << "the simulation's own, no kernel file";
}

TEST(Counters, EachProgramsPlacementIsItsTasksMeanLocalShareAndNodesPerProcess) {
  const auto j = nlohmann::ordered_json::parse(R"({"tasks": [
    {"comm": "main", "tgid": 1, "node": 0, "local_pct": null},
    {"comm": "thread", "tgid": 1, "node": 0, "local_pct": 100.0},
    {"comm": "thread", "tgid": 1, "node": 1, "local_pct": 50.0},
    {"comm": "thread", "tgid": 2, "node": 1, "local_pct": 90.0},
    {"comm": "thread", "tgid": 2, "node": null, "local_pct": null}]})");
  const auto f = flat_counters(j);
  EXPECT_EQ(f.at("tasks:thread:local_pct"), 80.0) << "the mean over tasks that report one";
  EXPECT_EQ(f.at("tasks:thread:nodes_per_process"), 1.5) << "2 nodes in process 1, 1 in 2";
  EXPECT_EQ(f.at("tasks:main:nodes_per_process"), 1.0);
  EXPECT_EQ(f.count("tasks:main:local_pct"), 0u);
}

TEST(Counters, VmstatGaugesAreNotComparedButCgroupFilesAre) {
  EXPECT_TRUE(is_gauge("nr_anon_pages"));
  EXPECT_FALSE(is_gauge("nr_tlb_remote_flush"));
  EXPECT_FALSE(is_gauge("pgfault"));
  EXPECT_FALSE(is_gauge("memcg:/a:cache"));
}

TEST(Counters, AV2RunsRootIsComparedAsTheSumOfItsTopLevelCgroups) {
  auto j = nlohmann::ordered_json::parse(R"({"memcg": {"hierarchy": "v2", "cgroups": {
    "/": {"memory.current": 900, "memory.peak": 950, "memory.events": {"max": 1},
          "memory.stat": {"anon": 500, "pgfault": 40}},
    "/a": {"memory.current": 300, "memory.peak": 400, "memory.events": {"max": 2},
           "memory.stat": {"anon": 100, "pgfault": 10}},
    "/a/b": {"memory.current": 200, "memory.peak": 200, "memory.events": {"max": 2},
             "memory.stat": {"anon": 100, "pgfault": 6}},
    "/c": {"memory.current": 50, "memory.peak": 50, "memory.events": {"max": 0},
           "memory.stat": {"anon": 0, "pgfault": 3}}}}})");
  as_run_cgroup(j);
  const auto f = flat_counters(j);
  EXPECT_EQ(f.at("memcg:/:memory.current"), 350) << "/a (which holds /a/b) and /c";
  EXPECT_EQ(f.at("memcg:/:pgfault"), 13);
  EXPECT_EQ(f.at("memcg:/:anon"), 100);
  EXPECT_EQ(j["memcg"]["cgroups"]["/"]["memory.events"]["max"], 2);
  EXPECT_EQ(f.count("memcg:/:memory.peak"), 0u) << "a peak of the sum is not the sum of peaks";
  EXPECT_EQ(f.at("memcg:/a:pgfault"), 10) << "the others stay as they are";
}

TEST(Counters, OnlyV2InBothWorldsWithScenarioCgroupsComparesTheRunsCgroup) {
  EXPECT_TRUE(compares_run_cgroup("v2", "v2", true));
  EXPECT_FALSE(compares_run_cgroup("v2", "v2", false)) << "the tasks run in / itself";
  EXPECT_FALSE(compares_run_cgroup("v1", "v2", true)) << "a v1 host reads its own / as it is";
  EXPECT_FALSE(compares_run_cgroup("v2", "v1", true));
  EXPECT_FALSE(compares_run_cgroup("", "v2", true)) << "no memcg read natively";
}

Series of(std::vector<double> v) { return Series{std::move(v)}; }

TEST(Judge, ARelativeToleranceBoundsTheErrorOfTheMeans) {
  const Verdict in = judge("c", of({100, 110}), of({110}), true, Tolerance{true, 0.1});
  EXPECT_TRUE(in.pass);
  EXPECT_NEAR(in.error, 110.0 / 105 - 1, 1e-12);
  EXPECT_FALSE(judge("c", of({100}), of({111}), true, Tolerance{true, 0.1}).pass);
  EXPECT_TRUE(judge("c", of({100}), of({90}), true, Tolerance{true, 0.1}).pass);
}

TEST(Judge, AnAbsoluteToleranceBoundsTheDifference) {
  EXPECT_TRUE(judge("c", of({0}), of({40}), true, Tolerance{false, 50}).pass);
  EXPECT_FALSE(judge("c", of({0}), of({60}), true, Tolerance{false, 50}).pass);
}

TEST(Judge, ACounterTheSimulationLacksFailsOnlyWhenJudged) {
  EXPECT_FALSE(judge("c", of({5}), of({}), false, Tolerance{true, 0.1}).pass);
  EXPECT_TRUE(judge("c", of({5}), of({}), false, std::nullopt).pass);
}

TEST(Judge, AFailureTheRunsSpreadCoversIsNotBeyondIt) {
  // The guest's runs spread by a third; the simulation's mean is 15 % low.
  const Verdict v = judge("c", of({80, 100, 120}), of({84, 85, 86}), true, Tolerance{true, 0.1});
  EXPECT_FALSE(v.pass);
  ASSERT_TRUE(v.error_ci);
  EXPECT_LT(v.error_ci->first, -0.1);
  EXPECT_GT(v.error_ci->second, -0.1) << "the interval reaches inside the tolerance";
  EXPECT_FALSE(v.fail_beyond_spread);
}

TEST(Judge, AFailureOfTightRunsIsBeyondTheirSpread) {
  const Verdict v = judge("c", of({99, 100, 101}), of({84, 85, 86}), true, Tolerance{true, 0.1});
  EXPECT_FALSE(v.pass);
  ASSERT_TRUE(v.error_ci);
  EXPECT_LT(v.error_ci->second, -0.1);
  EXPECT_TRUE(v.fail_beyond_spread);
}

TEST(Judge, AnAbsoluteToleranceIsABandAroundTheRealMean) {
  // 30 counts low, within a few: outside a band of 10 counts (10 % of 100).
  const Verdict v = judge("c", of({100, 100, 100}), of({69, 70, 71}), true, Tolerance{false, 10});
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(v.fail_beyond_spread);
  const Verdict wide =
      judge("c", of({100, 100, 100}), of({69, 70, 71}), true, Tolerance{false, 29});
  EXPECT_FALSE(wide.pass);
  EXPECT_FALSE(wide.fail_beyond_spread) << "the interval, -32.5 to -27.5 %, reaches inside 29";
}

TEST(Judge, OneRunASideHasNoIntervalAndNoFailureBeyondSpread) {
  const Verdict v = judge("c", of({100}), of({150}), true, Tolerance{true, 0.1});
  EXPECT_FALSE(v.pass);
  EXPECT_FALSE(v.error_ci);
  EXPECT_FALSE(v.fail_beyond_spread) << "one run says nothing of the spread";
}

// validate's JSON of one scenario on one kernel with the given verdicts.
nlohmann::ordered_json result_of(const std::vector<Verdict>& verdicts) {
  nlohmann::ordered_json counters = nlohmann::ordered_json::array();
  int passed = 0, failed = 0, beyond = 0;
  for (const Verdict& v : verdicts) {
    auto side = [](const Series& x) {
      return nlohmann::ordered_json{{"mean", x.mean()}, {"min", x.min()}, {"max", x.max()}};
    };
    nlohmann::ordered_json c = {
        {"counter", v.counter},
        {"real", side(v.real)},
        {"simulated", side(v.sim)},
        {"error", v.error},
        {"error_ci", nlohmann::ordered_json::array({v.error_ci->first, v.error_ci->second})},
        {"tolerance", v.tolerance->text()},
        {"verdict", v.pass ? "pass" : "fail"}};
    if (!v.pass) c["fail_beyond_spread"] = v.fail_beyond_spread;
    counters.push_back(c);
    (v.pass ? passed : failed)++;
    beyond += v.fail_beyond_spread;
  }
  return {{"scenario", "s"},
          {"path", "validate/s.toml"},
          {"kernel", {{"package", "p"}, {"version", "1"}, {"release", "6.1.0"}}},
          {"accel", "tcg"},
          {"repeat", 3},
          {"machine", {{"nodes", 2}, {"cpus", 4}}},
          {"notes", nlohmann::ordered_json::array()},
          {"passed", passed},
          {"failed", failed},
          {"failed_beyond_spread", beyond},
          {"counters", counters}};
}

TEST(Markdown, AFailureWithinTheRunsSpreadIsMarkedSoInItsRowAndTheSummary) {
  const Tolerance ten{true, 0.1};
  const std::string md = validation_markdown(
      {result_of({judge("spread", of({80, 100, 120}), of({84, 85, 86}), true, ten),
                  judge("tight", of({99, 100, 101}), of({84, 85, 86}), true, ten),
                  judge("ok", of({99, 100, 101}), of({99, 100, 101}), true, ten)})},
      {}, "qemu");
  EXPECT_NE(md.find("| s | 6.1.0 | 3 | 1 | 2 (1 within the runs' spread) |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| `spread` | 100 (80-120) | 85 (84-86) | -15.0% |"), std::string::npos);
  EXPECT_NE(md.find("| 10% | **FAIL** (within the runs' spread) |"), std::string::npos);
  EXPECT_NE(md.find("| 10% | **FAIL** |"), std::string::npos) << "the tight one";
  EXPECT_NE(md.find("| `ok` | 100 (99-101) | 100 (99-101) | +0.0% | -2.3..+2.3% | 10% | pass |"),
            std::string::npos)
      << md;
}

TEST(Judge, ZeroOnBothSidesIsNoError) {
  const Verdict v = judge("c", of({0, 0}), of({0}), true, Tolerance{true, 0.1});
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.error, 0);
}

TEST(Command, CapturesOutputAndExitStatus) {
  native::SignalScope signals;
  const CommandResult r =
      run_command({.argv = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}}, signals);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.what(), "exited with status 3");
}

TEST(Command, ADeadlineKillsTheProgramAndItsGroup) {
  native::SignalScope signals;
  const CommandResult r =
      run_command({.argv = {"/bin/sh", "-c", "sleep 30 & sleep 30"}, .timeout_s = 0.3}, signals);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_s, 10);
}

TEST(Command, KeepGoingSeesTheOutputAndCanStopIt) {
  native::SignalScope signals;
  Command c{.argv = {"/bin/sh", "-c", "echo UP; sleep 30"}};
  c.keep_going = [](const std::string& out) { return out.find("UP") == std::string::npos; };
  const CommandResult r = run_command(c, signals);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.out, "UP\n");
}

TEST(Command, AMissingProgramIsReportedNotRun) {
  native::SignalScope signals;
  const CommandResult r = run_command({.argv = {"mmsim-no-such-program"}}, signals);
  EXPECT_NE(r.spawn_errno, 0);
  EXPECT_NE(r.what().find("could not be started"), std::string::npos);
}

TEST(Validate, BadOptionsAreRejectedBeforeAnythingRuns) {
  std::ostringstream out, err;
  ValidateOptions o;
  o.scenarios = {"x.toml"};
  o.kernels = {"6"};
  EXPECT_EQ(run_validate(o, out, err), 2);
  EXPECT_NE(err.str().find("--kernel: expected a series such as 6.1"), std::string::npos);
  o.kernels = {"6.1"};
  o.accel = "hvf";
  err.str("");
  EXPECT_EQ(run_validate(o, out, err), 2);
  EXPECT_NE(err.str().find("--accel: expected auto, kvm or tcg"), std::string::npos);
}

TEST(Validate, AScanTraceDirectoryThatCannotBeWrittenIsRejectedBeforeAnyGuest) {
  std::ostringstream out, err;
  ValidateOptions o;
  o.scenarios = {"x.toml"};
  o.scan_trace = "/proc/self/mmsim-scan-trace";
  EXPECT_EQ(run_validate(o, out, err), 2);
  EXPECT_NE(err.str().find("--scan-trace: cannot write to the directory"), std::string::npos)
      << err.str();
}

TEST(Validate, ATraceEventNotNamedGroupSlashNameIsRejectedBeforeAnyGuest) {
  std::ostringstream out, err;
  ValidateOptions o;
  o.scenarios = {"x.toml"};
  o.scan_trace = ::testing::TempDir() + "mmsim-trace-event-test";
  for (const char* bad : {"mm_vmscan_kswapd_wake", "vmscan/", "/x", "a/b/c", "vmscan/x; reboot"}) {
    o.trace_events = {bad};
    err.str("");
    EXPECT_EQ(run_validate(o, out, err), 2) << bad;
    EXPECT_NE(err.str().find("--trace-event: expected a tracepoint as GROUP/NAME"),
              std::string::npos)
        << err.str();
  }
}

TEST(Validate, ATraceEventWithoutAScanTraceDirectoryIsRejected) {
  std::ostringstream out, err;
  ValidateOptions o;
  o.scenarios = {"x.toml"};
  o.trace_events = {"vmscan/mm_vmscan_kswapd_wake"};
  EXPECT_EQ(run_validate(o, out, err), 2);
  EXPECT_NE(err.str().find("give --scan-trace DIR too"), std::string::npos) << err.str();
}

TEST(Validate, AKprobeThatIsNotAFunctionWithFetchArgumentsIsRejectedBeforeAnyGuest) {
  std::ostringstream out, err;
  ValidateOptions o;
  o.scenarios = {"x.toml"};
  o.scan_trace = ::testing::TempDir() + "mmsim-kprobe-test";
  for (const char* bad :
       {"", " x", "9lives", "do_numa_page'; reboot", "a/b", "f x=`reboot`", "f;reboot", "f\tx"}) {
    o.kprobes = {bad};
    err.str("");
    EXPECT_EQ(run_validate(o, out, err), 2) << bad;
    EXPECT_NE(err.str().find("--kprobe: expected a kernel function"), std::string::npos)
        << err.str();
  }
}

TEST(Validate, AKprobeWithoutAScanTraceDirectoryIsRejected) {
  std::ostringstream out, err;
  ValidateOptions o;
  o.scenarios = {"x.toml"};
  o.kprobes = {"do_huge_pmd_numa_page"};
  EXPECT_EQ(run_validate(o, out, err), 2);
  EXPECT_NE(err.str().find("--kprobe: the events go to the --scan-trace files"), std::string::npos)
      << err.str();
}

}  // namespace
}  // namespace mmsim::validate
