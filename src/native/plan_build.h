// A loaded scenario as the native executor's plan (plan/plan.h): the same
// programs, ops, files, regions, counters and cgroups, in the executor's terms.
#pragma once

#include "plan/plan.h"
#include "scenario/scenario.h"

namespace mmsim::native {

// The scenario's workload as a plan. Everything the loader accepted has a
// plan equivalent; what the host cannot reproduce (a kernel version, a
// machine shape, costs) is the caller's to report.
plan::Plan build_plan(const scenario::Scenario& sc);

}  // namespace mmsim::native
