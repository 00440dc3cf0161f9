// The plan and report text formats (plan/plan.h): what is written reads back
// equal, field for field (random plans included), and every kind of malformed
// text is refused with "line N: what", never accepted or crashed on.
#include "plan/plan.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace mmsim::plan {
namespace {

// --- comparing -------------------------------------------------------------

// The first difference between two op lists, or "".
std::string diff_ops(const std::vector<Op>& a, const std::vector<Op>& b, const std::string& at) {
  if (a.size() != b.size()) {
    return at + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " ops";
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const Op& x = a[i];
    const Op& y = b[i];
    const std::string where = at + "[" + std::to_string(i) + "]";
    // compute_ns must come back bit for bit.
    const bool same =
        x.kind == y.kind && x.region == y.region && x.pages == y.pages && x.shared == y.shared &&
        x.writable == y.writable && x.exec == y.exec && x.file == y.file &&
        x.file_offset_pages == y.file_offset_pages && x.policy == y.policy && x.nodes == y.nodes &&
        x.program == y.program && x.count == y.count && x.duration_ns == y.duration_ns &&
        x.first_page == y.first_page && x.nr_pages == y.nr_pages && x.write == y.write &&
        x.elem_size == y.elem_size &&
        std::bit_cast<uint64_t>(x.compute_ns) == std::bit_cast<uint64_t>(y.compute_ns) &&
        x.counter == y.counter && x.cgroup == y.cgroup && x.cpus == y.cpus;
    if (!same) return where + " (" + std::string(op_name(x.kind)) + ") differs";
    if (std::string d = diff_ops(x.body, y.body, where + ".body"); !d.empty()) return d;
  }
  return "";
}

std::string diff(const Plan& a, const Plan& b) {
  if (a.scenario != b.scenario) return "scenario";
  if (a.page_size != b.page_size) return "page_size";
  if (a.time_limit_ns != b.time_limit_ns) return "time_limit_ns";
  if (a.init_program != b.init_program) return "init_program";
  if (a.init_cgroup != b.init_cgroup) return "init_cgroup";
  if (a.files.size() != b.files.size()) return "files";
  for (size_t i = 0; i < a.files.size(); ++i) {
    if (a.files[i].name != b.files[i].name || a.files[i].pages != b.files[i].pages ||
        a.files[i].cached != b.files[i].cached || a.files[i].tmpfs != b.files[i].tmpfs) {
      return "files[" + std::to_string(i) + "]";
    }
  }
  if (a.regions != b.regions) return "regions";
  if (a.counters != b.counters) return "counters";
  if (a.cgroups != b.cgroups) return "cgroups";
  if (a.programs.size() != b.programs.size()) return "programs";
  for (size_t i = 0; i < a.programs.size(); ++i) {
    if (a.programs[i].name != b.programs[i].name) return "programs[" + std::to_string(i) + "]";
    std::string d =
        diff_ops(a.programs[i].ops, b.programs[i].ops, "programs[" + std::to_string(i) + "].ops");
    if (!d.empty()) return d;
  }
  return "";
}

std::string diff(const RunReport& a, const RunReport& b) {
  if (a.elapsed_ns != b.elapsed_ns || a.time_limit_hit != b.time_limit_hit) return "run";
  if (a.tasks.size() != b.tasks.size()) return "tasks";
  if (a.vmstat != b.vmstat || a.iowait_ns != b.iowait_ns) return "host";
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    const TaskResult& x = a.tasks[i];
    const TaskResult& y = b.tasks[i];
    if (x.tid != y.tid || x.tgid != y.tgid || x.parent != y.parent || x.program != y.program ||
        x.start_ns != y.start_ns || x.end_ns != y.end_ns || x.user_ns != y.user_ns ||
        x.sys_ns != y.sys_ns || x.minflt != y.minflt || x.majflt != y.majflt ||
        x.nvcsw != y.nvcsw || x.nivcsw != y.nivcsw || x.end != y.end || x.counters != y.counters ||
        x.node != y.node || x.local_pct != y.local_pct) {
      return "tasks[" + std::to_string(i) + "]";
    }
  }
  return "";
}

// Writes, reads back and compares.
void expect_round_trip(const Plan& p) {
  const std::string text = write_plan(p);
  std::string error;
  const auto back = read_plan(text, &error);
  ASSERT_TRUE(back) << error << "\n" << text;
  EXPECT_EQ(diff(p, *back), "") << text;
  EXPECT_EQ(write_plan(*back), text);
}

// --- building --------------------------------------------------------------

constexpr OpKind kAllKinds[] = {
    OpKind::kMap,   OpKind::kUnmap, OpKind::kFork,   OpKind::kThreads, OpKind::kWait,
    OpKind::kLoop,  OpKind::kSweep, OpKind::kTouch,  OpKind::kMadvise, OpKind::kMlock,
    OpKind::kSleep, OpKind::kCount, OpKind::kCgroup, OpKind::kPin,     OpKind::kMempolicy};

