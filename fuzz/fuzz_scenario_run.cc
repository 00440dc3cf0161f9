// libFuzzer target: random but valid scenarios, run with the invariant checker.
//
// The fuzz bytes drive a generator (FuzzedDataProvider) that writes a small
// scenario as TOML text: a tiny machine given by its shape (now and then the
// 2s-16c preset), a kernel version and some switches, 0-2 memory cgroups,
// 1-2 files, and 1-3 programs made of the README's ops (map, unmap, fork,
// threads, wait, loop, sweep, touch, madvise, mlock, sleep, count, cgroup,
// pin; files on disk or tmpfs),
// with small sizes and counts, a 50 ms time limit and at most 100,000 ops. The text goes through
// scenario::prepare like a file would, and runs with the checker on
// (RunOptions::check_invariants, with a stride: kCheckStride).
//
// It aborts (so libFuzzer records the input) when
//   - the loader rejects text the generator meant to be valid: a generator
//     bug or a loader bug; the text and the diagnostics are printed;
//   - the checker reports a failure (RunResult::check_failures);
// and, through the sanitizers, on any crash, leak or undefined behaviour.
//
// A few generated values sit on the edge of what the loader accepts (an
// empty `nodes` list, a mapping of a file from past its end, duplicate
// nodes, a mapping larger than the address space): it has refused some since
// they were added, and may refuse others. When it refuses a scenario that has
// one, the input is only dropped, not reported.
//
// An input whose run takes more than 100 ms (wall time) is checked like any
// other but kept out of the corpus (LLVMFuzzerTestOneInput returns -1).
//
// MMSIM_FUZZ_DUMP=FILE writes each generated scenario to FILE before it runs
// ("-": to stderr): run the target on one input to see its scenario.
//
//   build/fuzz/fuzz/fuzz_scenario_run build/fuzz/corpus/fuzz_scenario_run
//   MMSIM_FUZZ_DUMP=repro.toml build/fuzz/fuzz/fuzz_scenario_run crash-1234...
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cost/cost_profile.h"
#include "memcg/config.h"
#include "mm/config.h"
#include "numa/config.h"
#include "reclaim/config.h"
#include "scenario/simulation.h"
#include "sim/switches.h"

namespace {

using mmsim::KernelVersion;
using mmsim::SwitchInfo;
using mmsim::SwitchKind;

constexpr uint64_t kPage = 4096;

// One op: its keys with their values as TOML text, and a loop's body.
struct GenOp {
  std::string kind;
  std::vector<std::pair<std::string, std::string>> keys;
  std::vector<GenOp> body;
  // A sub-range of a region (sweep, touch, madvise, mlock), written after
  // `keys` once every mapping of the region is known (Generator::fit_range).
  std::string range_region;
  std::string map_region;  // map: the region it creates
  std::optional<uint64_t> offset_pages;
  std::optional<uint64_t> size_bytes;

  void set(const std::string& k, const std::string& v) { keys.emplace_back(k, v); }
  // As the loader's takes_time: every op but count, and a loop whose body does.
  bool takes_time() const {
    if (kind == "count") return false;
    if (kind != "loop") return true;
    return std::any_of(body.begin(), body.end(), [](const GenOp& o) { return o.takes_time(); });
  }
};

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

class Generator {
 public:
  explicit Generator(FuzzedDataProvider& in) : in_(in) {}

  // Whether the scenario has a value at the edge of what the loader accepts.
  bool edgy = false;
  bool fast_forward = true;

