// mmsim-exec, the native executor (tools/exec): small plans run for real on
// this host, and what the report says of them; its sweep loops (sweep.h),
// tested in-process. Cgroups are fake trees under a temp dir.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "exec/sweep.h"
#include "plan/plan.h"
#include "support/cli_run.h"

namespace mmsim::exec {
namespace {

namespace fs = std::filesystem;
using cli::testing::slurp;
using cli::testing::TempDir;
using plan::Op;
using plan::OpKind;
using plan::Plan;
using plan::Program;
using plan::RunReport;
using plan::TaskResult;

constexpr int64_t kMs = 1'000'000;

// In sanitizer builds (cmake -DMMSIM_SANITIZE=ON) mmsim-exec carries ASan too:
// its mlock does nothing, its shadow memory faults in the collector, and its
// SIGSEGV handler would turn a fault into exit(1) (so the tests turn it off).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

// --- running mmsim-exec ----------------------------------------------------

struct Exec {
  int code = -1;  // exit status; 128 + signal if killed
  std::string out, err;
  std::optional<RunReport> report;  // parsed from out, if any
  rusage ru{};                      // the collector and everything it reaped
  pid_t pid = 0;                    // the collector's
};

// Runs mmsim-exec with `args` (in a process group of its own, killed whole
// after 60 s), its output captured; calls `while_running` with its pid once
// it started.
Exec run_exec(const TempDir& t, const std::vector<std::string>& args,
              const std::function<void(pid_t)>& while_running = nullptr) {
  const std::string out = t.file("stdout"), err = t.file("stderr");
  std::vector<std::string> argv = {MMSIM_EXEC_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  Exec r;
  r.pid = ::fork();
  if (r.pid == 0) {
    ::setpgid(0, 0);
    if (kAsan) {
      const char* opts = std::getenv("ASAN_OPTIONS");
      const std::string all = std::string(opts ? opts : "") + ":handle_segv=0:handle_sigbus=0";
      ::setenv("ASAN_OPTIONS", all.c_str(), 1);
    }
    if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr)) {
      ::_exit(126);
    }
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  EXPECT_GT(r.pid, 0);
  ::setpgid(r.pid, r.pid);
  if (while_running) while_running(r.pid);
  int status = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    const pid_t w = ::wait4(r.pid, &status, WNOHANG, &r.ru);
    if (w == r.pid) break;
    if (std::chrono::steady_clock::now() > give_up) {
      ADD_FAILURE() << "mmsim-exec ran for more than 60 s";
      ::kill(-r.pid, SIGKILL);
      ::wait4(r.pid, &status, 0, &r.ru);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  std::string error;
  if (r.code == 0 && !r.out.empty()) {
    r.report = plan::read_report(r.out, &error);
    EXPECT_TRUE(r.report) << error << "\n" << r.out;
  }
  return r;
}

// Writes `p` and runs it with a fresh scratch directory.
Exec run_plan(const TempDir& t, const Plan& p, std::vector<std::string> extra = {},
              const std::function<void(pid_t)>& while_running = nullptr) {
  fs::create_directories(t.file("scratch"));
  std::vector<std::string> args = {"--plan", t.write("plan.txt", plan::write_plan(p)), "--scratch",
                                   t.file("scratch")};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_exec(t, args, while_running);
}

// --- building plans --------------------------------------------------------

Op map_anon(uint32_t region, uint64_t pages, bool writable = true, bool shared = false) {
  Op op;
  op.kind = OpKind::kMap;
  op.region = region;
  op.pages = pages;
  op.writable = writable;
  op.shared = shared;
  return op;
}

Op map_file(uint32_t region, int32_t file, uint64_t pages) {
  Op op = map_anon(region, pages, false);
  op.file = file;
  return op;
}

Op pages_op(OpKind kind, uint32_t region, bool write = false, uint64_t first = 0, uint64_t nr = 0) {
  Op op;
  op.kind = kind;
  op.region = region;
  op.write = write;
  op.first_page = first;
  op.nr_pages = nr;
  return op;
}

Op count(uint32_t counter, uint64_t by) {
  Op op;
  op.kind = OpKind::kCount;
  op.counter = counter;
  op.count = by;
  return op;
}

Op start(OpKind kind, uint32_t program, uint64_t n) {
  Op op;
  op.kind = kind;
  op.program = program;
  op.count = n;
  return op;
}

Op simple(OpKind kind, int64_t duration_ns = 0) {
  Op op;
  op.kind = kind;
  op.duration_ns = duration_ns;
  return op;
}

Op loop(uint64_t n, int64_t duration_ns, std::vector<Op> body) {
  Op op = simple(OpKind::kLoop, duration_ns);
  op.count = n;
  op.body = std::move(body);
  return op;
}

// A plan of these programs (the first one starts), with `regions` regions and
// `counters` counters.
Plan plan_of(std::vector<Program> programs, size_t regions = 1, size_t counters = 1) {
  Plan p;
  p.scenario = "exec test";
  p.page_size = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // (std::string("r").append: "r" + std::to_string trips GCC 12's -Wrestrict.)
  for (size_t i = 0; i < regions; ++i)
    p.regions.push_back(std::string("r").append(std::to_string(i)));
  for (size_t i = 0; i < counters; ++i)
    p.counters.push_back(std::string("c").append(std::to_string(i)));
  p.programs = std::move(programs);
  return p;
}

// The tids of the tasks on this host whose comm is `name`.
std::vector<std::string> tasks_named(const std::string& name) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    for (const auto& task : fs::directory_iterator(proc.path() / "task", ec)) {
      if (slurp((task.path() / "comm").string()) == name + "\n") {
        found.push_back(task.path().filename().string());
      }
    }
  }
  return found;
}

int host_nodes() {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/node")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && std::isdigit(name[4])) ++n;
  }
  return n;
}