// An op of `kind` with every field set to something other than its default.
Op full_op(OpKind kind) {
  Op op;
  op.kind = kind;
  op.region = 1;
  op.pages = 1ull << 40;
  op.shared = true;
  op.writable = true;
  op.exec = true;
  op.file = 1;
  op.file_offset_pages = 77;
  op.policy = Policy::kInterleave;
  op.nodes = {0, 3, 65535};
  op.program = 1;
  op.count = UINT64_MAX;
  op.duration_ns = int64_t{1} << 62;
  op.first_page = 12345678901234ull;
  op.nr_pages = 9;
  op.write = true;
  op.own_slice = true;
  op.elem_size = 8;
  op.compute_ns = 0.1;
  op.counter = 1;
  op.cgroup = 2;
  op.cpus = {0, 7, 4294967295u};
  op.memset = true;
  op.node_share = NodeShare::kMirror;
  // A pin names CPUs, nodes or a share; a mempolicy nodes or a share.
  if (kind == OpKind::kPin) {
    op.nodes.clear();
    op.node_share = NodeShare::kNone;
  }
  if (kind == OpKind::kMempolicy) op.nodes.clear();
  return op;
}

// A plan with every op kind and every field set to non-default values.
Plan full_plan() {
  Plan p;
  p.scenario = "every op, every field: 100% ";
  p.page_size = 16384;
  p.time_limit_ns = 5'000'000'000;
  p.files = {{"a.dat", 3, true}, {"b+c_d-e.f", 1ull << 30, false, true}};
  p.regions = {"heap", "shared map=1"};
  p.counters = {"iters", "bytes\tread"};
  p.cgroups = {"/bench", "/bench/a b"};
  p.init_program = 1;
  p.init_cgroup = 2;
  Program main{"main", {}};
  for (const OpKind k : kAllKinds) main.ops.push_back(full_op(k));
  main.ops[5].body = {full_op(OpKind::kCount), full_op(OpKind::kSweep)};
  p.programs = {Program{"kid", {full_op(OpKind::kCount)}}, main};
  return p;
}

// A minimal valid plan text around `ops` (one region, one counter, one file).
std::string plan_text(const std::string& ops) {
  return "mmsim-plan 4\n"
         "plan scenario=s page_size=4096 time_limit_ns=0 init_program=0 init_cgroup=0\n"
         "file name=f pages=4 cached=0\n"
         "region name=r\n"
         "counter name=c\n"
         "program name=main\n" +
         ops;
}

// The error read_plan gives for `text` (failing the test if it accepts it).
std::string error_of(const std::string& text) {
  std::string error;
  const auto p = read_plan(text, &error);
  EXPECT_FALSE(p) << "accepted:\n" << text;
  return error;
}

// --- round trips -----------------------------------------------------------

TEST(PlanText, APlanWithEveryOpKindAndEveryFieldSetRoundTripsExactly) {
  expect_round_trip(full_plan());
}

TEST(PlanText, AnEmptyPlanWithOneEmptyProgramRoundTrips) {
  Plan p;
  p.programs.push_back(Program{});
  expect_round_trip(p);
}

TEST(PlanText, ASmallPlanIsWrittenAsDocumented) {
  Plan p;
  p.scenario = "demo run";
  p.time_limit_ns = 1000;
  p.files = {{"data", 8, true}};
  p.regions = {"buf"};
  p.counters = {"n"};
  Op map;
  map.kind = OpKind::kMap;
  map.pages = 8;
  map.writable = true;
  Op loop;
  loop.kind = OpKind::kLoop;
  loop.count = 2;
  Op count;
  count.kind = OpKind::kCount;
  count.count = 1;
  loop.body = {count};
  p.programs = {Program{"main", {map, loop}}};
  EXPECT_EQ(write_plan(p),
            "mmsim-plan 4\n"
            "plan scenario=demo%20run page_size=4096 time_limit_ns=1000 init_program=0 "
            "init_cgroup=0\n"
            "file name=data pages=8 cached=1\n"
            "region name=buf\n"
            "counter name=n\n"
            "program name=main\n"
            "op kind=map region=0 pages=8 shared=0 writable=1 exec=0 file=-1 "
            "file_offset_pages=0 policy=default nodes=\n"
            "op kind=loop count=2 duration_ns=0\n"
            "op kind=count count=1 counter=0\n"
            "end\n");
}