  std::string scenario() {
    std::string out;
    out += "[scenario]\nname = \"fuzz\"\n";
    out += "seed = " + std::to_string(in_.ConsumeIntegralInRange<uint32_t>(0, 1000)) + "\n";
    out += "time_limit = \"50ms\"\n";
    if (chance(4)) out += "sample_interval = " + quoted(pick({"1ms", "5ms", "20ms"})) + "\n";
    // A loop of system calls with a cost near 0 (costs()) runs millions of
    // passes in 50 ms: legitimate, but a timeout under the sanitizers. The
    // ops limit ends such a run cleanly (and is exercised itself).
    out += "\n[limits]\nops = 100000\n";
    out += machine();
    out += kernel();
    out += cgroups();
    out += files();
    // A swap device now and then, small like the machine (anon reclaim,
    // swap entries through fork, unmap and exit).
    if (chance(3)) {
      out += "\n[swap]\nsize = " + quoted(pick({"64KiB", "1MiB", "4MiB", "64MiB"})) + "\n";
    }
    if (chance(16)) out += costs();
    fast_forward = !chance(4);

    // Programs: main, p1, p2. A program starts only programs after it (no
    // fork cycles); they are generated last first, so that the tasks each
    // would start are known when a fork of it is written.
    const int nprog = in_.ConsumeIntegralInRange<int>(1, 3);
    nregions_ = in_.ConsumeIntegralInRange<int>(1, 3);
    progs_.assign(nprog, {});
    tasks_.assign(nprog, 1);
    for (int p = nprog - 1; p >= 0; --p) {
      cur_prog_ = p;
      const int nops = in_.ConsumeIntegralInRange<int>(1, 8);
      for (int i = 0; i < nops; ++i) progs_[p].push_back(op(0, 1, false));
    }
    // Every region an op uses is created by some map op, and main (which
    // inherits none) maps a region before it uses it, up to its first
    // `threads` (the loader checks both): main maps the others first.
    std::set<std::string> need;
    for (const std::string& r : used_regions_) {
      if (!mapped_regions_.count(r)) need.insert(r);
    }
    std::set<std::string> mapped_by_main;
    early_uses(progs_[0], mapped_by_main, need);
    std::vector<GenOp> first;
    for (const std::string& r : need) first.push_back(map_op(r, /*may_be_edgy=*/true));
    progs_[0].insert(progs_[0].begin(), first.begin(), first.end());
    for (auto& prog : progs_) {
      for (GenOp& o : prog) fit_range(o);
    }

    out += "\n[run]\nprogram = \"main\"\n";
    if (!cgroup_paths_.empty() && chance(2)) {
      out += "cgroup = " + quoted(cgroup_paths_[index(cgroup_paths_.size())]) + "\n";
    }
    for (int p = 0; p < nprog; ++p) {
      for (const GenOp& o : progs_[p]) {
        out += "\n[[programs." + prog_name(p) + "]]\n";
        out += "op = " + quoted(o.kind) + "\n";
        for (const auto& [k, v] : all_keys(o)) out += k + " = " + v + "\n";
        if (!o.body.empty()) out += "body = " + inline_body(o.body) + "\n";
      }
    }
    return out;
  }

 private:
  // ---- choices ------------------------------------------------------------
  // True one time in n; false once the input is used up (so that an empty
  // input gives the smallest scenario).
  bool chance(int n) { return in_.ConsumeIntegralInRange<int>(1, n) == n; }
  size_t index(size_t n) { return in_.ConsumeIntegralInRange<size_t>(0, n - 1); }
  template <class T>
  T pick(std::initializer_list<T> items) {
    return *(items.begin() + index(items.size()));
  }
  std::string pick(std::initializer_list<const char*> items) {
    return *(items.begin() + index(items.size()));
  }
  static std::string prog_name(int p) { return p == 0 ? "main" : "p" + std::to_string(p); }

