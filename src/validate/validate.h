// mmsim validate: a scenario run for real on a real Linux kernel booted in
// QEMU with the scenario's machine (guest.h), its programs performed by
// `mmsim native` inside the guest, and the kernel's own counters set beside
// the simulation of the same scenario with the matching kernel.version, each
// judged against the tolerance the scenario's [validate] table gives it.
#pragma once

#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mmsim::validate {

// Exit code of a validation that ran and found a judged counter outside its
// tolerance (0: all within; 2 bad input; 3 the host or the guest refused).
inline constexpr int kExitOutOfTolerance = 4;

struct ValidateOptions {
  std::vector<std::string> scenarios;
  std::vector<std::string> sets;     // --set, applied in the guest and in the simulation
  std::vector<std::string> kernels;  // "6.1", "6.12"; empty: each scenario's [validate] kernels
  int repeat = 0;                    // 0: the scenario's [validate] repeat
  std::string accel = "auto";        // kvm, tcg or auto
  std::string json;                  // every result, as JSON
  std::string markdown;              // a report (docs/validation.md)
  std::string cache_dir;             // "": kernel_cache_dir()
  std::string exec_path;             // mmsim-exec; "": the build tree's
  std::string work_root;             // where the guest's files are made ("": /var/tmp)
  double timeout_s = 1800;           // per guest, boot included
  bool keep = false;                 // keep the work directory (initramfs, console log)
  // A directory for the guest's NUMA balancing scan, traced by kprobes: every
  // task_numa_work call (with the task's scan period and node_stamp), each
  // change_prot_numa it makes (the VMA, the range, the PTEs changed), and
  // 6.12's skipped VMAs; one file per run, NAME-KERNEL-runI.trace. "": no
  // files (the guest traces its scan whenever NUMA balancing is on: the
  // simulation takes the guest's TLB flush cost from it).
  std::string scan_trace;
  // More of the guest kernel's tracepoints (GROUP/NAME, as under
  // /sys/kernel/tracing/events) recorded in those files: kswapd's wakeups
  // (vmscan/mm_vmscan_kswapd_wake), migration batches
  // (migrate/mm_migrate_pages) and the like. Needs scan_trace.
  std::vector<std::string> trace_events;
  // Kprobes on more of the guest kernel's functions, recorded in those files
  // as mmsim/probe_SYMBOL events (with the task, its pid and CPU, as every
  // trace line): "SYMBOL" or "SYMBOL FETCHARGS" in kprobe_events' syntax,
  // such as "do_huge_pmd_numa_page" or "migrate_misplaced_folio node=%dx:s32".
  // Needs scan_trace.
  std::vector<std::string> kprobes;
};

// A counter's values over runs.
struct Series {
  std::vector<double> values;
  double mean() const;
  double min() const;
  double max() const;
};

// The counters of a report (`mmsim run --json` or `mmsim native --json`),
// flat: vmstat counters by name, "metric:NAME" for metrics (the scenario's
// count ops among them), "memcg:PATH:KEY" for a memory cgroup's memory.stat
// entry or file, "tasks:KEY" for a per-task value summed over tasks.
std::map<std::string, double> flat_counters(const nlohmann::ordered_json& report);

// A simulated report's "/" as the guest's reads it under cgroup v2 when the
// scenario has cgroups. There the guest's "/" is the run's own cgroup and
// holds only the scenario's: mmsim-exec stays in mmsim's cgroup, since v2
// allows no task beside child cgroups with controllers, so what the tasks do
// before they join one (the image, the collector) is outside it. The
// simulation's "/" is the root memcg, which holds that too: its
// memory.current, memory.events and memory.stat become the sums of its
// top-level cgroups' (each hierarchical under v2), and memory.peak, the peak
// of a sum, goes. REQUIRES: the report's memcg hierarchy is v2.
void as_run_cgroup(nlohmann::ordered_json& report);
// Whether a comparison shows the simulation's "/" that way: both worlds
// under cgroup v2 ("v2" is a report's memcg hierarchy), with the scenario's
// cgroups.
inline bool compares_run_cgroup(std::string_view real_hierarchy, std::string_view sim_hierarchy,
                                bool scenario_cgroups) {
  return real_hierarchy == "v2" && sim_hierarchy == "v2" && scenario_cgroups;
}