TEST(PlanText, ALoopBodyRoundTripsWithItsEndLine) {
  const std::string text = plan_text(
      "op kind=loop count=3 duration_ns=0\n"
      "op kind=count count=1 counter=0\n"
      "op kind=sleep duration_ns=5\n"
      "end\n"
      "op kind=wait\n");
  std::string error;
  const auto p = read_plan(text, &error);
  ASSERT_TRUE(p) << error;
  const auto& ops = p->programs[0].ops;
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].kind, OpKind::kLoop);
  ASSERT_EQ(ops[0].body.size(), 2u);
  EXPECT_EQ(ops[0].body[1].kind, OpKind::kSleep);
  EXPECT_EQ(ops[1].kind, OpKind::kWait);
  EXPECT_EQ(write_plan(*p), text);
}

TEST(PlanText, LoopsNestedSixteenDeepRoundTrip) {
  Plan p;
  p.counters = {"c"};
  Op inner;
  inner.kind = OpKind::kCount;
  inner.count = 1;
  for (int i = 0; i < 16; ++i) {
    Op loop;
    loop.kind = OpKind::kLoop;
    loop.count = 2;
    loop.body = {inner};
    inner = loop;
  }
  p.programs = {Program{"deep", {inner}}};
  expect_round_trip(p);
}

TEST(PlanText, NamesWithSpacesEqualsPercentAndControlCharactersAreEscaped) {
  Plan p;
  p.scenario = std::string("a b=c%d\n\t\r\x01\x7f\xff", 13) + '\0' + "z";
  p.regions = {"", " ", "=", "%", "%41"};
  p.programs = {Program{"x y", {}}};
  const std::string text = write_plan(p);
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(c == '\n' || (u >= 0x20 && u < 0x7f)) << "byte " << int(u);
  }
  EXPECT_NE(text.find("plan scenario=a%20b%3Dc%25d%0A%09%0D%01%7F%FF%00z "), std::string::npos)
      << text;
  expect_round_trip(p);
}

TEST(PlanText, ComputeNsRoundTripsBitForBit) {
  for (const double d : {0.1, 1.0 / 3.0, 1e-300, 5e-324, 123456.789, 1.7976931348623157e308, -0.0,
                         0.0, -1.0, -2.5}) {
    Plan p;
    p.regions = {"r"};
    Op sweep;
    sweep.kind = OpKind::kSweep;
    sweep.compute_ns = d;
    p.programs = {Program{"m", {sweep}}};
    expect_round_trip(p);
  }
}

// A random valid plan: names of random bytes, every op kind, fields
// (also those an op's kind does not use) set at random within their range.
class RandomPlans {
 public:
  explicit RandomPlans(uint32_t seed) : rng_(seed) {}

  Plan next() {
    Plan p;
    p.scenario = name();
    p.page_size = uint64_t{1} << pick(9, 30);
    p.time_limit_ns = coin() ? 0 : static_cast<int64_t>(pick(0, uint64_t{1} << 62));
    for (uint64_t i = pick(0, 3); i > 0; --i) {
      p.files.push_back(File{"f" + std::to_string(p.files.size()) + ".x_+-",
                             pick(0, (uint64_t{1} << 33) / p.page_size), coin(), coin()});
    }
    for (uint64_t i = pick(0, 4); i > 0; --i) p.regions.push_back(name());
    for (uint64_t i = pick(0, 4); i > 0; --i) p.counters.push_back(name());
    for (uint64_t i = pick(0, 3); i > 0; --i) {
      p.cgroups.push_back("/g" + std::to_string(i) + (coin() ? "/a b%" : ""));
    }
    const uint64_t programs = pick(1, 4);
    plan_ = &p;
    nr_programs_ = static_cast<uint32_t>(programs);
    for (uint64_t i = 0; i < programs; ++i) {
      Program prog{name(), {}};
      for (uint64_t n = pick(0, 8); n > 0; --n) prog.ops.push_back(op(0));
      p.programs.push_back(std::move(prog));
    }
    p.init_program = static_cast<uint32_t>(pick(0, programs - 1));
    p.init_cgroup = static_cast<uint32_t>(pick(0, p.cgroups.size()));
    return p;
  }

 private:
  uint64_t pick(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }
  bool coin() { return pick(0, 1) == 1; }

  std::string name() {
    std::string s;
    for (uint64_t n = pick(0, 12); n > 0; --n) s += static_cast<char>(pick(0, 255));
    return s;
  }