  // ---- machine ------------------------------------------------------------
  std::string machine() {
    std::string out = "\n[machine]\n";
    if (chance(8)) {
      out += "preset = \"2s-16c\"\n";
      nodes_ = 2;
      cpus_ = 16;
      machine_pages_ = 2 * (uint64_t{16} << 30) / kPage;
      return out;
    }
    const int sockets = in_.ConsumeIntegralInRange<int>(1, 2);
    const int cores = pick({1, 2, 4});
    const int threads = in_.ConsumeIntegralInRange<int>(1, 2);
    const int nps = cores % 2 == 0 && chance(2) ? 2 : 1;
    // (512 MiB a node now and then: transparent huge pages need 512 MiB.)
    const uint64_t mem_kib = pick<uint64_t>({128, 1024, 4096, 16384, 524288});
    nodes_ = sockets * nps;
    cpus_ = static_cast<size_t>(sockets * cores * threads);
    machine_pages_ = nodes_ * mem_kib * 1024 / kPage;
    out += "sockets = " + std::to_string(sockets) + "\n";
    out += "cores_per_socket = " + std::to_string(cores) + "\n";
    if (threads > 1 || chance(2)) out += "threads_per_core = " + std::to_string(threads) + "\n";
    if (nps > 1 || chance(2)) out += "nodes_per_socket = " + std::to_string(nps) + "\n";
    out += "mem_per_node = \"" + std::to_string(mem_kib) + "KiB\"\n";
    out += "llc_per_socket = " + quoted(pick({"32KiB", "1MiB", "30MiB"})) + "\n";
    if (nodes_ > 1 && chance(4)) {
      std::vector<std::vector<int>> d(nodes_, std::vector<int>(nodes_, 10));
      for (size_t i = 0; i < nodes_; ++i) {
        for (size_t j = i + 1; j < nodes_; ++j) d[i][j] = d[j][i] = pick({11, 12, 20, 21, 40, 255});
      }
      out += "distance = [";
      for (size_t i = 0; i < nodes_; ++i) {
        out += i ? ", [" : "[";
        for (size_t j = 0; j < nodes_; ++j) out += (j ? ", " : "") + std::to_string(d[i][j]);
        out += "]";
      }
      out += "]\n";
    }
    // CPU-less memory nodes now and then (tiers, demotion, promotion).
    if (chance(4)) {
      const uint64_t mem = pick<uint64_t>({128, 1024, 4096});
      out += "memory_nodes_per_socket = 1\n";
      out += "memory_node_mem = \"" + std::to_string(mem) + "KiB\"\n";
      out += "dram_latency_ns = 100\n";
      out += "memory_node_latency_ns = " + std::to_string(pick({101, 180, 400})) + "\n";
      if (chance(2)) {
        out += "dram_bandwidth_mbps = 100000\n";
        out += "memory_node_bandwidth_mbps = " + std::to_string(pick({1, 30000, 200000})) + "\n";
      }
      if (chance(2)) out += "memory_node_online = " + quoted(pick({"boot", "kmem"})) + "\n";
      nodes_ += static_cast<size_t>(sockets);
      machine_pages_ += static_cast<uint64_t>(sockets) * mem * 1024 / kPage;
    }
    return out;
  }

  // ---- kernel switches ------------------------------------------------------
  struct SetSwitch {
    const SwitchInfo* info;
    int64_t value;
    std::string text;  // as written
  };

  // A value the switch accepts, as TOML text; nullopt if none was found.
  std::optional<std::pair<int64_t, std::string>> switch_value(const SwitchInfo& sw) {
    if (sw.kind == SwitchKind::kBool) {
      const bool b = chance(2);
      if (chance(4)) return std::make_pair<int64_t, std::string>(b, b ? "\"on\"" : "\"off\"");
      return std::make_pair<int64_t, std::string>(b, b ? "true" : "false");
    }
    if (sw.kind == SwitchKind::kChoice || (!sw.words.empty() && chance(3))) {
      if (sw.words.empty()) return std::nullopt;
      const auto& w = sw.words[index(sw.words.size())];
      return std::make_pair(w.value, quoted(std::string(w.word)));
    }
    std::vector<int64_t> cands = {sw.lo,
                                  sw.hi,
                                  sw.default_value,
                                  sw.value_for(version_),
                                  sw.lo + sw.multiple_of,
                                  sw.lo + 2 * sw.multiple_of,
                                  sw.lo + 4 * sw.multiple_of};
    if (sw.unit == "ms") cands.insert(cands.end(), {1, 2, 5, 10, 20});
    const int64_t v = cands[index(cands.size())];
    if (!sw.check(v).empty()) return std::nullopt;
    return std::make_pair(v, std::to_string(v));
  }