// Whether a counter is a gauge (vmstat nr_*, a cgroup's usage): the kernel
// side reports its change over the run, the simulation its end value, so the
// two cannot be compared.
bool is_gauge(const std::string& counter);

struct Tolerance {
  bool relative = true;
  double value = 0.1;  // relative: 0.1 is 10%; absolute: counts
  std::string text() const;
};

// One counter judged: real (the kernel) against simulated.
struct Verdict {
  std::string counter;
  Series real, sim;
  std::optional<Tolerance> tolerance;  // not judged without one
  double error = 0;                    // relative error of the means (sim - real) / real
  // Welch's 95% interval of that error, as fractions of the real mean: how
  // far the runs' own spread lets the means' difference lie from `error`.
  // None with fewer than 2 runs on a side or a real mean of 0.
  std::optional<std::pair<double, double>> error_ci;
  bool modelled = true;  // the simulation reports it
  bool pass = true;
  // A failure the runs' spread cannot explain: the whole interval lies
  // outside the tolerance. False for a pass, and for a failure without an
  // interval (one run a side says nothing of the spread).
  bool fail_beyond_spread = false;
  std::string note;
};
Verdict judge(const std::string& counter, const Series& real, const Series& sim, bool modelled,
              const std::optional<Tolerance>& tol);

// docs/validation.md's tables (`mmsim validate --markdown`): a summary row per
// result (validate's JSON of one scenario on one kernel), then each result's
// notes and counters; `skipped` are (scenario, why) of those that did not run.
std::string validation_markdown(const std::vector<nlohmann::ordered_json>& results,
                                const std::vector<std::pair<std::string, std::string>>& skipped,
                                const std::string& qemu);

// The guest's TLB flushes as its scan trace (--scan-trace) shows them: the
// time, in ns, of each change_prot_numa call that changed 1 to 16 PTEs, a
// call whose time is its flush of the mm's CPUs. In trace order.
std::vector<double> scan_flush_ns(const std::string& trace);

// The guest's NUMA migrations of single base pages as its scan trace shows
// them, in ns, in trace order: from the hinting fault's isolation of the
// page to its unmap (try_to_migrate), from the unmap to migrate_pages' end,
// and its copy within that. The TLB shootdowns inside are taken out (the
// simulation prices a flush where its own rules send one), and a migration
// whose task was switched out meanwhile is left out.
struct MigrationTimes {
  std::vector<double> isolate;
  std::vector<double> moved;
  std::vector<double> copy;
};
MigrationTimes misplaced_migration_ns(const std::string& trace);

// The guest's clearing of huge pages at their faults as its trace shows
// them (clear_huge_page, or folio_zero_user from 6.10), in ns, in trace
// order; a call whose task was switched out meanwhile is left out.
std::vector<double> huge_zero_ns(const std::string& trace);

// The guest's own noise. Under TCG a guest's vCPUs are threads of the host,
// which takes them off its few cores for milliseconds whenever more of them
// are busy than it has cores; its wakeups, clones and forks run emulated.
// Threads' races (which thread zero-fills a page, who reaches a page its
// sibling migrates) follow that noise, not a bare-metal server's, so the
// guest measures it before its runs: mmsim-noise-probe (tools/noise) on as
// many vCPUs as the scenario keeps busy at once, one report each; then, if
// that is more than one, one probe alone, its interruptions only.
//
// The reports in the guest's data channel, in order: the blocks between
// "`tag` i" and "`tag`-END i" lines (MMSIM-NOISE: the busy probes';
// MMSIM-NOISE-ALONE: the lone probe's).
std::vector<std::string> parse_noise_reports(const std::string& text,
                                             std::string_view tag = "MMSIM-NOISE");

// The most tasks of a simulated run busy at once: tasks alive together, each
// running (user or system time) over at least half of its life.
int peak_busy_tasks(const std::vector<std::pair<double, double>>& busy_lives);