  Op op(int depth) {
    Op o;
    for (;;) {
      o.kind = kAllKinds[pick(0, std::size(kAllKinds) - 1)];
      const bool needs_region = o.kind == OpKind::kMap || o.kind == OpKind::kUnmap ||
                                o.kind == OpKind::kSweep || o.kind == OpKind::kTouch ||
                                o.kind == OpKind::kMadvise || o.kind == OpKind::kMlock;
      if (needs_region && plan_->regions.empty()) continue;
      if (o.kind == OpKind::kCount && plan_->counters.empty()) continue;
      if (o.kind == OpKind::kLoop && depth >= 4) continue;
      break;
    }
    // Each field: its default half of the time, else a valid random value.
    if (coin() && !plan_->regions.empty()) o.region = pick(0, plan_->regions.size() - 1);
    if (coin()) o.pages = rng_();
    if (coin()) o.shared = coin();
    if (coin()) o.writable = coin();
    if (coin()) o.exec = coin();
    if (coin()) o.file = static_cast<int32_t>(pick(0, plan_->files.size())) - 1;
    if (coin()) o.file_offset_pages = rng_();
    if (coin()) o.policy = static_cast<Policy>(pick(0, 3));
    for (uint64_t n = coin() ? pick(0, 4) : 0; n > 0; --n) {
      o.nodes.push_back(static_cast<uint16_t>(pick(0, 65535)));
    }
    if (coin()) o.program = static_cast<uint32_t>(pick(0, nr_programs_ - 1));
    if (coin()) o.count = rng_();
    if (coin()) o.duration_ns = static_cast<int64_t>(pick(0, uint64_t{1} << 62));
    if (coin()) o.first_page = rng_();
    if (coin()) o.nr_pages = rng_();
    if (coin()) o.write = coin();
    if (coin()) o.elem_size = uint32_t{1} << pick(0, 12);
    if (coin()) {
      double d = 0;
      do {
        d = std::bit_cast<double>(static_cast<uint64_t>(rng_()));
      } while (!std::isfinite(d));
      o.compute_ns = d;
    }
    if (coin() && !plan_->counters.empty()) o.counter = pick(0, plan_->counters.size() - 1);
    if (coin()) o.cgroup = static_cast<uint32_t>(pick(0, plan_->cgroups.size()));
    for (uint64_t n = coin() ? pick(0, 4) : 0; n > 0; --n) {
      o.cpus.push_back(static_cast<uint32_t>(pick(0, UINT32_MAX)));
    }
    if (o.kind == OpKind::kPin && o.cpus.empty() == o.nodes.empty()) {
      // Exactly one of the two.
      if (coin()) {
        o.cpus = {static_cast<uint32_t>(pick(0, 8191))};
        o.nodes.clear();
      } else {
        o.nodes = {static_cast<uint16_t>(pick(0, 1023))};
        o.cpus.clear();
      }
    }
    if (o.kind == OpKind::kLoop) {
      for (uint64_t n = pick(0, 4); n > 0; --n) o.body.push_back(op(depth + 1));
    }
    return o;
  }

  std::mt19937_64 rng_;
  const Plan* plan_ = nullptr;
  uint32_t nr_programs_ = 1;
};

TEST(PlanText, RandomPlansRoundTrip) {
  RandomPlans gen(20240601);
  for (int i = 0; i < 500; ++i) {
    SCOPED_TRACE("plan " + std::to_string(i));
    expect_round_trip(gen.next());
    if (HasFailure()) return;
  }
}

// Truncated and byte-flipped plans are refused with "line N: ..." or read
// (when still valid); never anything else.
TEST(PlanText, MutatedPlansAreRefusedWithALineNumberOrReadNeverCrashedOn) {
  const std::string base = write_plan(full_plan());
  std::mt19937 rng(7);
  int refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = base;
    const size_t at = rng() % text.size();
    switch (rng() % 4) {
      case 0:
        text.resize(at);
        break;
      case 1:
        text[at] = static_cast<char>(rng() % 256);
        break;
      case 2:
        text.erase(at, 1 + rng() % 20);
        break;
      default:
        text.insert(at, 1, " =%\n,"[rng() % 5]);
        break;
    }
    std::string error;
    const auto p = read_plan(text, &error);
    if (!p) {
      ++refused;
      EXPECT_EQ(error.rfind("line ", 0), 0u) << error;
      EXPECT_NE(error.find(": "), std::string::npos) << error;
    }
  }
  EXPECT_GT(refused, 1000);
}

// --- what read_plan refuses ------------------------------------------------

TEST(PlanRead, RefusesAnEmptyText) {
  EXPECT_EQ(error_of(""), "line 1: empty text: expected \"mmsim-plan 4\"");
}

TEST(PlanRead, RefusesAnotherFormatVersion) {
  std::string text = plan_text("");
  text.replace(0, 12, "mmsim-plan 1");
  EXPECT_EQ(error_of(text), "line 1: format version 1, but this reader reads version 4");
}

TEST(PlanRead, RefusesAReportAsAPlan) {
  EXPECT_EQ(error_of(write_report(RunReport{})).rfind("line 1: not an mmsim-plan text", 0), 0u);
}

TEST(PlanRead, RefusesAnUnknownKeyword) {
  EXPECT_EQ(error_of(plan_text("opp kind=wait\n")).rfind("line 7: unknown keyword \"opp\"", 0), 0u);
}

TEST(PlanRead, RefusesAnUnknownKey) {
  EXPECT_EQ(error_of(plan_text("op kind=wait colour=blue\n")),
            "line 7: unknown key colour on this op line");
}