  int64_t effective(const SwitchInfo& sw) const {
    auto it = set_.find(std::string(sw.name()));
    return it != set_.end() ? it->second.value : sw.value_for(version_);
  }
  void set_switch(const SwitchInfo& sw, int64_t v) {
    set_[sw.name()] = SetSwitch{&sw, v, std::to_string(v)};
  }
  template <class C>
  const SwitchInfo* find(std::span<const mmsim::Switch<C>> table, std::string_view key) {
    for (const auto& s : table) {
      if (s.info.key == key) return &s.info;
    }
    return nullptr;
  }

  std::string kernel() {
    std::string version_line;
    version_ = mmsim::scenario::KernelConfig{}.version;
    if (chance(2)) {
      const std::string v =
          pick({"2.6",  "3.3",  "3.4",  "3.8",  "3.12", "3.13", "3.15", "4.9",  "4.10",
                "4.13", "4.14", "4.15", "4.16", "4.17", "4.18", "4.19", "4.20", "5.0",
                "5.15", "5.17", "5.18", "6.1",  "6.6",  "6.10", "6.12", "6.16", "6.19"});
      if (auto kv = KernelVersion::parse(v)) {
        version_ = *kv;
        version_line = "version = " + quoted(v) + "\n";
      }
    }
    auto each = [&](auto table) {
      for (const auto& s : table) {
        if (!chance(4)) continue;
        if (auto v = switch_value(s.info))
          set_[s.info.name()] = SetSwitch{&s.info, v->first, v->second};
      }
    };
    each(mmsim::mm::mm_switches());
    each(mmsim::numa::numa_switches());
    each(mmsim::memcg::memcg_switches());
    each(mmsim::reclaim::reclaim_switches());

    // NUMA scanning that starts within the 50 ms the run lasts, half the time.
    const auto numa = mmsim::numa::numa_switches();
    const SwitchInfo* on = find(numa, "numa_balancing");
    const SwitchInfo* delay = find(numa, "numa_balancing_scan_delay_ms");
    const SwitchInfo* pmin = find(numa, "numa_balancing_scan_period_min_ms");
    const SwitchInfo* pmax = find(numa, "numa_balancing_scan_period_max_ms");
    if (delay && pmin && pmax && chance(2)) {
      set_switch(*delay, pick<int64_t>({1, 2, 5, 10}));
      set_switch(*pmin, pick<int64_t>({1, 2, 5, 10}));
      set_switch(*pmax, pick<int64_t>({10, 20, 100}));
    }
    // Checks across switches (scenario.cc check_kernel).
    if (on && effective(*on) >= 1 && !mmsim::numa::has_numa_balancing(version_)) {
      set_switch(*on, 0);
    } else if (on && effective(*on) >= 2 && !mmsim::numa::has_tiering_mode(version_)) {
      set_switch(*on, 1);
    }
    if (pmin && pmax && effective(*pmin) > effective(*pmax)) {
      const int64_t lo = effective(*pmax), hi = effective(*pmin);
      set_switch(*pmin, lo);
      set_switch(*pmax, hi);
    }
    if (const SwitchInfo* h = find(mmsim::memcg::memcg_switches(), "hierarchy")) {
      memcg_v2_ = h->from_word("v2") == effective(*h);
    }

    std::map<std::string, std::string> sections;  // section -> its lines
    for (const auto& [name, s] : set_) {
      sections[std::string(s.info->section)] += std::string(s.info->key) + " = " + s.text + "\n";
    }
    std::string out;
    if (!version_line.empty() || sections.count("kernel")) {
      out += "\n[kernel]\n" + version_line + sections["kernel"];
    }
    for (const char* sec : {"numa", "memcg"}) {
      if (sections.count(sec)) out += "\n[" + std::string(sec) + "]\n" + sections[sec];
    }
    return out;
  }

