// Noise in whole runs: threads started together drift apart, seeds give
// different runs, --no-noise gives lockstep, and desynchronised threads wait
// on fewer migration entries than threads in lockstep.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/run.h"

namespace mmsim {
namespace {

using testing::run_text;

// Two threads read one 8 MiB array for 50 ms, counting passes each.
std::string two_readers(const std::string& extra = "") {
  return R"(
[machine]
preset = "2s-16c"
[kernel]
version = "6.1"
numa_balancing = 0
)" + extra +
         R"(
[run]
program = "main"
[[programs.main]]
op = "map"
region = "data"
size = "8MiB"
[[programs.main]]
op = "touch"
region = "data"
mode = "write"
[[programs.main]]
op = "threads"
count = 2
program = "reader"
[[programs.main]]
op = "wait"
[[programs.reader]]
op = "loop"
duration = "50ms"
body = [ { op = "sweep", region = "data" }, { op = "count", counter = "passes" } ]
)";
}

uint64_t user_ns_of(const testing::Ran& ran, uint32_t pid) {
  for (const auto& t : ran.result.tasks)
    if (t.pid == pid) return static_cast<uint64_t>(t.times.user_ns);
  return 0;
}

// The passes of one run over another's.
double passes_ratio(const testing::Ran& a, const testing::Ran& b) {
  return static_cast<double>(a.counter("passes")) / static_cast<double>(b.counter("passes"));
}

// Noise without jitter or interruptions of its own: only what a test adds.
const std::string kQuietNoise = "[noise]\ncost_jitter_cv = 0\nirq_rate = 0\n";
// 10,000 interruptions a second of 10 us for each other busy CPU.
const std::string kBusyNoise =
    kQuietNoise + "irq_busy_rate = 10000\nirq_busy_duration = \"10us\"\n";

TEST(NoiseWorld, ThreadsStartedTogetherRunInLockstepWithoutNoise) {
  const auto ran = run_text(two_readers(), {"noise.enabled=false"});
  EXPECT_EQ(user_ns_of(ran, 2), user_ns_of(ran, 3));
}

TEST(NoiseWorld, ThreadsStartedTogetherDriftApartWithNoise) {
  const auto ran = run_text(two_readers());
  EXPECT_NE(user_ns_of(ran, 2), user_ns_of(ran, 3));
}

TEST(NoiseWorld, TwoSeedsGiveDifferentRuns) {
  const auto a = run_text(two_readers(), {"scenario.seed=1"});
  const auto b = run_text(two_readers(), {"scenario.seed=2"});
  EXPECT_NE(a.result.elapsed_s, b.result.elapsed_s);
}

TEST(NoiseWorld, TheSameSeedGivesTheSameRun) {
  const auto a = run_text(two_readers(), {"scenario.seed=5"});
  const auto b = run_text(two_readers(), {"scenario.seed=5"});
  EXPECT_EQ(a.result.elapsed_s, b.result.elapsed_s);
  EXPECT_EQ(user_ns_of(a, 2), user_ns_of(b, 2));
}

TEST(NoiseWorld, InterruptionsSlowUserWorkByTheirShareOfTime) {
  // 10,000 interruptions a second of 10 us each take 10% of the CPU.
  const std::string noisy =
      "[noise]\ncost_jitter_cv = 0\nirq_rate = 10000\nirq_duration = \"10us\"\n";
  const auto quiet = run_text(two_readers(), {"noise.enabled=false"});
  const auto loud = run_text(two_readers(noisy));
  EXPECT_NEAR(passes_ratio(loud, quiet), 1 / 1.1, 0.02);
}

TEST(NoiseWorld, TwoBusyVcpusSharingOneHostCpuRunAtHalfSpeed) {
  const auto alone = run_text(two_readers(kQuietNoise));
  const auto shared = run_text(two_readers(kQuietNoise + "host_cpus = 1\n"));
  EXPECT_NEAR(passes_ratio(shared, alone), 0.5, 0.03);
}

TEST(NoiseWorld, TheHostsRoundRobinGivesAsMuchAsItsFluidShare) {
  const auto alone = run_text(two_readers(kQuietNoise));
  const auto turns = run_text(two_readers(kQuietNoise + "host_cpus = 1\nhost_slice = \"100us\"\n"));
  EXPECT_NEAR(passes_ratio(turns, alone), 0.5, 0.05);
}

// Noise that starts threads together and never parts them by itself.
const std::string kInStep = kQuietNoise + "clone_latency = 0\nwakeup_latency = 0\n";

// Whether the two readers made different numbers of passes.
bool readers_parted(const testing::Ran& ran) {
  std::vector<uint64_t> passes;
  for (const auto& t : ran.result.tasks)
    if (t.pid == 2 || t.pid == 3) passes.push_back(t.counters.at(0));
  return passes.size() == 2 && passes[0] != passes[1];
}

TEST(NoiseWorld, AFluidShareKeepsVcpusStartedTogetherInStep) {
  for (const char* seed : {"1", "2", "3", "4", "5"})
    EXPECT_FALSE(readers_parted(
        run_text(two_readers(kInStep + "host_cpus = 1\n"), {std::string("scenario.seed=") + seed})))
        << seed;
}