TEST(PlanRead, RefusesAMissingKey) {
  EXPECT_EQ(error_of(plan_text("op kind=touch region=0 first_page=0 nr_pages=0\n")),
            "line 7: missing key write");
  EXPECT_EQ(error_of(plan_text("op region=0\n")), "line 7: missing key kind");
}

TEST(PlanRead, RefusesBadNumbers) {
  for (const std::string v : {"12x", "-1", "", "18446744073709551616", "+3", "0x10", "1e3"}) {
    const std::string e =
        error_of(plan_text("op kind=mlock region=0 first_page=" + v + " nr_pages=0\n"));
    EXPECT_EQ(e.rfind("line 7: first_page: \"" + v + "\" is not a number", 0), 0u) << e;
  }
  EXPECT_EQ(error_of(plan_text("op kind=touch region=0 first_page=0 nr_pages=0 write=2\n")),
            "line 7: write: \"2\" is not a number in [0, 1]");
  EXPECT_EQ(error_of(plan_text("op kind=sleep duration_ns=-5\n")).rfind("line 7: duration_ns", 0),
            0u);
}

TEST(PlanRead, RefusesARegionIndexOutOfRange) {
  std::string text = plan_text("op kind=unmap region=5\n");
  text.insert(text.find("counter"), "region name=r2\n");
  EXPECT_EQ(error_of(text), "line 8: region 5 is out of range (2 regions)");
}

TEST(PlanRead, RefusesOtherIndexesOutOfRange) {
  EXPECT_EQ(error_of(plan_text("op kind=count counter=1 count=1\n")),
            "line 7: counter 1 is out of range (1 counters)");
  EXPECT_EQ(error_of(plan_text("op kind=map region=0 pages=1 shared=0 writable=0 exec=0 file=1 "
                               "file_offset_pages=0 policy=default nodes=\n")),
            "line 7: file 1 is out of range (1 files)");
  EXPECT_EQ(error_of(plan_text("op kind=cgroup cgroup=1\n")),
            "line 7: cgroup 1 is out of range (1 cgroups and the root)");
}

TEST(PlanRead, RefusesAForkOfAProgramThatDoesNotExist) {
  EXPECT_EQ(error_of(plan_text("op kind=fork program=1 count=1\nop kind=wait\n")),
            "line 7: program 1 is out of range (1 programs)");
}

TEST(PlanRead, AcceptsAForkOfAProgramDefinedLater) {
  std::string error;
  EXPECT_TRUE(
      read_plan(plan_text("op kind=threads program=1 count=2\nprogram name=later\n"), &error))
      << error;
}

TEST(PlanRead, RefusesAnInitProgramOrCgroupOutOfRange) {
  std::string text = plan_text("");
  text.replace(text.find("init_program=0"), 14, "init_program=3");
  EXPECT_EQ(error_of(text), "line 2: init_program 3 is out of range (1 programs)");
  text = plan_text("");
  text.replace(text.find("init_cgroup=0"), 13, "init_cgroup=1");
  EXPECT_EQ(error_of(text), "line 2: init_cgroup 1 is out of range (0 cgroups)");
}

TEST(PlanRead, RefusesAnEndWithoutALoop) {
  EXPECT_EQ(error_of(plan_text("op kind=wait\nend\n")), "line 8: an end line with no open loop");
}

TEST(PlanRead, RefusesALoopWithoutItsEnd) {
  EXPECT_EQ(error_of(plan_text("op kind=loop count=1 duration_ns=0\nop kind=wait\n")),
            "line 9: the loop opened at line 7 has no end line");
  EXPECT_EQ(error_of(plan_text("op kind=loop count=1 duration_ns=0\nprogram name=b\n")),
            "line 8: the loop opened at line 7 has no end line");
}

TEST(PlanRead, RefusesLoopsNestedDeeperThanSixtyFourLevels) {
  std::string ops;
  for (int i = 0; i < 65; ++i) ops += "op kind=loop count=1 duration_ns=0\n";
  EXPECT_EQ(error_of(plan_text(ops)), "line 71: loops nest deeper than 64 levels");
}

TEST(PlanRead, RefusesADuplicateKey) {
  EXPECT_EQ(error_of(plan_text("op kind=unmap region=0 region=0\n")),
            "line 7: key region appears twice");
}

TEST(PlanRead, RefusesMalformedFields) {
  EXPECT_EQ(error_of(plan_text("op kind=wait  \n")),
            "line 7: an empty field (two spaces, or a space at the end)");
  EXPECT_EQ(error_of(plan_text("op kind=wait region\n")),
            "line 7: field \"region\" is not key=value");
  EXPECT_EQ(error_of(plan_text("op kind=wait =3\n")), "line 7: field \"=3\" is not key=value");
  EXPECT_EQ(error_of(plan_text("\n")), "line 7: an empty line");
  EXPECT_EQ(error_of(plan_text(" op kind=wait\n")), "line 7: a line starting with a space");
}