  // ---- cgroups, files, costs --------------------------------------------------
  std::string cgroups() {
    std::string out;
    const int n = in_.ConsumeIntegralInRange<int>(0, 2);
    for (int i = 0; i < n; ++i) {
      const std::string path = "/g" + std::to_string(i);
      cgroup_paths_.push_back(path);
      out += "\n[[cgroups]]\npath = " + quoted(path) + "\n";
      if (chance(2)) {
        out +=
            "limit = " + quoted(pick({"4KiB", "16KiB", "64KiB", "256KiB", "1MiB", "64MiB"})) + "\n";
      }
      if (!memcg_v2_ && chance(2)) {
        out +=
            "move_charge_at_immigrate = " + std::to_string(in_.ConsumeIntegralInRange<int>(0, 3)) +
            "\n";
      }
    }
    return out;
  }

  std::string files() {
    std::string out;
    const int n = in_.ConsumeIntegralInRange<int>(1, 2);
    for (int i = 0; i < n; ++i) {
      uint64_t bytes = pick<uint64_t>({1, 2, 3, 16, 64, 256, 512}) * kPage;
      if (chance(4)) bytes -= in_.ConsumeIntegralInRange<uint64_t>(0, kPage - 1);
      const uint64_t pages = (bytes + kPage - 1) / kPage;
      file_pages_.push_back(pages);
      out += "\n[[files]]\nname = \"f" + std::to_string(i) + "\"\n";
      out += "size = " +
             (bytes % 1024 == 0 && chance(2) ? quoted(std::to_string(bytes / 1024) + "KiB")
                                             : std::to_string(bytes)) +
             "\n";
      // The cached files together fit the machine.
      if (cached_pages_ + pages <= machine_pages_ && chance(2)) {
        cached_pages_ += pages;
        out += "cached = true\n";
      }
      if (chance(3)) out += "fs = " + quoted(pick({"tmpfs", "disk"})) + "\n";
      if (chance(3)) out += "node = " + std::to_string(index(nodes_)) + "\n";
    }
    return out;
  }

  std::string costs() {
    std::string out = "\n[costs]\n";
    const auto params = mmsim::cost::cost_params();
    std::set<std::string> done;
    const int n = in_.ConsumeIntegralInRange<int>(1, 3);
    for (int i = 0; i < n && !params.empty(); ++i) {
      const std::string name(params[index(params.size())].name);
      if (!done.insert(name).second) continue;
      out += name + " = " + pick({"0", "0.1", "1", "100", "1e5"}) + "\n";
    }
    return out;
  }

  // ---- ops ----------------------------------------------------------------------
  std::string region() {
    const std::string r = "r" + std::to_string(index(nregions_));
    used_regions_.insert(r);
    return r;
  }
  // An optional sub-range of the op's region: offset (page multiple) and size (> 0).
  void range(GenOp& o, const std::string& r) {
    o.range_region = r;
    if (chance(3)) o.offset_pages = in_.ConsumeIntegralInRange<uint64_t>(0, 8);
    if (chance(3)) {
      o.size_bytes = chance(2) ? in_.ConsumeIntegralInRange<uint64_t>(1, 16) * kPage
                               : in_.ConsumeIntegralInRange<uint64_t>(1, 65536);
    }
  }
  // Regions main uses before it maps them, in the order the loader reads
  // the ops (loop bodies in place), up to the first `threads`.
  static bool early_uses(const std::vector<GenOp>& ops, std::set<std::string>& mapped,
                         std::set<std::string>& need) {
    for (const GenOp& o : ops) {
      if (o.kind == "threads") return false;
      if (o.kind == "map") mapped.insert(o.map_region);
      if (!o.range_region.empty() && !mapped.count(o.range_region)) need.insert(o.range_region);
      if (!early_uses(o.body, mapped, need)) return false;
    }
    return true;
  }
  // The loader refuses a range past the end of the largest mapping of its
  // region (when one has pages): fold it inside.
  void fit_range(GenOp& o) {
    for (GenOp& b : o.body) fit_range(b);
    if (o.range_region.empty()) return;
    const auto it = region_pages_.find(o.range_region);
    if (it == region_pages_.end() || it->second == 0) return;
    const uint64_t pages = it->second;
    if (o.offset_pages && *o.offset_pages >= pages) o.offset_pages = *o.offset_pages % pages;
    const uint64_t room = (pages - o.offset_pages.value_or(0)) * kPage;
    if (o.size_bytes && *o.size_bytes > room) o.size_bytes = 1 + (*o.size_bytes - 1) % room;
  }
  static std::vector<std::pair<std::string, std::string>> all_keys(const GenOp& o) {
    auto keys = o.keys;
    if (o.offset_pages) keys.emplace_back("offset", std::to_string(*o.offset_pages * kPage));
    if (o.size_bytes) keys.emplace_back("size", std::to_string(*o.size_bytes));
    return keys;
  }
  std::string nodes_list(size_t n) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(index(nodes_));
    return s + "]";
  }