// --- the report ------------------------------------------------------------

TEST(Exec, TouchingFreshAnonymousPagesFaultsInTheTaskNotTheCollector) {
  TempDir t;
  constexpr uint64_t kPages = 4096;
  const Exec r = run_plan(
      t, plan_of({Program{"toucher", {map_anon(0, kPages), pages_op(OpKind::kTouch, 0, true)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 1u);
  const TaskResult& task = r.report->tasks[0];
  EXPECT_EQ(task.end, "exit");
  EXPECT_GE(task.minflt, kPages);
  EXPECT_EQ(task.parent, 0);
  EXPECT_NE(task.tgid, r.pid);  // the collector is not a task of the run
  // The collector's own faults: what wait4 counts for it and what it reaped,
  // less the task's.
  const uint64_t all = static_cast<uint64_t>(r.ru.ru_minflt);
  if (!kAsan) {
    EXPECT_LT(all - std::min(all, task.minflt), kPages / 4);
  }
}

TEST(Exec, AForkedChildsCountersComeBack) {
  TempDir t;
  const Exec r = run_plan(
      t,
      plan_of({Program{"parent", {start(OpKind::kFork, 1, 2), simple(OpKind::kWait), count(0, 1)}},
               Program{"child", {count(0, 7)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 3u) << r.out;
  const TaskResult& parent = r.report->tasks[0];
  EXPECT_EQ(parent.program, 0u);
  EXPECT_EQ(parent.counters, std::vector<uint64_t>{1});
  for (size_t i = 1; i < 3; ++i) {
    const TaskResult& child = r.report->tasks[i];
    EXPECT_EQ(child.program, 1u);
    EXPECT_EQ(child.parent, parent.tid);
    EXPECT_EQ(child.tgid, child.tid);  // a process of its own
    EXPECT_NE(child.tgid, parent.tgid);
    EXPECT_EQ(child.counters, std::vector<uint64_t>{7});
    EXPECT_EQ(child.end, "exit");
    EXPECT_LE(child.end_ns, parent.end_ns);  // the parent waited for it
  }
}

TEST(Exec, ThreadsAreTasksOfTheirOwnWithTheirOwnCounters) {
  TempDir t;
  const Exec r = run_plan(t, plan_of({Program{"main", {start(OpKind::kThreads, 1, 3)}},
                                      Program{"worker", {count(1, 2)}}},
                                     1, 2));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 4u) << r.out;
  const TaskResult& main = r.report->tasks[0];
  EXPECT_EQ(main.counters, (std::vector<uint64_t>{0, 0}));
  std::vector<int64_t> tids = {main.tid};
  for (size_t i = 1; i < 4; ++i) {
    const TaskResult& w = r.report->tasks[i];
    EXPECT_EQ(w.tgid, main.tgid);  // the same process
    EXPECT_EQ(w.parent, main.tid);
    EXPECT_EQ(w.counters, (std::vector<uint64_t>{0, 2}));
    tids.push_back(w.tid);
  }
  std::sort(tids.begin(), tids.end());
  EXPECT_EQ(std::unique(tids.begin(), tids.end()), tids.end());
}

TEST(Exec, ThreadsShareTheirProcesssRegions) {
  // The thread touches the mapping its process made before starting it.
  TempDir t;
  const Exec r = run_plan(
      t, plan_of({Program{"main",
                          {map_anon(0, 16), start(OpKind::kThreads, 1, 1), simple(OpKind::kWait)}},
                  Program{"thread", {pages_op(OpKind::kTouch, 0, true), count(0, 1)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 2u);
  EXPECT_EQ(r.report->tasks[1].end, "exit");
  EXPECT_EQ(r.report->tasks[1].counters, std::vector<uint64_t>{1});
  EXPECT_GE(r.report->tasks[1].minflt, 16u);
}

TEST(Exec, ALoopWithADurationEnds) {
  TempDir t;
  const Exec r = run_plan(
      t, plan_of({Program{"m", {loop(0, 50 * kMs, {simple(OpKind::kSleep, kMs), count(0, 1)})}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  const TaskResult& task = r.report->tasks.at(0);
  EXPECT_EQ(task.end, "exit");
  EXPECT_GE(task.counters[0], 2u);
  EXPECT_LE(task.counters[0], 51u);
  EXPECT_GE(task.end_ns - task.start_ns, 50 * kMs);
  EXPECT_FALSE(r.report->time_limit_hit);
  EXPECT_GE(r.report->elapsed_ns, 50 * kMs);
}

TEST(Exec, ALoopWithACountRunsItsBodyThatManyTimes) {
  TempDir t;
  const Exec r = run_plan(t, plan_of({Program{"m", {loop(3, 0, {loop(4, 0, {count(0, 5)})})}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks.at(0).counters, std::vector<uint64_t>{60});
}

TEST(Exec, ACounterSaturatesAt2To64Less1) {
  TempDir t;
  const Exec r = run_plan(t, plan_of({Program{"m", {count(0, UINT64_MAX - 1), count(0, 5)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks.at(0).counters, std::vector<uint64_t>{UINT64_MAX});
}

TEST(Exec, TheTimeLimitStopsASleepingTask) {
  TempDir t;
  Plan p = plan_of({Program{"sleeper", {simple(OpKind::kSleep, 100'000 * kMs), count(0, 1)}}});
  p.time_limit_ns = 100 * kMs;
  const Exec r = run_plan(t, p);
  ASSERT_EQ(r.code, 0) << r.err;
  const TaskResult& task = r.report->tasks.at(0);
  EXPECT_EQ(task.end, "time_limit");
  EXPECT_EQ(task.counters, std::vector<uint64_t>{0});
  EXPECT_TRUE(r.report->time_limit_hit);
  EXPECT_GE(task.end_ns, 100 * kMs);
  EXPECT_LT(task.end_ns, 5000 * kMs);
}

TEST(Exec, TheTimeLimitStopsLoopingTasksInEveryProcessAndThread) {
  TempDir t;
  Plan p = plan_of(
      {Program{"main",
               {start(OpKind::kFork, 1, 1), start(OpKind::kThreads, 1, 1),
                loop(UINT64_MAX, 0, {count(0, 1)})}},
       Program{"spinner",
               {map_anon(0, 4), loop(0, int64_t{1} << 62, {pages_op(OpKind::kSweep, 0, true)})}}});
  p.time_limit_ns = 100 * kMs;
  const Exec r = run_plan(t, p);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 3u);
  for (const TaskResult& task : r.report->tasks) {
    EXPECT_EQ(task.end, "time_limit") << task.tid;
    EXPECT_LT(task.end_ns, 5000 * kMs);
  }
  EXPECT_GT(r.report->tasks[0].counters[0], 0u);
}

TEST(Exec, ASweepWithComputeNsTakesThatLongPerElement) {
  TempDir t;
  Op sweep = pages_op(OpKind::kSweep, 0);
  sweep.elem_size = 8;
  sweep.compute_ns = 100;  // 512 elements of a 4 KiB page: 51.2 us per page
  const Exec r = run_plan(t, plan_of({Program{"m", {map_anon(0, 1000), sweep}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  const TaskResult& task = r.report->tasks.at(0);
  const int64_t per_page = 100 * ::sysconf(_SC_PAGESIZE) / 8;
  EXPECT_EQ(task.end, "exit");
  EXPECT_GE(task.end_ns - task.start_ns, 1000 * per_page);
}

// Page-cache pages read by a fault on a file: majflt, or (on kernels that
// count a fault that waited for a read as minor) the page cache's growth.
TEST(Exec, ASweepOfAnUncachedFileTakesMajorFaultsAndOfACachedOneNone) {
  for (const bool cached : {false, true}) {
    SCOPED_TRACE(cached ? "cached" : "uncached");
    TempDir t;
    Plan p = plan_of({Program{"reader", {map_file(0, 0, 256), pages_op(OpKind::kSweep, 0)}}});
    p.files = {plan::File{"data.bin", 256, cached}};
    const Exec r = run_plan(t, p);
    ASSERT_EQ(r.code, 0) << r.err;
    const TaskResult& task = r.report->tasks.at(0);
    EXPECT_EQ(task.end, "exit");
    if (cached) {
      EXPECT_EQ(task.majflt, 0u);
    } else {
      EXPECT_GE(task.majflt, 1u);
    }
    EXPECT_TRUE(fs::is_empty(t.file("scratch")));  // the file is removed
  }
}

TEST(Exec, AnAbsurdMmapEndsTheTaskWithENOMEM) {
  TempDir t;
  const Exec r =
      run_plan(t, plan_of({Program{"greedy", {map_anon(0, uint64_t{1} << 40), count(0, 1)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  const TaskResult& task = r.report->tasks.at(0);
  EXPECT_EQ(task.end, "error: mmap: ENOMEM");
  EXPECT_EQ(task.counters, std::vector<uint64_t>{0});  // it stopped there
}

TEST(Exec, AFailedCallEndsOnlyItsTaskNotTheRun) {
  TempDir t;
  const Exec r = run_plan(
      t, plan_of({Program{"main", {start(OpKind::kFork, 1, 1), simple(OpKind::kWait), count(0, 3)}},
                  Program{"greedy", {map_anon(0, uint64_t{1} << 40)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 2u);
  EXPECT_EQ(r.report->tasks[0].end, "exit");
  EXPECT_EQ(r.report->tasks[0].counters, std::vector<uint64_t>{3});
  EXPECT_EQ(r.report->tasks[1].end, "error: mmap: ENOMEM");
}

TEST(Exec, WritingToAReadOnlyMappingIsKilledBySigsegv) {
  TempDir t;
  const Exec r = run_plan(
      t, plan_of({Program{
             "bad", {map_anon(0, 4, false), pages_op(OpKind::kTouch, 0, true), count(0, 1)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 1u);
  EXPECT_EQ(r.report->tasks[0].end, "killed by SIGSEGV");
  EXPECT_EQ(r.report->tasks[0].counters, std::vector<uint64_t>{0});
}

TEST(Exec, AChildKilledBySigsegvIsReportedAndItsParentGoesOn) {
  TempDir t;
  const Exec r = run_plan(t, plan_of({Program{"main",
                                              {map_anon(0, 4, false), start(OpKind::kFork, 1, 1),
                                               simple(OpKind::kWait), count(0, 1)}},
                                      Program{"bad", {pages_op(OpKind::kTouch, 0, true)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 2u);
  EXPECT_EQ(r.report->tasks[0].end, "exit");
  EXPECT_EQ(r.report->tasks[0].counters, std::vector<uint64_t>{1});
  EXPECT_EQ(r.report->tasks[1].end, "killed by SIGSEGV");
  EXPECT_EQ(r.report->tasks[1].program, 1u);
  EXPECT_EQ(r.report->tasks[1].parent, r.report->tasks[0].tid);
}

TEST(Exec, AThreadsFaultKillsItsWholeProcessAndEachOfItsTasksIsReportedKilled) {
  TempDir t;
  const Exec r =
      run_plan(t, plan_of({Program{"main", {start(OpKind::kFork, 1, 1), simple(OpKind::kWait)}},
                           Program{"child",
                                   {map_anon(0, 4, false), start(OpKind::kThreads, 2, 1),
                                    simple(OpKind::kSleep, 10'000 * kMs)}},
                           Program{"bad", {pages_op(OpKind::kTouch, 0, true)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 3u) << r.out;
  EXPECT_EQ(r.report->tasks[0].end, "exit");
  EXPECT_EQ(r.report->tasks[1].end, "killed by SIGSEGV");
  EXPECT_EQ(r.report->tasks[2].end, "killed by SIGSEGV");
  EXPECT_EQ(r.report->tasks[2].tgid, r.report->tasks[1].tgid);
  EXPECT_LT(r.report->elapsed_ns, 5000 * kMs);
}

TEST(Exec, TouchingPastTheEndOfARegionIsKilledBySigsegvAfterTheMappedPages) {
  TempDir t;
  const Exec r = run_plan(
      t, plan_of({Program{"m", {map_anon(0, 8), pages_op(OpKind::kTouch, 0, true, 4, 8)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks.at(0).end, "killed by SIGSEGV");
}

TEST(Exec, MadviseOverARangeNotAllMappedFailsWithENOMEM) {
  TempDir t;
  const Exec r = run_plan(
      t, plan_of({Program{"m", {map_anon(0, 8), pages_op(OpKind::kMadvise, 0, false, 4, 8)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks.at(0).end, "error: madvise: ENOMEM");
}

// As in the simulator: the second map of a region is refused and the first
// mapping stays, so the touch faults its 4 pages, not 64. Compared with a
// run that maps 64 pages once: the task's other faults are its start-up's,
// which vary with the build (about 25 static, over 100 under ASan).
TEST(Exec, MappingARegionAgainKeepsItsFirstMapping) {
  TempDir t;
  const Exec twice = run_plan(
      t, plan_of({Program{"m",
                          {map_anon(0, 4), map_anon(0, 64), pages_op(OpKind::kTouch, 0, true),
                           simple(OpKind::kUnmap), count(0, 1)}}}));
  const Exec once =
      run_plan(t, plan_of({Program{"m",
                                   {map_anon(0, 64), pages_op(OpKind::kTouch, 0, true),
                                    simple(OpKind::kUnmap), count(0, 1)}}}));
  ASSERT_EQ(twice.code, 0) << twice.err;
  ASSERT_EQ(once.code, 0) << once.err;
  EXPECT_EQ(twice.report->tasks.at(0).end, "exit");
  EXPECT_GE(once.report->tasks.at(0).minflt, twice.report->tasks.at(0).minflt + 40);
}

TEST(Exec, MlockPopulatesTheRange) {
  if (kAsan) GTEST_SKIP() << "ASan's mlock does nothing";
  TempDir t;
  const Exec r =
      run_plan(t, plan_of({Program{"m", {map_anon(0, 256), pages_op(OpKind::kMlock, 0)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  const TaskResult& task = r.report->tasks.at(0);
  if (task.end == "error: mlock: EPERM" || task.end == "error: mlock: ENOMEM") {
    GTEST_SKIP() << "this host does not let mmsim-exec lock 1 MiB (" << task.end << ")";
  }
  EXPECT_EQ(task.end, "exit");
  EXPECT_GE(task.minflt, 256u);
}

TEST(Exec, MbindToANodeTheHostLacksEndsTheTaskWithEINVAL) {
  if (fs::exists("/sys/devices/system/node/node1000")) GTEST_SKIP() << "this host has node 1000";
  TempDir t;
  Op map = map_anon(0, 4);
  map.policy = plan::Policy::kBind;
  map.nodes = {1000};
  const Exec r = run_plan(t, plan_of({Program{"m", {map}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks.at(0).end, "error: mbind: EINVAL");
}

TEST(Exec, MbindBindsAMappingToNodeOne) {
  if (host_nodes() < 2) GTEST_SKIP() << "needs a host with two NUMA nodes or more";
  TempDir t;
  Op map = map_anon(0, 64);
  map.policy = plan::Policy::kBind;
  map.nodes = {1};
  const Exec r = run_plan(t, plan_of({Program{"m", {map, pages_op(OpKind::kTouch, 0, true)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks.at(0).end, "exit");
}

TEST(Exec, AResultLongerThanPipeBufComesBackWhole) {
  TempDir t;
  std::vector<Op> ops;
  for (uint32_t i = 0; i < 600; ++i) ops.push_back(count(i, UINT64_MAX - i));
  const Exec r = run_plan(t, plan_of({Program{"many", ops}, Program{"x", {}}}, 1, 600));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto& c = r.report->tasks.at(0).counters;
  ASSERT_EQ(c.size(), 600u);
  for (uint32_t i = 0; i < 600; ++i) EXPECT_EQ(c[i], UINT64_MAX - i);
}

TEST(Exec, AChildThatDoesNotWaitStillHasItsChildrenWaitedFor) {
  TempDir t;
  const Exec r = run_plan(
      t, plan_of({Program{"main", {start(OpKind::kFork, 1, 1)}},
                  Program{"middle", {start(OpKind::kFork, 2, 1), start(OpKind::kThreads, 2, 1)}},
                  Program{"leaf", {simple(OpKind::kSleep, 50 * kMs), count(0, 1)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 4u) << r.out;
  for (const TaskResult& task : r.report->tasks) EXPECT_EQ(task.end, "exit");
  EXPECT_LT(r.report->tasks[0].end_ns, r.report->tasks[3].end_ns);  // main did not wait
  EXPECT_GE(r.report->elapsed_ns, 50 * kMs);
}

TEST(Exec, AFileMappingSharedAndWritableCanBeWritten) {
  TempDir t;
  Op map = map_file(0, 0, 8);
  map.shared = true;
  map.writable = true;
  Plan p = plan_of({Program{"w", {map, pages_op(OpKind::kSweep, 0, true)}}});
  p.files = {plan::File{"f", 8, true}};
  const Exec r = run_plan(t, p);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks.at(0).end, "exit");
}

TEST(Exec, TheReportGoesToOutWhenGiven) {
  TempDir t;
  const Exec r = run_plan(t, plan_of({Program{"m", {count(0, 4)}}}), {"--out", t.file("r.txt")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  std::string error;
  const auto report = plan::read_report(slurp(t.file("r.txt")), &error);
  ASSERT_TRUE(report) << error;
  EXPECT_EQ(report->tasks.at(0).counters, std::vector<uint64_t>{4});
}

TEST(Exec, TasksAreNamedAfterTheirProgramCutTo15Characters) {
  TempDir t;
  std::vector<std::string> seen;
  const Exec r = run_plan(
      t,
      plan_of({Program{"mmsim-exec-test-naming",
                       {start(OpKind::kThreads, 1, 1), simple(OpKind::kSleep, 500 * kMs)}},
               Program{"mmsim-exec-test-naming-thread", {simple(OpKind::kSleep, 500 * kMs)}}}),
      {}, [&](pid_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        seen = tasks_named("mmsim-exec-test");
      });
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 2u);
  std::sort(seen.begin(), seen.end());
  std::vector<std::string> want = {std::to_string(r.report->tasks[0].tid),
                                   std::to_string(r.report->tasks[1].tid)};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(seen, want);
}

TEST(Exec, AnInterruptKillsEveryTaskRemovesTheFilesAndExits128PlusTheSignal) {
  TempDir t;
  Plan p = plan_of({Program{"mmsim-exec-intr",
                            {start(OpKind::kFork, 1, 2), start(OpKind::kThreads, 1, 1),
                             simple(OpKind::kSleep, 60'000 * kMs)}},
                    Program{"mmsim-exec-intr", {simple(OpKind::kSleep, 60'000 * kMs)}}});
  p.files = {plan::File{"f", 4, false}};
  size_t running = 0;
  const Exec r = run_plan(t, p, {"--out", t.file("report")}, [&](pid_t pid) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    running = tasks_named("mmsim-exec-intr").size();
    ::kill(pid, SIGTERM);
  });
  EXPECT_EQ(running, 4u);
  EXPECT_EQ(r.code, 128 + SIGTERM);
  EXPECT_EQ(r.err, "mmsim-exec: interrupted by SIGTERM; the run's processes were killed\n");
  EXPECT_TRUE(tasks_named("mmsim-exec-intr").empty());
  EXPECT_TRUE(fs::is_empty(t.file("scratch")));
  EXPECT_FALSE(fs::exists(t.file("report")));
}

// --- cgroups (a fake tree) -------------------------------------------------

TEST(Exec, ACgroupOpWritesThePidToTheCgroupsProcsFile) {
  TempDir t;
  fs::create_directories(t.file("cg/bench"));
  t.write("cg/cgroup.procs", "");
  t.write("cg/bench/cgroup.procs", "");
  Op move;
  move.kind = OpKind::kCgroup;
  move.cgroup = 1;
  Plan p = plan_of({Program{"m", {move, count(0, 1)}}});
  p.cgroups = {"/bench"};
  const Exec r = run_plan(t, p, {"--cgroup-root", t.file("cg")});
  ASSERT_EQ(r.code, 0) << r.err;
  const TaskResult& task = r.report->tasks.at(0);
  EXPECT_EQ(task.end, "exit");
  EXPECT_EQ(slurp(t.file("cg/bench/cgroup.procs")), std::to_string(task.tgid) + "\n");
  EXPECT_EQ(slurp(t.file("cg/cgroup.procs")), "");  // not the collector
}

TEST(Exec, TheFirstTaskStartsInTheInitCgroup) {
  TempDir t;
  fs::create_directories(t.file("cg/a"));
  t.write("cg/cgroup.procs", "");
  t.write("cg/a/cgroup.procs", "");
  Plan p = plan_of({Program{"m", {}}});
  p.cgroups = {"/a"};
  p.init_cgroup = 1;
  const Exec r = run_plan(t, p, {"--cgroup-root", t.file("cg")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(t.file("cg/a/cgroup.procs")), std::to_string(r.report->tasks.at(0).tgid) + "\n");
}

TEST(Exec, AMissingCgroupExits3) {
  TempDir t;
  fs::create_directories(t.file("cg"));
  t.write("cg/cgroup.procs", "");
  Plan p = plan_of({Program{"m", {}}});
  p.cgroups = {"/missing"};
  const Exec r = run_plan(t, p, {"--cgroup-root", t.file("cg")});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("mmsim-exec: cgroup " + t.file("cg") + "/missing is missing"),
            std::string::npos)
      << r.err;
}

// --- bad input and a refusing host -----------------------------------------

TEST(Exec, ABadPlanExits2NamingTheFileAndLine) {
  TempDir t;
  fs::create_directories(t.file("scratch"));
  std::string text = plan::write_plan(plan_of({Program{"m", {}}}));
  text += "op kind=jump\n";
  const std::string path = t.write("bad.plan", text);
  const Exec r = run_exec(t, {"--plan", path, "--scratch", t.file("scratch")});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "mmsim-exec: " + path + ": line 6: unknown op kind \"jump\"\n");
  EXPECT_EQ(r.out, "");
}

TEST(Exec, BadUsageExits2) {
  TempDir t;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{},
        {"--plan", t.file("p")},
        {"--scratch", t.file("s")},
        {"--plan"},
        {"--bogus", "1"},
        {"--plan", t.file("none"), "--scratch", t.file("s")}}) {
    const Exec r = run_exec(t, args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("mmsim-exec: ", 0), 0u) << r.err;
  }
}

TEST(Exec, AScratchDirectoryThatDoesNotExistExits3) {
  TempDir t;
  const std::string plan = t.write("p", plan::write_plan(plan_of({Program{"m", {}}})));
  const Exec r = run_exec(t, {"--plan", plan, "--scratch", t.file("nowhere")});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("is not a writable directory"), std::string::npos) << r.err;
}

TEST(Exec, AFileThatAlreadyExistsInTheScratchDirectoryIsLeftAloneAndExits3) {
  TempDir t;
  fs::create_directories(t.file("scratch"));
  t.write("scratch/mine", "keep");
  Plan p = plan_of({Program{"m", {}}});
  p.files = {plan::File{"new", 1, false}, plan::File{"mine", 1, false}};
  const Exec r = run_plan(t, p);
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(slurp(t.file("scratch/mine")), "keep");
  EXPECT_FALSE(fs::exists(t.file("scratch/new")));
}

// --- the sweep loops -------------------------------------------------------

// --- pin (sched_setaffinity) -----------------------------------------------

Op pin_cpus(std::vector<uint32_t> cpus) {
  Op op;
  op.kind = OpKind::kPin;
  op.cpus = std::move(cpus);
  return op;
}

Op pin_nodes(std::vector<uint16_t> nodes) {
  Op op;
  op.kind = OpKind::kPin;
  op.nodes = std::move(nodes);
  return op;
}

// The Cpus_allowed_list of a task (/proc/<tid>/status), or "".
std::string cpus_allowed(const std::string& tid) {
  const std::string status = slurp("/proc/" + tid + "/status");
  const std::string key = "Cpus_allowed_list:\t";
  const size_t at = status.find(key);
  if (at == std::string::npos) return "";
  const size_t end = status.find('\n', at);
  return status.substr(at + key.size(), end - at - key.size());
}

TEST(Exec, APinToCpuZeroHoldsForTheTaskAndTheThreadsAndChildrenItStartsAfter) {
  TempDir t;
  const std::string mine = cpus_allowed("self");
  std::map<std::string, std::vector<std::string>> seen;  // program -> masks
  const Exec r = run_plan(
      t,
      plan_of(
          {Program{"mmsim-pin-main",
                   {start(OpKind::kFork, 2, 1), pin_cpus({0}), start(OpKind::kThreads, 1, 1),
                    start(OpKind::kFork, 1, 1), simple(OpKind::kSleep, 600 * kMs), count(0, 1)}},
           Program{"mmsim-pin-kid", {simple(OpKind::kSleep, 600 * kMs), count(0, 1)}},
           Program{"mmsim-pin-early", {simple(OpKind::kSleep, 600 * kMs)}}}),
      {}, [&](pid_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        for (const char* name : {"mmsim-pin-main", "mmsim-pin-kid", "mmsim-pin-early"}) {
          for (const std::string& tid : tasks_named(name)) seen[name].push_back(cpus_allowed(tid));
        }
      });
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 4u);
  for (const TaskResult& task : r.report->tasks) EXPECT_EQ(task.end, "exit") << task.program;
  EXPECT_EQ(seen["mmsim-pin-main"], std::vector<std::string>{"0"});
  EXPECT_EQ(seen["mmsim-pin-kid"], (std::vector<std::string>{"0", "0"}));
  // Forked before the pin: the collector's mask, as this process's.
  EXPECT_EQ(seen["mmsim-pin-early"], std::vector<std::string>{mine});
  // Each task but the early one counts once (the report's order is the
  // order the tasks ended in, which load may change).
  uint64_t counted = 0;
  for (const TaskResult& task : r.report->tasks) {
    if (!task.counters.empty()) counted += task.counters[0];
  }
  EXPECT_EQ(counted, 3u);
}

TEST(Exec, APinToNodeZeroTakesTheCpusSysfsListsForIt) {
  TempDir t;
  std::string want = slurp("/sys/devices/system/node/node0/cpulist");
  while (!want.empty() && want.back() == '\n') want.pop_back();
  ASSERT_FALSE(want.empty());
  std::vector<std::string> seen;
  const Exec r =
      run_plan(t,
               plan_of({Program{"mmsim-pin-node",
                                {pin_nodes({0}), simple(OpKind::kSleep, 500 * kMs), count(0, 5)}}}),
               {}, [&](pid_t) {
                 std::this_thread::sleep_for(std::chrono::milliseconds(250));
                 for (const std::string& tid : tasks_named("mmsim-pin-node")) {
                   seen.push_back(cpus_allowed(tid));
                 }
               });
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.report->tasks.size(), 1u);
  EXPECT_EQ(r.report->tasks[0].end, "exit");
  EXPECT_EQ(r.report->tasks[0].counters[0], 5u);
  EXPECT_EQ(seen, std::vector<std::string>{want});
}

TEST(Exec, APinToACpuTheHostLacksEndsTheTaskWithEINVAL) {
  TempDir t;
  const Exec r = run_plan(t, plan_of({Program{"m", {pin_cpus({4000}), count(0, 1)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks[0].end, "error: sched_setaffinity: EINVAL");
  EXPECT_EQ(r.report->tasks[0].counters[0], 0u);
}

TEST(Exec, APinToANodeTheHostLacksEndsTheTaskWithENOENT) {
  TempDir t;
  const Exec r = run_plan(t, plan_of({Program{"m", {pin_nodes({1000}), count(0, 1)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks[0].end, "error: node cpulist: ENOENT");
}

// --- tmpfs files -------------------------------------------------------------

bool on_tmpfs(const std::string& path) {
  struct statfs s {};
  return ::statfs(path.c_str(), &s) == 0 && s.f_type == TMPFS_MAGIC;
}

TEST(Exec, ATmpfsFileIsCreatedOnATmpfsAndRemovedAfterTheRun) {
  if (!on_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not a tmpfs here";
  TempDir t;
  const std::string name = "mmsim-exec-test-" + std::to_string(::getpid()) + ".shm";
  Plan p = plan_of({Program{"m", {simple(OpKind::kSleep, 500 * kMs)}}});
  p.files = {plan::File{"disk.dat", 4, true}, plan::File{name, 4, true, true}};
  std::vector<std::string> found;
  bool disk_on_scratch = false, shm_on_tmpfs = false;
  const Exec r = run_plan(t, p, {}, [&](pid_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    std::error_code ec;
    for (const auto& d : fs::directory_iterator("/dev/shm", ec)) {
      if (fs::exists(d.path() / name)) found.push_back((d.path() / name).string());
    }
    shm_on_tmpfs = found.size() == 1 && on_tmpfs(found[0]);
    disk_on_scratch = fs::exists(t.file("scratch") + "/disk.dat");
  });
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(shm_on_tmpfs);
  EXPECT_EQ(found[0].rfind("/dev/shm/mmsim-exec-", 0), 0u) << found[0];
  EXPECT_TRUE(disk_on_scratch);
  EXPECT_FALSE(fs::exists(found[0]));
  EXPECT_FALSE(fs::exists(fs::path(found[0]).parent_path()));
  EXPECT_TRUE(fs::is_empty(t.file("scratch")));
}

TEST(Exec, WritingASharedMappingOfATmpfsFileMakesShmemPages) {
  if (!on_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not a tmpfs here";
  TempDir t;
  const uint64_t pages = 2048;  // 8 MiB: well above the host's noise
  Op map = map_file(0, 0, pages);
  map.shared = true;
  map.writable = true;
  Plan p = plan_of({Program{"m", {map, pages_op(OpKind::kTouch, 0, true)}}});
  p.files = {plan::File{"t.shm", pages, false, true}};
  const Exec r = run_plan(t, p);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks[0].end, "exit");
  int64_t shmem = 0;
  for (const auto& [name, delta] : r.report->vmstat)
    if (name == "nr_shmem") shmem = delta;
  EXPECT_GE(shmem, static_cast<int64_t>(pages) * 9 / 10);
  EXPECT_EQ(r.report->tasks[0].majflt, 0u);
}

TEST(Exec, ATmpfsDirectoryThatIsNotATmpfsExits3) {
  TempDir t;
  fs::create_directories(t.file("notshm"));
  if (on_tmpfs(t.file("notshm"))) GTEST_SKIP() << "the test's temp dir is a tmpfs";
  Plan p = plan_of({Program{"m", {count(0, 1)}}});
  p.files = {plan::File{"t.shm", 1, false, true}};
  const Exec r = run_plan(t, p, {"--tmpfs", t.file("notshm")});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("is not a tmpfs"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(t.file("notshm")));
}

TEST(ExecSweep, AReadOfFourPagesLoadsEveryElementOnce) {
  constexpr size_t kBytes = 4 * 4096;
  std::vector<uint64_t> storage(kBytes / 8);
  auto* p = reinterpret_cast<unsigned char*>(storage.data());
  for (const uint32_t elem : {1u, 2u, 4u, 8u}) {
    SCOPED_TRACE("elem_size " + std::to_string(elem));
    // Element i holds i + 1 (in its low bytes): the sum names every element.
    const uint64_t n = kBytes / elem;
    std::fill(storage.begin(), storage.end(), 0);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t v = (i + 1) & (elem == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * elem)) - 1);
      std::memcpy(p + i * elem, &v, elem);
    }
    uint64_t want = 0;
    for (uint64_t i = 0; i < n; ++i) {
      want += (i + 1) & (elem == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * elem)) - 1);
    }
    const SweepCount c = sweep_read(p, kBytes, elem);
    EXPECT_EQ(c.elements, n);
    EXPECT_EQ(c.sum, want);
  }
}

TEST(ExecSweep, AnElementWiderThanAWordIsOneLoadAndOneStoreOfItsFirstWord) {
  constexpr size_t kBytes = 4 * 4096;
  std::vector<uint64_t> storage(kBytes / 8, 0);
  auto* p = reinterpret_cast<unsigned char*>(storage.data());
  for (const uint32_t elem : {16u, 64u, 4096u}) {
    SCOPED_TRACE("elem_size " + std::to_string(elem));
    std::fill(storage.begin(), storage.end(), 0);
    const uint64_t n = kBytes / elem;
    const SweepCount w = sweep_write(p, kBytes, elem);
    EXPECT_EQ(w.elements, n);
    uint64_t words = 0;
    for (uint64_t i = 0; i < storage.size(); ++i) {
      if (storage[i] == 0) continue;
      ++words;
      EXPECT_EQ(i * 8 % elem, 0u) << "a store inside an element, not at its start";
    }
    EXPECT_EQ(words, n);
    const SweepCount r = sweep_read(p, kBytes, elem);
    EXPECT_EQ(r.elements, n);
    EXPECT_EQ(r.sum, n * (n + 1) / 2);
  }
}

TEST(ExecSweep, AWriteStoresEveryElement) {
  constexpr size_t kBytes = 4 * 4096;
  std::vector<uint32_t> storage(kBytes / 4, 0);
  const SweepCount c = sweep_write(reinterpret_cast<unsigned char*>(storage.data()), kBytes, 4);
  EXPECT_EQ(c.elements, kBytes / 4);
  for (size_t i = 0; i < storage.size(); ++i) ASSERT_EQ(storage[i], i + 1) << i;
}

TEST(ExecSweep, TheUnoptimisedLoopsReadAndWriteWhatTheOthersDo) {
  constexpr size_t kBytes = 4 * 4096;
  std::vector<uint64_t> a(kBytes / 8, 0), b(kBytes / 8, 0);
  auto* pa = reinterpret_cast<unsigned char*>(a.data());
  auto* pb = reinterpret_cast<unsigned char*>(b.data());
  for (const uint32_t elem : {1u, 2u, 4u, 8u, 64u, 4096u}) {
    SCOPED_TRACE("elem_size " + std::to_string(elem));
    std::fill(a.begin(), a.end(), 0);
    std::fill(b.begin(), b.end(), 0);
    EXPECT_EQ(sweep_write_O0(pa, kBytes, elem).elements, sweep_write(pb, kBytes, elem).elements);
    EXPECT_EQ(a, b);
    const SweepCount o0 = sweep_read_O0(pa, kBytes, elem);
    const SweepCount o2 = sweep_read(pb, kBytes, elem);
    EXPECT_EQ(o0.elements, o2.elements);
    EXPECT_EQ(o0.sum, o2.sum);
  }
}

// A memset sweep writes every page; the task then reports its node (getcpu)
// and the share of the sweep's pages there (move_pages): on a host's first
// node, with nothing binding them elsewhere, all of them.
TEST(Exec, AMemsetSweepFaultsEveryPageAndTheTaskReportsItsNodeAndLocalShare) {
  TempDir t;
  Op memset = pages_op(OpKind::kSweep, 0, /*write=*/true);
  memset.memset = true;
  const Exec r = run_plan(t, plan_of({Program{"m", {map_anon(0, 64), memset}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  const TaskResult& task = r.report->tasks.at(0);
  EXPECT_EQ(task.end, "exit");
  EXPECT_GE(task.minflt, 1u);
  EXPECT_GE(task.node, 0);
  EXPECT_GT(task.local_pct, 0.0);
  EXPECT_LE(task.local_pct, 100.0);
}

TEST(Exec, ASetMempolicyToANodeTheHostLacksEndsTheTaskWithEINVAL) {
  TempDir t;
  Op pol;
  pol.kind = OpKind::kMempolicy;
  pol.policy = plan::Policy::kBind;
  pol.nodes = {1000};
  const Exec r = run_plan(t, plan_of({Program{"m", {pol, count(0, 1)}}}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.report->tasks.at(0).end, "error: set_mempolicy: EINVAL");
  EXPECT_EQ(r.report->tasks.at(0).counters, std::vector<uint64_t>{0});
}

}  // namespace
}  // namespace mmsim::exec