TEST(PlanRead, RefusesBadEscapes) {
  for (const std::string v : {"a%4", "a%", "%zz", "a=b", "a,b", "caf\xc3\xa9"}) {
    const std::string e = error_of(plan_text("program name=" + v + "\n"));
    EXPECT_EQ(e.rfind("line 7: name: ", 0), 0u) << e;
  }
}

TEST(PlanRead, RefusesControlCharacters) {
  EXPECT_EQ(error_of(plan_text("op kind=wait\r\n")), "line 7: a control character (byte 13)");
  EXPECT_EQ(error_of(plan_text("op\tkind=wait\n")), "line 7: a control character (byte 9)");
}

TEST(PlanRead, RefusesAnOpBeforeAnyProgram) {
  std::string text = plan_text("");
  text.insert(text.find("program name"), "op kind=wait\n");
  EXPECT_EQ(error_of(text), "line 6: an op line before any program line");
}

TEST(PlanRead, RefusesSectionsOutOfOrder) {
  EXPECT_EQ(error_of(plan_text("region name=late\n")).rfind("line 7: a region line after", 0), 0u);
  std::string text = plan_text("");
  text.erase(text.find("plan scenario"), text.find("file") - text.find("plan scenario"));
  EXPECT_EQ(error_of(text).rfind("line 2: expected the plan line", 0), 0u);
  text = plan_text("");
  text.insert(text.find("file"), text.substr(text.find("plan scenario"),
                                             text.find("file") - text.find("plan scenario")));
  EXPECT_EQ(error_of(text), "line 3: a second plan line (the first is line 2)");
}

TEST(PlanRead, RefusesValuesOutsideTheirDomain) {
  EXPECT_EQ(error_of(plan_text("op kind=sweep region=0 first_page=0 nr_pages=0 write=0 "
                               "elem_size=3 compute_ns=1 unoptimised=0 own_slice=0 memset=0\n")),
            "line 7: elem_size 3 is not a power of two from 1 to 4096");
  for (const std::string v : {"nan", "inf", "-inf", "1e999", "0x1p3", "1.5.2"}) {
    EXPECT_EQ(error_of(plan_text("op kind=sweep region=0 first_page=0 nr_pages=0 write=0 "
                                 "elem_size=4 compute_ns=" +
                                 v + " unoptimised=0 own_slice=0 memset=0\n")),
              "line 7: compute_ns: \"" + v + "\" is not a finite number");
  }
  EXPECT_EQ(error_of(plan_text("op kind=fly\n")), "line 7: unknown op kind \"fly\"");
  EXPECT_EQ(error_of(plan_text("op kind=map region=0 pages=1 shared=0 writable=0 exec=0 "
                               "file=-1 file_offset_pages=0 policy=local nodes=\n"))
                .rfind("line 7: unknown policy \"local\"", 0),
            0u);
  EXPECT_EQ(error_of(plan_text("op kind=map region=0 pages=1 shared=0 writable=0 exec=0 "
                               "file=-2 file_offset_pages=0 policy=default nodes=\n"))
                .rfind("line 7: file: \"-2\" is not a number", 0),
            0u);
  EXPECT_EQ(error_of(plan_text("op kind=map region=0 pages=1 shared=0 writable=0 exec=0 "
                               "file=-1 file_offset_pages=0 policy=bind nodes=0,,1\n")),
            "line 7: nodes: \"\" is not a number in [0, 65535]");
}

TEST(PlanRead, RefusesAPageSizeThatIsNotAPowerOfTwo) {
  std::string text = plan_text("");
  text.replace(text.find("page_size=4096"), 14, "page_size=4097");
  EXPECT_EQ(error_of(text), "line 2: page_size 4097 is not a power of two");
}

TEST(PlanRead, RefusesAFileNameThatIsNotAPlainName) {
  for (const std::string v : {"..", ".", "a/b", "%2Fetc", "", "a%20b"}) {
    std::string text = plan_text("");
    text.replace(text.find("name=f "), 7, "name=" + v + " ");
    EXPECT_EQ(error_of(text).rfind("line 3: file name \"", 0), 0u) << v;
  }
}

TEST(PlanRead, RefusesAFileListedTwice) {
  std::string text = plan_text("");
  text.insert(text.find("region"), "file name=f pages=1 cached=1\n");
  EXPECT_EQ(error_of(text), "line 4: file f is listed twice");
}

TEST(PlanRead, RefusesACgroupPathThatIsNotAbsoluteAndClean) {
  for (const std::string v : {"a", "/", "/a/../b", "/a//b", "/a/", "/./a"}) {
    std::string text = plan_text("");
    text.insert(text.find("program name"), "cgroup path=" + v + "\n");
    EXPECT_EQ(error_of(text).rfind("line 6: cgroup path \"", 0), 0u) << v;
  }
}