  GenOp map_op(const std::string& r, bool may_be_edgy) {
    GenOp o;
    o.kind = "map";
    o.map_region = r;
    o.set("region", quoted(r));
    mapped_regions_.insert(r);
    const bool file = !file_pages_.empty() && chance(3);
    uint64_t fpages = 0;
    uint64_t off = 0;
    uint64_t pages = 0;
    bool sized = true;
    if (file) {
      const size_t f = index(file_pages_.size());
      fpages = file_pages_[f];
      o.set("file", quoted("f" + std::to_string(f)));
      if (chance(3)) {
        off = in_.ConsumeIntegralInRange<uint64_t>(0, fpages + 1);
        o.set("offset", std::to_string(off * kPage));
      }
      sized = chance(2);
      if (!sized && off >= fpages) edgy = true;  // a mapping of no pages
      if (!sized) pages = off < fpages ? fpages - off : 0;
    }
    if (sized) {
      if (may_be_edgy && chance(32)) {
        // Big mappings: up to the whole user address space, and past it.
        const uint64_t gib = pick<uint64_t>({1, 1024, 127 * 1024, 200 * 1024});
        if (gib == 200 * 1024) edgy = true;  // more than the user address space
        pages = gib << (30 - 12);
        o.set("size", quoted(std::to_string(gib) + "GiB"));
      } else {
        uint64_t bytes = pick<uint64_t>({1, 2, 3, 4, 8, 16, 64, 256}) * kPage;
        if (chance(4)) bytes -= in_.ConsumeIntegralInRange<uint64_t>(0, kPage - 1);
        pages = (bytes + kPage - 1) / kPage;
        o.set("size", std::to_string(bytes));
      }
    }
    region_pages_[r] = std::max(region_pages_[r], pages);
    if (chance(2)) o.set("prot", quoted(pick({"r", "rw", "rx", "rwx"})));
    if (chance(2)) o.set("flags", quoted(pick({"private", "shared"})));
    if (chance(3)) {
      const std::string pol = pick({"default", "bind", "preferred", "interleave"});
      o.set("policy", quoted(pol));
      if (pol != "default") {
        if (may_be_edgy && chance(16)) {
          o.set("nodes", "[]");  // accepted today; a bind/interleave/preferred of no node
          edgy = true;
        } else if (pol == "preferred") {
          o.set("nodes", nodes_list(1));
        } else {
          const size_t n = in_.ConsumeIntegralInRange<size_t>(1, nodes_);
          std::set<std::string> seen;
          std::string list = "[";
          for (size_t i = 0; i < n; ++i) {
            const std::string node = std::to_string(index(nodes_));
            if (!seen.insert(node).second) edgy = true;  // a node listed twice
            list += (i ? ", " : "") + node;
          }
          o.set("nodes", list + "]");
        }
      }
    }
    return o;
  }