TEST(NoiseWorld, TheHostsRoundRobinPartsVcpusStartedTogether) {
  int parted = 0;
  for (const char* seed : {"1", "2", "3", "4", "5"})
    parted +=
        readers_parted(run_text(two_readers(kInStep + "host_cpus = 1\nhost_slice = \"100us\"\n"
                                                      "host_slice_cv = 0.5\n"),
                                {std::string("scenario.seed=") + seed}));
  EXPECT_GE(parted, 3);
}

TEST(NoiseWorld, AsManyHostCpusAsBusyVcpusShareNothing) {
  const auto alone = run_text(two_readers(kQuietNoise));
  const auto two = run_text(two_readers(kQuietNoise + "host_cpus = 2\n"));
  EXPECT_EQ(two.counter("passes"), alone.counter("passes"));
}

TEST(NoiseWorld, AVcpuBusyAloneHasAHostCpuToItself) {
  // main writes the array alone, then sleeps while its two readers share.
  const auto alone = run_text(two_readers(kQuietNoise));
  const auto shared = run_text(two_readers(kQuietNoise + "host_cpus = 1\n"));
  EXPECT_NEAR(
      static_cast<double>(user_ns_of(shared, 1)) / static_cast<double>(user_ns_of(alone, 1)), 1,
      0.01);
}

// One reader stops at 25 ms (uncounted), the other reads to 50 ms.
std::string short_and_long_reader(const std::string& noise) {
  std::string text = two_readers(noise);
  const std::string both = "count = 2\nprogram = \"reader\"";
  text.replace(text.find(both), both.size(),
               "count = 1\nprogram = \"short\"\n[[programs.main]]\nop = \"threads\"\n"
               "count = 1\nprogram = \"reader\"");
  return text + R"(
[[programs.short]]
op = "loop"
duration = "25ms"
body = [ { op = "sweep", region = "data" } ]
)";
}

TEST(NoiseWorld, AReaderLeftAloneGoesOnAtFullSpeed) {
  // One reader stops at 25 ms, the other reads to 50 ms: half its time at
  // half speed, half at full, so three quarters of its passes alone.
  const std::string text = short_and_long_reader(kQuietNoise);
  const auto alone = run_text(text);
  const auto shared = run_text(text, {"noise.host_cpus=1"});
  EXPECT_NEAR(passes_ratio(shared, alone), 0.75, 0.03);
}

TEST(NoiseWorld, EachOtherBusyCpuAddsItsInterruptions) {
  // Two readers busy at once: each takes 10,000 a second of 10 us for the
  // other, 10 % of its work, as InterruptionsSlowUserWorkByTheirShareOfTime.
  const auto none = run_text(two_readers(kQuietNoise));
  const auto busy = run_text(two_readers(kBusyNoise));
  EXPECT_NEAR(passes_ratio(busy, none), 1 / 1.1, 0.02);
}

TEST(NoiseWorld, AVcpuBusyAloneTakesNoneOfTheBusyOnesInterruptions) {
  // main writes the array alone, before its readers start.
  const auto none = run_text(two_readers(kQuietNoise));
  const auto busy = run_text(two_readers(kBusyNoise));
  EXPECT_EQ(user_ns_of(busy, 1), user_ns_of(none, 1));
}

TEST(NoiseWorld, AReaderLeftAloneLosesTheBusyOnesInterruptions) {
  // As AReaderLeftAloneGoesOnAtFullSpeed, without a share: half its time
  // with the other busy (1/1.1 of its speed), half alone (full speed).
  const std::string text = short_and_long_reader(kBusyNoise);
  const auto none = run_text(text, {"noise.irq_busy_rate=0"});
  const auto busy = run_text(text);
  EXPECT_NEAR(passes_ratio(busy, none), 0.5 / 1.1 + 0.5, 0.015);  // not 1 / 1.1 throughout
}

// Two threads on node 1 sweep what main wrote on node 0 (validate's
// shared-sweep-threads, smaller): whoever hints a page first migrates it,
// and the other waits on its migration entry if it gets there meanwhile.
std::string shared_sweep() {
  return R"(
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "1GiB"
llc_per_socket = "8MiB"
[kernel]
version = "6.1"
numa_balancing = 1
transparent_hugepage = "never"
[run]
program = "main"
[[programs.main]]
op = "pin"
nodes = [0]
[[programs.main]]
op = "map"
region = "data"
size = "16MiB"
[[programs.main]]
op = "touch"
region = "data"
mode = "write"
[[programs.main]]
op = "threads"
count = 2
program = "reader"
[[programs.main]]
op = "wait"
[[programs.reader]]
op = "pin"
nodes = [1]
[[programs.reader]]
op = "loop"
duration = "2s"
body = [ { op = "sweep", region = "data", elem_size = 8 } ]
)";
}

TEST(NoiseWorld, DesynchronisedThreadsWaitOnFewerMigrationEntriesThanThreadsInLockstep) {
  // Without the image's pages: the one thread that faults first on a page
  // of the image both use would put them out of lockstep by itself.
  const auto lockstep =
      run_text(shared_sweep(), {"noise.enabled=false", "run.process_image=mapped"});
  const auto noisy = run_text(shared_sweep(), {"run.process_image=mapped"});
  ASSERT_EQ(lockstep.vm("pgmigrate_success"), noisy.vm("pgmigrate_success"));
  // Faults beyond the first touches and the hinting faults: waits.
  auto waits = [](const testing::Ran& r) {
    return r.vm("pgfault") - 4096 - r.vm("numa_hint_faults");
  };
  EXPECT_GT(waits(lockstep), 2 * waits(noisy));
}

}  // namespace
}  // namespace mmsim