// --- reports ---------------------------------------------------------------

RunReport full_report() {
  RunReport r;
  r.elapsed_ns = 123456789;
  r.time_limit_hit = true;
  TaskResult a;
  a.tid = 101;
  a.tgid = 100;
  a.parent = 99;
  a.program = 3;
  a.start_ns = 5;
  a.end_ns = 6;
  a.user_ns = 7;
  a.sys_ns = 8;
  a.minflt = UINT64_MAX;
  a.majflt = 9;
  a.nvcsw = 10;
  a.nivcsw = 11;
  a.end = "error: mmap: ENOMEM";
  a.counters = {0, UINT64_MAX, 42};
  a.node = 3;
  a.local_pct = 87.5;
  TaskResult b = a;
  b.tid = 102;
  b.end = "killed by SIGSEGV";
  b.counters = {};
  TaskResult c = a;
  c.end = "time_limit";
  r.tasks = {a, b, c, TaskResult{}};
  r.iowait_ns = 20'000'000;
  r.vmstat = {{"pgfault", 1234}, {"nr_free_pages", -56}, {"odd name", 0}};
  return r;
}

TEST(PlanReportText, AReportWithEveryFieldSetRoundTripsExactly) {
  const RunReport r = full_report();
  std::string error;
  const auto back = read_report(write_report(r), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(diff(r, *back), "");
}

TEST(PlanReportText, TheHostsCountersFollowTheTasksOneLineEach) {
  RunReport r;
  r.iowait_ns = 10;
  r.vmstat = {{"pgfault", 3}, {"nr_free_pages", -2}};
  EXPECT_EQ(write_report(r),
            "mmsim-report 2\n"
            "run elapsed_ns=0 time_limit_hit=0\n"
            "host iowait_ns=10\n"
            "vmstat name=pgfault delta=3\n"
            "vmstat name=nr_free_pages delta=-2\n");
}

TEST(PlanReportText, ATaskIsOneLineWithItsEndEscaped) {
  RunReport r;
  TaskResult t;
  t.end = "killed by SIGSEGV";
  t.counters = {1, 2};
  r.tasks = {t};
  EXPECT_EQ(write_report(r),
            "mmsim-report 2\n"
            "run elapsed_ns=0 time_limit_hit=0\n"
            "task tid=0 tgid=0 parent=0 program=0 start_ns=0 end_ns=0 user_ns=0 sys_ns=0 "
            "minflt=0 majflt=0 nvcsw=0 nivcsw=0 end=killed%20by%20SIGSEGV counters=1,2 node=-1 "
            "local_pct=-1\n");
}

TEST(PlanReportText, RandomReportsRoundTrip) {
  std::mt19937_64 rng(99);
  const auto i64 = [&] { return static_cast<int64_t>(rng()); };
  const char* const ends[] = {"exit", "time_limit", "killed by SIGBUS", "error: mlock: EPERM"};
  for (int i = 0; i < 200; ++i) {
    RunReport r;
    r.elapsed_ns = i64();
    r.time_limit_hit = rng() % 2;
    for (uint64_t n = rng() % 5; n > 0; --n) {
      TaskResult t{i64(),           i64(), i64(), static_cast<uint32_t>(rng()),
                   i64(),           i64(), i64(), i64(),
                   rng(),           rng(), rng(), rng(),
                   ends[rng() % 4], {}};
      for (uint64_t c = rng() % 6; c > 0; --c) t.counters.push_back(rng());
      r.tasks.push_back(t);
    }
    std::string error;
    const auto back = read_report(write_report(r), &error);
    ASSERT_TRUE(back) << error;
    ASSERT_EQ(diff(r, *back), "") << write_report(r);
  }
}

TEST(PlanReportRead, RefusesMalformedReports) {
  const std::string good = write_report(full_report());
  std::string error;
  EXPECT_FALSE(read_report("mmsim-report 1\n", &error));
  EXPECT_EQ(error, "line 1: format version 1, but this reader reads version 2");
  EXPECT_FALSE(read_report("mmsim-report 2\n", &error));
  EXPECT_EQ(error, "line 2: no run line");
  std::string text = good;
  text.replace(text.find("end=time_limit"), 14, "end=fine");
  EXPECT_FALSE(read_report(text, &error));
  EXPECT_EQ(error.rfind("line 5: end \"fine\" is not", 0), 0u) << error;
  text = good;
  text.replace(text.find(" majflt=9"), 9, "");
  EXPECT_FALSE(read_report(text, &error));
  EXPECT_EQ(error, "line 3: missing key majflt");
  text = good + "task tid=1\n";
  EXPECT_FALSE(read_report(text, &error));
  EXPECT_EQ(error, "line 11: missing key tgid");
  EXPECT_FALSE(read_report(good + "tusk\n", &error));
  EXPECT_EQ(error, "line 11: unknown keyword \"tusk\" (expected task, host or vmstat)");
}

TEST(PlanText, OpNamesAreTheScenarioLanguagesNames) {
  std::string names;
  for (const OpKind k : kAllKinds) names += std::string(op_name(k)) + " ";
  EXPECT_EQ(names,
            "map unmap fork threads wait loop sweep touch madvise mlock sleep count cgroup pin "
            "mempolicy ");
}

TEST(PlanText, APinOpCarriesItsCpusOrItsNodes) {
  const std::string cpus = plan_text("op kind=pin nodes= cpus=0,3 node_share=0\n");
  std::string error;
  const auto p = read_plan(cpus, &error);
  ASSERT_TRUE(p) << error;
  const Op& op = p->programs[0].ops[0];
  EXPECT_EQ(op.kind, OpKind::kPin);
  EXPECT_EQ(op.cpus, (std::vector<uint32_t>{0, 3}));
  EXPECT_TRUE(op.nodes.empty());
  EXPECT_EQ(write_plan(*p), cpus);
  const std::string nodes = plan_text("op kind=pin nodes=1 cpus= node_share=0\n");
  const auto q = read_plan(nodes, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(q->programs[0].ops[0].nodes, std::vector<uint16_t>{1});
  EXPECT_EQ(write_plan(*q), nodes);
}

TEST(PlanRead, RefusesAPinWithMoreOrFewerThanOneOfCpusNodesAndAShare) {
  const std::string why =
      "line 7: a pin op names CPUs (cpus=), nodes (nodes=) or a share (node_share=): exactly one";
  EXPECT_EQ(error_of(plan_text("op kind=pin nodes=0 cpus=1 node_share=0\n")), why);
  EXPECT_EQ(error_of(plan_text("op kind=pin nodes= cpus= node_share=0\n")), why);
  EXPECT_EQ(error_of(plan_text("op kind=pin nodes= cpus=1 node_share=1\n")), why);
  EXPECT_EQ(error_of(plan_text("op kind=pin cpus=1\n")), "line 7: missing key nodes");
}

TEST(PlanText, AMempolicyOpCarriesItsPolicyAndItsNodesOrItsShare) {
  const std::string listed = plan_text("op kind=mempolicy policy=bind nodes=0,1 node_share=0\n");
  std::string error;
  const auto p = read_plan(listed, &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->programs[0].ops[0].kind, OpKind::kMempolicy);
  EXPECT_EQ(p->programs[0].ops[0].nodes, (std::vector<uint16_t>{0, 1}));
  EXPECT_EQ(write_plan(*p), listed);
  const std::string shared = plan_text("op kind=mempolicy policy=bind nodes= node_share=2\n");
  const auto q = read_plan(shared, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(q->programs[0].ops[0].node_share, NodeShare::kMirror);
  EXPECT_EQ(write_plan(*q), shared);
  EXPECT_EQ(error_of(plan_text("op kind=mempolicy policy=bind nodes=1 node_share=1\n")),
            "line 7: a mempolicy op names nodes (nodes=) or a share (node_share=), not both");
  EXPECT_EQ(error_of(plan_text("op kind=mempolicy policy=bind nodes= node_share=4\n")),
            "line 7: node_share 4 is not 0, 1, 2 or 3");
}

TEST(PlanRead, RefusesAMemsetSweepThatDoesNotWrite) {
  EXPECT_EQ(error_of(plan_text("op kind=sweep region=0 first_page=0 nr_pages=0 write=0 "
                               "elem_size=4 compute_ns=-1 unoptimised=0 own_slice=0 memset=1\n")),
            "line 7: a memset sweep writes (write=1)");
}

TEST(PlanText, ATmpfsFileIsWrittenWithFsTmpfsAndADiskFileAsBefore) {
  Plan p;
  p.files = {File{"d", 2, true}, File{"t", 3, false, true}};
  p.programs = {Program{"m", {}}};
  const std::string text = write_plan(p);
  EXPECT_NE(text.find("file name=d pages=2 cached=1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("file name=t pages=3 cached=0 fs=tmpfs\n"), std::string::npos) << text;
  expect_round_trip(p);
}

TEST(PlanRead, ReadsFsDiskAndRefusesAnotherFs) {
  std::string text = plan_text("");
  const std::string disk = "file name=f pages=4 cached=0 fs=disk\n";
  text.replace(text.find("file name=f pages=4 cached=0\n"), disk.size() - 8, disk);
  std::string error;
  const auto p = read_plan(text, &error);
  ASSERT_TRUE(p) << error << "\n" << text;
  EXPECT_FALSE(p->files[0].tmpfs);
  text.replace(text.find("fs=disk"), 7, "fs=ext4");
  EXPECT_EQ(error_of(text), "line 3: fs: \"ext4\" is not disk or tmpfs");
}

}  // namespace
}  // namespace mmsim::plan