  // One op at loop depth `depth`, run `mult` times per run of its program
  // (count loops multiply); `timed`: inside a duration loop.
  GenOp op(int depth, uint64_t mult, bool timed) {
    enum {
      kMap,
      kUnmap,
      kFork,
      kThreads,
      kWait,
      kLoop,
      kSweep,
      kTouch,
      kMadvise,
      kMlock,
      kSleep,
      kCount,
      kCgroup,
      kPin,
      kKinds
    };
    int k = in_.ConsumeIntegralInRange<int>(0, kKinds + 3);
    if (k >= kKinds) k = k == kKinds ? kTouch : k == kKinds + 1 ? kSweep : kMap;
    GenOp o;
    switch (k) {
      case kMap:
        return map_op(region(), true);
      case kUnmap:
        o.kind = "unmap";
        o.set("region", quoted(region()));
        return o;
      case kFork:
      case kThreads: {
        // Only programs after this one; never in a duration loop (unbounded
        // tasks); at most ~48 tasks per run of a program.
        const int nprog = static_cast<int>(progs_.size());
        if (cur_prog_ + 1 >= nprog || timed) break;
        const int target = in_.ConsumeIntegralInRange<int>(cur_prog_ + 1, nprog - 1);
        const uint64_t count = in_.ConsumeIntegralInRange<uint64_t>(1, 3);
        const uint64_t more = count * mult * tasks_[target];
        if (tasks_[cur_prog_] + more > 48) break;
        tasks_[cur_prog_] += more;
        o.kind = k == kFork ? "fork" : "threads";
        o.set("program", quoted(prog_name(target)));
        if (count > 1 || chance(2)) o.set("count", std::to_string(count));
        return o;
      }
      case kWait:
        o.kind = "wait";
        return o;
      case kLoop: {
        if (depth >= 3) break;
        o.kind = "loop";
        const bool by_time = chance(2);
        uint64_t count = 1;
        if (by_time) {
          o.set("duration", quoted(pick({"10us", "100us", "1ms", "5ms", "20ms"})));
        } else {
          count = in_.ConsumeIntegralInRange<uint64_t>(1, 4);
          o.set("count", std::to_string(count));
        }
        const int n = in_.ConsumeIntegralInRange<int>(1, 4);
        for (int i = 0; i < n; ++i) o.body.push_back(op(depth + 1, mult * count, timed || by_time));
        // The loader refuses a duration loop whose body takes no time.
        if (by_time && !o.takes_time()) o.body.push_back(sleep_op());
        return o;
      }
      case kSweep: {
        o.kind = "sweep";
        const std::string r = region();
        o.set("region", quoted(r));
        if (chance(2)) o.set("mode", quoted(pick({"read", "write"})));
        range(o, r);
        if (chance(2)) o.set("elem_size", pick({"1", "2", "4", "8", "64", "512", "4096"}));
        if (chance(2)) o.set("compute_ns", pick({"0", "0.5", "1", "10", "1000"}));
        if (chance(3)) o.set("build", quoted(pick({"O0", "O2"})));
        return o;
      }
      case kTouch:
      case kMadvise:
      case kMlock: {
        o.kind = k == kTouch ? "touch" : k == kMadvise ? "madvise" : "mlock";
        const std::string r = region();
        o.set("region", quoted(r));
        if (k == kTouch && chance(2)) o.set("mode", quoted(pick({"read", "write"})));
        if (k == kMadvise)
          o.set("advice", quoted(pick({"dontneed", "dontneed", "hugepage", "nohugepage"})));
        range(o, r);
        return o;
      }
      case kSleep:
        o.kind = "sleep";
        o.set("duration",
              chance(32) ? "\"10h\"" : quoted(pick({"1us", "10us", "100us", "1ms", "5ms"})));
        return o;
      case kCount:
        o.kind = "count";
        o.set("counter", quoted("c" + std::to_string(index(3))));
        if (chance(2)) o.set("by", pick({"1", "7", "1000", "9223372036854775807"}));
        return o;
      case kCgroup: {
        o.kind = "cgroup";
        const size_t i = index(cgroup_paths_.size() + 1);
        o.set("path", quoted(i == cgroup_paths_.size() ? "/" : cgroup_paths_[i]));
        return o;
      }
      case kPin: {
        // sched_setaffinity to 1-3 CPUs or nodes of the machine.
        o.kind = "pin";
        const bool by_node = chance(2);
        const size_t n = by_node ? nodes_ : cpus_;
        const int k = in_.ConsumeIntegralInRange<int>(1, 3);
        std::string list = "[";
        for (int i = 0; i < k; ++i) list += (i ? ", " : "") + std::to_string(index(n));
        o.set(by_node ? "nodes" : "cpus", list + "]");
        return o;
      }
      default:
        break;
    }
    // What could not be generated here: a short sleep.
    return sleep_op();
  }
  static GenOp sleep_op() {
    GenOp o;
    o.kind = "sleep";
    o.set("duration", "\"10us\"");
    return o;
  }