// The simulation's [noise] from the reports: each key the median over the
// reports, clamped to its range (sim::noise_params), as --set overrides
// ("noise.irq_rate=1380.5"), except the keys the user set (`user_sets`,
// "noise.KEY=..."); and a line saying what was measured. Interruptions
// (irq_*) are all the fixed work quanta's, short and long: a guest's long
// ones, the host taking the vCPU, are what sets it apart. The probe counts
// them per second of its wall time, the simulation per second of work:
// irq_rate is the probes' over the share of their time the interruptions
// left them.
struct GuestNoise {
  std::vector<std::string> sets;
  std::string note;
};
// What the busy probes' interruptions took beyond a lone probe's, length
// by length (their "fwq"/"by_length" buckets, per second of work): each
// bucket's excess rate (0 where the lone probe had as many) and the busy
// probes' mean length and mean square length in it. Pooled over the
// reports; empty if the busy reports have no buckets (an older probe).
struct LengthBucket {
  double from_ns = 0, per_s = 0, mean_ns = 0, mean_sq_ns2 = 0;
};
std::vector<LengthBucket> lengths_beyond(const std::vector<nlohmann::ordered_json>& busy,
                                         const std::vector<nlohmann::ordered_json>& alone);

// The host's turns and the rest: the longest of `beyond` that together take
// `share_loss` of each second of work (1 / share - 1: what the host's turns
// take while its CPUs run the busy vCPUs round robin, noise.host_slice), the
// bucket at the cut in part; the rest are the shorter ones. Each part's mean
// length and cv (0 when it has none).
struct TurnSplit {
  double turn_ns = 0, turn_cv = 0, rest_ns = 0, rest_cv = 0;
};
TurnSplit split_turns(const std::vector<LengthBucket>& beyond, double share_loss);

// `host_cpus`: the host's CPUs the guest's vCPUs share (0: none shared,
// each vCPU its own), set as noise.host_cpus unless the user set it. With
// more reports (busy vCPUs) than that, the host's cores give each busy vCPU
// host_cpus / reports of its time, round robin in slices (noise.host_slice,
// fluid if the user sets it to 0) that make a turn off as long as the
// longest interruptions the busy probes had beyond the lone probe's that take
// that share (split_turns; the probes' mean interruption if they have no
// buckets), and the interruptions keep only what the probes lost beyond that
// share, at the shorter ones' length.
// `alone`: the lone probe's report (none, or one busy vCPU: all the
// interruptions are irq_rate's); with K busy ones, irq_rate and its lengths
// are the lone probe's, and what the K lost beyond the share and beyond
// those, at their mean length, is spread over the K - 1 other busy vCPUs
// (noise.irq_busy_rate). `user_slice_ns`: noise.host_slice as the scenario
// read it, which stands when `user_sets` sets it.
GuestNoise guest_noise(const std::vector<nlohmann::ordered_json>& reports,
                       const std::vector<std::string>& user_sets, int host_cpus = 0,
                       const std::vector<nlohmann::ordered_json>& alone = {},
                       double user_slice_ns = 0);

// The guest's user pace from the reports' "user" sections: the cost
// profile's memset_line_ns, sweep_elem_ns and sweep_elem_O0_ns, each the
// median over the reports that measured it, as --set overrides
// ("costs.memset_line_ns=31.2"), except those the user set; and a line
// saying what was measured. A TCG guest runs user code at the emulation's
// pace, a few times slower than hardware, and a memset's pace decides how
// often a thread reaches a THP another is still clearing.
GuestNoise guest_user_pace(const std::vector<nlohmann::ordered_json>& reports,
                           const std::vector<std::string>& user_sets);

// The guest's clocksource, the last word of the first "MMSIM-GUEST-UP"
// line of its console ("tsc", "tsc-early", "hpet"), or "" if there is none.
std::string guest_clocksource(std::string_view console);

// Runs every scenario on every kernel; the tables on `out`, progress and
// problems on `err`. Returns the exit code.
int run_validate(const ValidateOptions& o, std::ostream& out, std::ostream& err);

}  // namespace mmsim::validate
