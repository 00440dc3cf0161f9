#include "native/plan_build.h"

namespace mmsim::native {
namespace {

plan::OpKind kind_of(workload::OpKind k) {
  using K = workload::OpKind;
  using P = plan::OpKind;
  switch (k) {
    case K::kMap:
      return P::kMap;
    case K::kUnmap:
      return P::kUnmap;
    case K::kFork:
      return P::kFork;
    case K::kThreads:
      return P::kThreads;
    case K::kWait:
      return P::kWait;
    case K::kLoop:
      return P::kLoop;
    case K::kSweep:
      return P::kSweep;
    case K::kTouch:
      return P::kTouch;
    case K::kMadvise:
      return P::kMadvise;
    case K::kMlock:
      return P::kMlock;
    case K::kSleep:
      return P::kSleep;
    case K::kCount:
      return P::kCount;
    case K::kCgroup:
      return P::kCgroup;
    case K::kPin:
      return P::kPin;
    case K::kMempolicy:
      return P::kMempolicy;
  }
  return P::kCount;  // unreachable: every kind is listed
}

plan::Policy policy_of(mm::MemPolicy::Mode m) {
  using M = mm::MemPolicy::Mode;
  switch (m) {
    case M::kDefault:
      return plan::Policy::kDefault;
    case M::kBind:
      return plan::Policy::kBind;
    case M::kPreferred:
      return plan::Policy::kPreferred;
    case M::kInterleave:
      return plan::Policy::kInterleave;
  }
  return plan::Policy::kDefault;
}

plan::Op plan_op(const workload::Op& op) {
  plan::Op p;
  p.kind = kind_of(op.kind);
  p.region = op.region;
  p.pages = op.pages;
  p.shared = op.shared;
  p.writable = op.writable;
  p.exec = op.exec;
  p.file = op.file;
  p.file_offset_pages = op.file_offset_pages;
  p.policy = policy_of(op.policy.mode);
  for (const NodeId n : op.policy.nodes) p.nodes.push_back(n.v);
  // pin: the CPUs as given, or the nodes as given, which the executor
  // resolves to the host's CPUs when the op runs.
  for (const CpuId c : op.cpus) p.cpus.push_back(c.v);
  for (const NodeId n : op.cpu_nodes) p.nodes.push_back(n.v);
  p.program = op.program;
  p.count = op.count;
  p.duration_ns = op.duration.ns;
  for (const workload::Op& b : op.body) p.body.push_back(plan_op(b));
  p.first_page = op.first_page;
  p.nr_pages = op.nr_pages;
  p.own_slice = op.own_slice;
  p.write = op.write;
  p.elem_size = op.elem_size;
  p.compute_ns = op.compute_ns;
  p.unoptimised = op.unoptimised;
  p.memset = op.memset;
  p.node_share = static_cast<plan::NodeShare>(op.node_share);
  p.advice = static_cast<plan::Advice>(op.advice);
  p.counter = op.counter;
  p.cgroup = op.cgroup;
  return p;
}

}  // namespace

plan::Plan build_plan(const scenario::Scenario& sc) {
  const workload::Workload& w = sc.workload;
  plan::Plan p;
  p.scenario = sc.name;
  p.page_size = kPageSize;
  p.time_limit_ns = sc.time_limit.ns;
  for (const workload::FileSpec& f : w.files) {
    p.files.push_back(
        plan::File{.name = f.name, .pages = f.pages, .cached = f.cached, .tmpfs = f.tmpfs});
  }
  for (const workload::RegionSpec& r : w.regions) p.regions.push_back(r.name);
  p.counters = w.counters;
  p.cgroups = w.cgroup_paths;
  for (const workload::Program& prog : w.programs) {
    plan::Program out;
    out.name = prog.name;
    for (const workload::Op& op : prog.ops) out.ops.push_back(plan_op(op));
    p.programs.push_back(std::move(out));
  }
  p.init_program = w.init_program;
  p.init_cgroup = w.init_cgroup;
  return p;
}

}  // namespace mmsim::native
