// A scenario's workload as the native executor's plan.
#include "native/plan_build.h"

#include <gtest/gtest.h>

#include <string>

#include "scenario/scenario.h"

namespace mmsim::native {
namespace {

scenario::Scenario load(const std::string& text) {
  auto r = scenario::parse_scenario(text, "plan.toml", {});
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.str();
  return r.scenario.value_or(scenario::Scenario{});
}

constexpr const char* kEveryOp = R"(
[scenario]
name = "every-op"
time_limit = "2s"
[machine]
sockets = 2
cores_per_socket = 2
mem_per_node = "64MiB"
llc_per_socket = "1MiB"
[[cgroups]]
path = "/a"
[[cgroups]]
path = "/a/b"
[[files]]
name = "data"
size = "64KiB"
cached = true
[run]
program = "main"
cgroup = "/a"
[[programs.main]]
op = "map"
region = "anon"
size = "32KiB"
policy = "interleave"
nodes = [0, 1]
[[programs.main]]
op = "map"
region = "file"
file = "data"
offset = "8KiB"
size = "16KiB"
prot = "rw"
flags = "shared"
[[programs.main]]
op = "fork"
program = "child"
count = 2
[[programs.main]]
op = "threads"
program = "child"
count = 3
[[programs.main]]
op = "wait"
[[programs.main]]
op = "loop"
count = 4
body = [ { op = "sweep", region = "anon", mode = "write", elem_size = 8, compute_ns = 1.5, offset = "4KiB", size = "8KiB" },
         { op = "loop", duration = "1ms", body = [ { op = "touch", region = "file" } ] } ]
[[programs.main]]
op = "madvise"
region = "anon"
advice = "dontneed"
[[programs.main]]
op = "mlock"
region = "file"
[[programs.main]]
op = "cgroup"
path = "/a/b"
[[programs.main]]
op = "unmap"
region = "anon"
[[programs.child]]
op = "sleep"
duration = "3ms"
[[programs.child]]
op = "count"
counter = "done"
by = 7
)";

TEST(PlanBuild, EveryOpKeepsItsKindAndKeysInTheExecutorsTerms) {
  const plan::Plan p = build_plan(load(kEveryOp));
  EXPECT_EQ(p.scenario, "every-op");
  EXPECT_EQ(p.time_limit_ns, 2'000'000'000);
  ASSERT_EQ(p.programs.size(), 2u);
  const auto& main = p.programs[p.init_program];
  EXPECT_EQ(main.name, "main");
  ASSERT_EQ(main.ops.size(), 10u);

  const plan::Op& anon = main.ops[0];
  EXPECT_EQ(anon.kind, plan::OpKind::kMap);
  EXPECT_EQ(anon.pages, 8u);
  EXPECT_EQ(anon.file, -1);
  EXPECT_EQ(anon.policy, plan::Policy::kInterleave);
  EXPECT_EQ(anon.nodes, (std::vector<uint16_t>{0, 1}));

  const plan::Op& file = main.ops[1];
  EXPECT_EQ(file.file, 0);
  EXPECT_EQ(file.file_offset_pages, 2u);
  EXPECT_EQ(file.pages, 4u);
  EXPECT_TRUE(file.shared);
  EXPECT_TRUE(file.writable);

  EXPECT_EQ(main.ops[2].kind, plan::OpKind::kFork);
  EXPECT_EQ(main.ops[2].count, 2u);
  EXPECT_EQ(p.programs[main.ops[2].program].name, "child");
  EXPECT_EQ(main.ops[3].kind, plan::OpKind::kThreads);
  EXPECT_EQ(main.ops[3].count, 3u);

  const plan::Op& loop = main.ops[5];
  EXPECT_EQ(loop.kind, plan::OpKind::kLoop);
  EXPECT_EQ(loop.count, 4u);
  ASSERT_EQ(loop.body.size(), 2u);
  const plan::Op& sweep = loop.body[0];
  EXPECT_EQ(sweep.kind, plan::OpKind::kSweep);
  EXPECT_TRUE(sweep.write);
  EXPECT_EQ(sweep.elem_size, 8u);
  EXPECT_EQ(sweep.compute_ns, 1.5);
  EXPECT_EQ(sweep.first_page, 1u);
  EXPECT_EQ(sweep.nr_pages, 2u);
  const plan::Op& inner = loop.body[1];
  EXPECT_EQ(inner.count, 0u);
  EXPECT_EQ(inner.duration_ns, 1'000'000);
  ASSERT_EQ(inner.body.size(), 1u);
  EXPECT_EQ(inner.body[0].kind, plan::OpKind::kTouch);

  EXPECT_EQ(main.ops[7].kind, plan::OpKind::kMlock);
  EXPECT_EQ(main.ops[8].kind, plan::OpKind::kCgroup);
  EXPECT_EQ(p.cgroups.at(main.ops[8].cgroup - 1), "/a/b");
  EXPECT_EQ(p.cgroups.at(p.init_cgroup - 1), "/a");
}

TEST(PlanBuild, FilesRegionsAndCountersKeepTheirNamesAndIndices) {
  const plan::Plan p = build_plan(load(kEveryOp));
  ASSERT_EQ(p.files.size(), 1u);
  EXPECT_EQ(p.files[0].name, "data");
  EXPECT_EQ(p.files[0].pages, 16u);
  EXPECT_TRUE(p.files[0].cached);
  ASSERT_EQ(p.counters.size(), 1u);
  EXPECT_EQ(p.counters[0], "done");
  const auto& child = p.programs[p.programs[p.init_program].ops[2].program];
  EXPECT_EQ(child.ops[1].counter, 0u);
  EXPECT_EQ(child.ops[1].count, 7u);
  EXPECT_EQ(child.ops[0].duration_ns, 3'000'000);
  const auto& main = p.programs[p.init_program];
  EXPECT_EQ(p.regions.at(main.ops[0].region), "anon");
  EXPECT_EQ(p.regions.at(main.ops[1].region), "file");
  EXPECT_EQ(main.ops[9].region, main.ops[0].region);
}

TEST(PlanBuild, TheBuiltPlanSurvivesItsTextForm) {
  const plan::Plan p = build_plan(load(kEveryOp));
  std::string why;
  const auto back = plan::read_plan(plan::write_plan(p), &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(plan::write_plan(*back), plan::write_plan(p));
}

}  // namespace
}  // namespace mmsim::native