  static std::string inline_op(const GenOp& o) {
    std::string s = "{ op = " + quoted(o.kind);
    for (const auto& [k, v] : all_keys(o)) s += ", " + k + " = " + v;
    if (!o.body.empty()) s += ", body = " + inline_body(o.body);
    return s + " }";
  }
  static std::string inline_body(const std::vector<GenOp>& body) {
    std::string s = "[ ";
    for (size_t i = 0; i < body.size(); ++i) s += (i ? ", " : "") + inline_op(body[i]);
    return s + " ]";
  }

  FuzzedDataProvider& in_;
  KernelVersion version_;
  std::map<std::string, SetSwitch> set_;
  bool memcg_v2_ = false;
  size_t nodes_ = 1;
  size_t cpus_ = 1;
  uint64_t machine_pages_ = 0;
  uint64_t cached_pages_ = 0;
  std::vector<std::string> cgroup_paths_;
  std::vector<uint64_t> file_pages_;
  int nregions_ = 1;
  std::set<std::string> used_regions_;
  std::set<std::string> mapped_regions_;
  std::map<std::string, uint64_t> region_pages_;  // the largest mapping of each region
  std::vector<std::vector<GenOp>> progs_;
  std::vector<uint64_t> tasks_;  // tasks one run of each program may start, itself included
  int cur_prog_ = 0;
};

[[noreturn]] void fail(const std::string& what, const std::vector<std::string>& lines,
                       const std::string& text) {
  std::fprintf(stderr, "fuzz_scenario_run: %s\n", what.c_str());
  for (const auto& l : lines) std::fprintf(stderr, "  %s\n", l.c_str());
  std::fprintf(stderr, "--- scenario ---\n%s--- end ---\n", text.c_str());
  std::abort();
}

constexpr std::chrono::milliseconds kSlowRun{100};
// The checker after each of the first 64 kernel operations, then after every
// 64th: a loop of cheap system calls over a 50 ms run makes tens of thousands
// of them, and a check costs as much as the state is large. Checks are of
// state, so a broken invariant is still caught, only later.
constexpr uint32_t kCheckStride = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return -1;  // the generator uses a few hundred bytes at most
  FuzzedDataProvider in(data, size);
  Generator gen(in);
  const std::string text = gen.scenario();
  if (const char* dump = std::getenv("MMSIM_FUZZ_DUMP")) {
    if (std::string(dump) == "-") {
      std::fprintf(stderr, "%s", text.c_str());
    } else {
      std::ofstream(dump, std::ios::binary) << text;
    }
  }

  mmsim::scenario::Source source;
  source.path = "fuzz-run.toml";
  source.text = text;
  const mmsim::scenario::PrepareResult r = mmsim::scenario::prepare(source);
  if (!r.run) {
    if (gen.edgy) return -1;  // the loader may refuse an edge value: not a finding
    std::vector<std::string> lines;
    for (const auto& d : r.diagnostics) lines.push_back(d.str());
    fail("the loader refused a generated scenario (a generator or loader bug)", lines, text);
  }
  const auto start = std::chrono::steady_clock::now();
  const mmsim::workload::RunResult res = mmsim::scenario::simulate(
      *r.run, mmsim::scenario::RunOptions{.check_invariants = true,
                                          .check_stride = kCheckStride,
                                          .fast_forward = gen.fast_forward});
  if (!res.check_failures.empty()) fail("the invariant checker failed", res.check_failures, text);
  // A slow input is checked, but not kept in the corpus: a few of them would
  // take most of the time of every pass over it (each fuzzing run starts
  // with one).
  if (std::chrono::steady_clock::now() - start > kSlowRun) return -1;
  return 0;
}
