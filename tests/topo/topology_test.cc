// Tests for the machine model: building from a spec, spec validation,
// presets, reading a (fake) sysfs tree and the numactl-style report.
#include "topo/topology.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mmsim::topo {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

// A valid spec to vary: 2 sockets x 2 cores x 2 threads, one node per socket.
MachineSpec small_spec() {
  MachineSpec spec;
  spec.name = "small";
  spec.sockets = 2;
  spec.cores_per_socket = 2;
  spec.threads_per_core = 2;
  spec.mem_per_node = 1 * kGiB;
  spec.llc_per_socket = 8 * kMiB;
  return spec;
}

std::vector<NodeId> node_ids(std::initializer_list<uint16_t> ids) {
  std::vector<NodeId> out;
  for (uint16_t id : ids) out.push_back(NodeId(id));
  return out;
}

std::vector<CpuId> cpu_ids(std::initializer_list<uint16_t> ids) {
  std::vector<CpuId> out;
  for (uint16_t id : ids) out.push_back(CpuId(id));
  return out;
}

bool has_problem_starting_with(const std::vector<std::string>& problems, std::string_view prefix) {
  for (const std::string& p : problems) {
    if (p.starts_with(prefix)) return true;
  }
  return false;
}

// A sysfs tree in a temporary directory, removed when the test ends.
class FakeSysfs {
 public:
  FakeSysfs() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("mmsim_topo_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "devices/system/cpu");
  }
  ~FakeSysfs() { fs::remove_all(root_); }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  std::string root() const { return root_.string(); }

  FakeSysfs& node(int id, std::string_view cpulist, std::string_view distance, uint64_t mem_kb) {
    const fs::path dir = root_ / "devices/system/node" / ("node" + std::to_string(id));
    write(dir / "cpulist", std::string(cpulist) + "\n");
    write(dir / "distance", std::string(distance) + "\n");
    write(dir / "meminfo", "Node " + std::to_string(id) +
                               " MemTotal:       " + std::to_string(mem_kb) + " kB\nNode " +
                               std::to_string(id) + " MemFree:        1024 kB\n");
    return *this;
  }
  FakeSysfs& cpu(int id, int package, int core_id) {
    const fs::path dir = cpu_dir(id) / "topology";
    write(dir / "physical_package_id", std::to_string(package) + "\n");
    write(dir / "core_id", std::to_string(core_id) + "\n");
    return *this;
  }
  FakeSysfs& cache(int cpu, int index, int level, std::string_view size) {
    const fs::path dir = cpu_dir(cpu) / "cache" / ("index" + std::to_string(index));
    write(dir / "level", std::to_string(level) + "\n");
    write(dir / "size", std::string(size) + "\n");
    return *this;
  }
  FakeSysfs& file(std::string_view relative, std::string_view text) {
    write(root_ / relative, std::string(text));
    return *this;
  }

 private:
  fs::path cpu_dir(int id) const {
    return root_ / "devices/system/cpu" / ("cpu" + std::to_string(id));
  }
  static void write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  fs::path root_;
};

// Two sockets, one node each, 2 cores x 2 threads per socket, numbered the
// Intel way: cpus 0-3 are first threads, 4-7 their siblings.
void two_socket_host(FakeSysfs& sys) {
  sys.node(0, "0-1,4-5", "10 21", 2 * 1024 * 1024).node(1, "2-3,6-7", "21 10", 1024 * 1024);
  sys.cpu(0, 0, 0).cpu(1, 0, 1).cpu(2, 1, 0).cpu(3, 1, 1);
  sys.cpu(4, 0, 0).cpu(5, 0, 1).cpu(6, 1, 0).cpu(7, 1, 1);
}

// Building from a spec.

TEST(Topology, NodeCountIsSocketsTimesNodesPerSocket) {
  MachineSpec spec = small_spec();
  spec.nodes_per_socket = 2;
  EXPECT_EQ(Topology(spec).nr_nodes(), 4u);
}

TEST(Topology, CpusNumberTheFirstThreadOfEveryCoreBeforeAnySibling) {
  const Topology t(small_spec());
  ASSERT_EQ(t.nr_cpus(), 8u);
  // cpu 2 is socket 1 core 0 thread 0; cpu 5 is socket 0 core 1 thread 1.
  EXPECT_EQ(t.cpu(CpuId(2)).socket, 1);
  EXPECT_EQ(t.cpu(CpuId(2)).core, 0);
  EXPECT_EQ(t.cpu(CpuId(2)).thread, 0);
  EXPECT_EQ(t.cpu(CpuId(5)).socket, 0);
  EXPECT_EQ(t.cpu(CpuId(5)).core, 1);
  EXPECT_EQ(t.cpu(CpuId(5)).thread, 1);
}

TEST(Topology, NodeCpuListIsAscendingAndIncludesSmtSiblings) {
  const Topology t(small_spec());
  EXPECT_EQ(t.node(NodeId(0)).cpus, cpu_ids({0, 1, 4, 5}));
  EXPECT_EQ(t.node(NodeId(1)).cpus, cpu_ids({2, 3, 6, 7}));
}

TEST(Topology, SubNumaClusteringSplitsTheCoresOfASocketEvenly) {
  MachineSpec spec = small_spec();
  spec.sockets = 1;
  spec.cores_per_socket = 4;
  spec.threads_per_core = 1;
  spec.nodes_per_socket = 2;
  const Topology t(spec);
  EXPECT_EQ(t.node(NodeId(0)).cpus, cpu_ids({0, 1}));
  EXPECT_EQ(t.node(NodeId(1)).cpus, cpu_ids({2, 3}));
  EXPECT_EQ(t.cpu_to_node(CpuId(3)), NodeId(1));
}

TEST(Topology, EveryNodeGetsMemPerNode) {
  const Topology t(small_spec());
  EXPECT_EQ(t.node(NodeId(1)).mem_bytes, 1 * kGiB);
  EXPECT_EQ(t.total_mem_bytes(), 2 * kGiB);
}

TEST(Topology, EmptyDistanceMeansTenLocalAndTwentyRemote) {
  const Topology t(small_spec());
  EXPECT_EQ(t.distance(NodeId(0), NodeId(0)), 10);
  EXPECT_EQ(t.distance(NodeId(0), NodeId(1)), 20);
}

TEST(Topology, EmptyDistanceMeansElevenBetweenClustersOfOneSocket) {
  MachineSpec spec = small_spec();
  spec.nodes_per_socket = 2;
  const Topology t(spec);
  EXPECT_EQ(t.distance(NodeId(0), NodeId(1)), 11);
  EXPECT_EQ(t.distance(NodeId(1), NodeId(2)), 20);
}

TEST(Topology, GivenDistanceMatrixIsUsedAsIs) {
  MachineSpec spec = small_spec();
  spec.distance = {{10, 32}, {32, 10}};
  EXPECT_EQ(Topology(spec).distance(NodeId(1), NodeId(0)), 32);
}

TEST(Topology, DistanceFactorIsTheSlitDistanceOverTheLocalTen) {
  MachineSpec spec = small_spec();
  spec.distance = {{10, 32}, {32, 10}};
  const Topology t(spec);
  EXPECT_DOUBLE_EQ(t.distance_factor(NodeId(0), NodeId(0)), 1.0);
  EXPECT_DOUBLE_EQ(t.distance_factor(NodeId(1), NodeId(1)), 1.0);
  EXPECT_DOUBLE_EQ(t.distance_factor(NodeId(0), NodeId(1)), 3.2);
  EXPECT_DOUBLE_EQ(t.distance_factor(NodeId(1), NodeId(0)), 3.2);
}

TEST(Topology, EverySocketGetsTheLlcOfTheSpec) {
  const Topology t(small_spec());
  ASSERT_EQ(t.nr_sockets(), 2u);
  EXPECT_EQ(t.llc_bytes(1), 8 * kMiB);
}

TEST(TopologyDeathTest, BuildingFromAnInvalidSpecAborts) {
  MachineSpec spec = small_spec();
  spec.mem_per_node = 0;
  EXPECT_DEATH(Topology{spec}, "mem_per_node");
}

TEST(Topology, ExplicitListsRebuildEachNodeCpuListFromTheCpus) {
  std::vector<Node> nodes(2);
  nodes[1].id = NodeId(1);
  std::vector<Cpu> cpus(3);
  for (uint16_t c = 0; c < 3; ++c) cpus[c].id = CpuId(c);
  cpus[0].node = NodeId(1);
  cpus[2].node = NodeId(1);
  const Topology t("t", nodes, cpus, {{10, 20}, {20, 10}}, {0});
  EXPECT_EQ(t.node(NodeId(1)).cpus, cpu_ids({0, 2}));
  EXPECT_EQ(t.node(NodeId(0)).cpus, cpu_ids({1}));
}

// Fallback order.

TEST(Topology, FallbackOrderListsTheNodeItselfThenNearestNodes) {
  MachineSpec spec = small_spec();
  spec.sockets = 4;
  spec.distance = {{10, 30, 20, 40}, {30, 10, 20, 20}, {20, 20, 10, 30}, {40, 20, 30, 10}};
  EXPECT_EQ(Topology(spec).fallback_order(NodeId(0)), node_ids({0, 2, 1, 3}));
}

TEST(Topology, FallbackOrderBreaksDistanceTiesByNodeId) {
  MachineSpec spec = small_spec();
  spec.sockets = 4;
  spec.distance = {{10, 30, 20, 40}, {30, 10, 20, 20}, {20, 20, 10, 30}, {40, 20, 30, 10}};
  EXPECT_EQ(Topology(spec).fallback_order(NodeId(1)), node_ids({1, 2, 3, 0}));
}

// Validation.

TEST(ValidateMachineSpec, AValidSpecHasNoProblems) {
  EXPECT_TRUE(validate_machine_spec(small_spec()).empty());
}

TEST(ValidateMachineSpec, ZeroCountsAreReportedUnderTheirKeys) {
  MachineSpec spec = small_spec();
  spec.cores_per_socket = 0;
  spec.threads_per_core = 0;
  const auto problems = validate_machine_spec(spec);
  EXPECT_TRUE(has_problem_starting_with(problems, "cores_per_socket: "));
  EXPECT_TRUE(has_problem_starting_with(problems, "threads_per_core: "));
}

TEST(ValidateMachineSpec, MoreThan1024NodesIsRejected) {
  MachineSpec spec = small_spec();
  spec.sockets = 513;
  spec.nodes_per_socket = 2;
  spec.threads_per_core = 1;
  EXPECT_TRUE(has_problem_starting_with(validate_machine_spec(spec), "nodes_per_socket: "));
}

TEST(ValidateMachineSpec, Exactly1024NodesAreAccepted) {
  MachineSpec spec = small_spec();
  spec.sockets = 1024;
  spec.cores_per_socket = 1;
  spec.threads_per_core = 1;
  EXPECT_TRUE(validate_machine_spec(spec).empty());
}

TEST(ValidateMachineSpec, MoreThan65535CpusIsRejected) {
  MachineSpec spec = small_spec();
  spec.sockets = 256;
  spec.cores_per_socket = 128;
  spec.threads_per_core = 2;
  EXPECT_TRUE(has_problem_starting_with(validate_machine_spec(spec), "threads_per_core: "));
}

TEST(ValidateMachineSpec, CoresMustSplitEvenlyAmongTheNodesOfASocket) {
  MachineSpec spec = small_spec();
  spec.cores_per_socket = 6;
  spec.nodes_per_socket = 4;
  EXPECT_TRUE(has_problem_starting_with(validate_machine_spec(spec), "cores_per_socket: "));
}

TEST(ValidateMachineSpec, ZeroMemPerNodeIsRejected) {
  MachineSpec spec = small_spec();
  spec.mem_per_node = 0;
  EXPECT_TRUE(has_problem_starting_with(validate_machine_spec(spec), "mem_per_node: "));
}

TEST(ValidateMachineSpec, MemPerNodeMustBeAWholeNumberOfPages) {
  MachineSpec spec = small_spec();
  spec.mem_per_node = kGiB + 100;
  EXPECT_TRUE(has_problem_starting_with(validate_machine_spec(spec), "mem_per_node: "));
}

TEST(ValidateMachineSpec, ZeroLlcIsRejected) {
  MachineSpec spec = small_spec();
  spec.llc_per_socket = 0;
  EXPECT_TRUE(has_problem_starting_with(validate_machine_spec(spec), "llc_per_socket: "));
}

TEST(ValidateMachineSpec, DistanceMustHaveOneRowPerNode) {
  MachineSpec spec = small_spec();
  spec.distance = {{10, 20}};
  EXPECT_TRUE(has_problem_starting_with(validate_machine_spec(spec), "distance: "));
}

TEST(ValidateMachineSpec, DistanceRowsMustHaveOneEntryPerNode) {
  MachineSpec spec = small_spec();
  spec.distance = {{10, 20}, {20, 10, 20}};
  EXPECT_TRUE(has_problem_starting_with(validate_machine_spec(spec), "distance: row 1 "));
}

TEST(ValidateMachineSpec, DistanceDiagonalMustBeTen) {
  MachineSpec spec = small_spec();
  spec.distance = {{10, 20}, {20, 11}};
  const auto problems = validate_machine_spec(spec);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(problems[0].starts_with("distance: entry [1][1] is 11"));
}

TEST(ValidateMachineSpec, RemoteDistanceOfTenIsRejected) {
  MachineSpec spec = small_spec();
  spec.distance = {{10, 10}, {10, 10}};
  EXPECT_TRUE(has_problem_starting_with(validate_machine_spec(spec), "distance: entry [0][1]"));
}

TEST(ValidateMachineSpec, RemoteDistanceAbove255IsRejected) {
  MachineSpec spec = small_spec();
  spec.distance = {{10, 256}, {256, 10}};
  EXPECT_TRUE(has_problem_starting_with(validate_machine_spec(spec), "distance: entry [0][1]"));
}

TEST(ValidateMachineSpec, RemoteDistanceOf255IsAccepted) {
  MachineSpec spec = small_spec();
  spec.distance = {{10, 255}, {255, 10}};
  EXPECT_TRUE(validate_machine_spec(spec).empty());
}

TEST(ValidateMachineSpec, DistanceMustBeSymmetric) {
  MachineSpec spec = small_spec();
  spec.distance = {{10, 21}, {31, 10}};
  const auto problems = validate_machine_spec(spec);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("symmetric"), std::string::npos);
}

TEST(ValidateMachineSpec, EveryProblemIsReportedNotOnlyTheFirst) {
  MachineSpec spec = small_spec();
  spec.sockets = 0;
  spec.mem_per_node = 1;
  spec.llc_per_socket = 0;
  EXPECT_EQ(validate_machine_spec(spec).size(), 3u);
}

// Presets.

TEST(Preset, TwoSocketSixteenCoreHasSixteenCpusOnTwoNodes) {
  const Topology t(*preset("2s-16c"));
  EXPECT_EQ(t.nr_cpus(), 16u);
  EXPECT_EQ(t.nr_nodes(), 2u);
  EXPECT_EQ(t.node(NodeId(1)).mem_bytes, 16 * kGiB);
  EXPECT_EQ(t.llc_bytes(0), 20u * 1000 * 1000);
  EXPECT_EQ(t.distance(NodeId(0), NodeId(1)), 21);
}

TEST(Preset, EightSocketXeonHas288CpusOnEightNodes) {
  const Topology t(*preset("xeon-8s-144c"));
  EXPECT_EQ(t.nr_cpus(), 288u);
  EXPECT_EQ(t.nr_nodes(), 8u);
  EXPECT_EQ(t.node(NodeId(7)).mem_bytes, 64 * kGiB);
  EXPECT_EQ(t.llc_bytes(7), 45u * 1000 * 1000);
  EXPECT_EQ(t.distance(NodeId(0), NodeId(7)), 21);
  // cpu 144 is the sibling thread of cpu 0.
  EXPECT_EQ(t.cpu(CpuId(144)).core, 0);
  EXPECT_EQ(t.cpu(CpuId(144)).thread, 1);
}

TEST(Preset, EightSocketXeonHasThreeSocketsOneHopAwayAndFourTwoHops) {
  const Topology t(*preset("xeon-8s-144c"));
  for (uint16_t a = 0; a < 8; ++a) {
    int one = 0, two = 0;
    for (uint16_t b = 0; b < 8; ++b) {
      if (a == b) continue;
      const int d = t.distance(NodeId(a), NodeId(b));
      EXPECT_EQ(d, t.distance(NodeId(b), NodeId(a)));
      one += d == 21;
      two += d == 31;
    }
    EXPECT_EQ(one, 3) << "node " << a;
    EXPECT_EQ(two, 4) << "node " << a;
  }
}

TEST(Preset, EveryNamedPresetExceptHostIsValid) {
  for (const std::string& name : preset_names()) {
    if (name == "host") continue;
    const auto spec = preset(name);
    ASSERT_TRUE(spec.has_value()) << name;
    EXPECT_TRUE(validate_machine_spec(*spec).empty()) << name;
    EXPECT_EQ(spec->name, name);
  }
}

TEST(Preset, NamesIncludeHost) {
  const auto names = preset_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "host"), names.end());
}

TEST(Preset, UnknownNameGivesNothing) { EXPECT_FALSE(preset("nosuch").has_value()); }

// Reading sysfs.

TEST(LoadHost, ReadsNodeCpusAndMemoryFromSysfs) {
  FakeSysfs sys;
  two_socket_host(sys);
  std::string error;
  const auto t = load_host(sys.root(), &error);
  ASSERT_TRUE(t.has_value()) << error;
  EXPECT_EQ(t->name(), "host");
  EXPECT_EQ(t->nr_nodes(), 2u);
  EXPECT_EQ(t->node(NodeId(1)).cpus, cpu_ids({2, 3, 6, 7}));
  EXPECT_EQ(t->node(NodeId(0)).mem_bytes, 2 * kGiB);
  EXPECT_EQ(t->node(NodeId(1)).socket, 1);
}

TEST(LoadHost, ReadsTheDistanceOfEveryNode) {
  FakeSysfs sys;
  two_socket_host(sys);
  std::string error;
  const auto t = load_host(sys.root(), &error);
  ASSERT_TRUE(t.has_value()) << error;
  EXPECT_EQ(t->distance(NodeId(1), NodeId(0)), 21);
  EXPECT_EQ(t->distance(NodeId(1), NodeId(1)), 10);
}

TEST(LoadHost, ThreadIsTheRankOfTheCpuAmongThoseSharingItsCore) {
  FakeSysfs sys;
  two_socket_host(sys);
  std::string error;
  const auto t = load_host(sys.root(), &error);
  ASSERT_TRUE(t.has_value()) << error;
  EXPECT_EQ(t->cpu(CpuId(3)).thread, 0);
  EXPECT_EQ(t->cpu(CpuId(7)).thread, 1);
  EXPECT_EQ(t->cpu(CpuId(7)).core, 1);
  EXPECT_EQ(t->cpu(CpuId(7)).socket, 1);
}

TEST(LoadHost, CoreIdsWithGapsAreNumberedDenselyWithinTheSocket) {
  FakeSysfs sys;
  sys.node(0, "0-1", "10", 1024).cpu(0, 0, 0).cpu(1, 0, 8);
  std::string error;
  const auto t = load_host(sys.root(), &error);
  ASSERT_TRUE(t.has_value()) << error;
  EXPECT_EQ(t->cpu(CpuId(1)).core, 1);
}

TEST(LoadHost, LlcIsTheHighestLevelCacheOfTheSocket) {
  FakeSysfs sys;
  two_socket_host(sys);
  sys.cache(0, 0, 1, "32K").cache(0, 1, 1, "32K").cache(0, 2, 2, "256K").cache(0, 3, 3, "45M");
  sys.cache(2, 0, 1, "32K").cache(2, 3, 3, "32768K");
  std::string error;
  const auto t = load_host(sys.root(), &error);
  ASSERT_TRUE(t.has_value()) << error;
  EXPECT_EQ(t->llc_bytes(0), 45 * kMiB);
  EXPECT_EQ(t->llc_bytes(1), 32 * kMiB);
}

TEST(LoadHost, MissingCacheDirectoryGivesAZeroLlc) {
  FakeSysfs sys;
  two_socket_host(sys);
  std::string error;
  const auto t = load_host(sys.root(), &error);
  ASSERT_TRUE(t.has_value()) << error;
  EXPECT_EQ(t->llc_bytes(0), 0u);
}

TEST(LoadHost, SparseNodeIdsAreRenumberedDensely) {
  FakeSysfs sys;
  sys.node(0, "0", "10 20", 1024).node(2, "1", "20 10", 2048);
  sys.cpu(0, 0, 0).cpu(1, 1, 0);
  std::string error;
  const auto t = load_host(sys.root(), &error);
  ASSERT_TRUE(t.has_value()) << error;
  ASSERT_EQ(t->nr_nodes(), 2u);
  EXPECT_EQ(t->node(NodeId(1)).mem_bytes, 2048u * 1024);
  EXPECT_EQ(t->cpu_to_node(CpuId(1)), NodeId(1));
}

TEST(LoadHost, NodeWithoutCpusIsKept) {
  FakeSysfs sys;
  sys.node(0, "0", "10 20", 1024).node(1, "", "20 10", 4096).cpu(0, 0, 0);
  std::string error;
  const auto t = load_host(sys.root(), &error);
  ASSERT_TRUE(t.has_value()) << error;
  EXPECT_TRUE(t->node(NodeId(1)).cpus.empty());
  EXPECT_EQ(t->node(NodeId(1)).mem_bytes, 4096u * 1024);
}

TEST(LoadHost, WithoutNodeDirectoryBuildsOneNodeOfAllOnlineCpus) {
  FakeSysfs sys;
  sys.file("devices/system/cpu/online", "0-1\n").cpu(0, 0, 0).cpu(1, 0, 1);
  std::string error;
  const auto t = load_host(sys.root(), &error);
  ASSERT_TRUE(t.has_value()) << error;
  ASSERT_EQ(t->nr_nodes(), 1u);
  EXPECT_EQ(t->node(NodeId(0)).cpus, cpu_ids({0, 1}));
  EXPECT_EQ(t->distance(NodeId(0), NodeId(0)), 10);
}

TEST(LoadHost, WithoutNodeDirectoryMemoryComesFromMeminfoUnderTheRoot) {
  FakeSysfs sys;
  sys.file("devices/system/cpu/online", "0\n").cpu(0, 0, 0);
  sys.file("meminfo", "MemTotal:        4096 kB\nMemFree:         1024 kB\n");
  std::string error;
  const auto t = load_host(sys.root(), &error);
  ASSERT_TRUE(t.has_value()) << error;
  EXPECT_EQ(t->node(NodeId(0)).mem_bytes, 4096u * 1024);
}

TEST(LoadHost, MissingRootReportsAnError) {
  std::string error;
  EXPECT_FALSE(load_host("/nonexistent/mmsim/sys", &error).has_value());
  EXPECT_NE(error.find("/nonexistent/mmsim/sys"), std::string::npos);
}

TEST(LoadHost, MissingCpuTopologyReportsAnError) {
  FakeSysfs sys;
  sys.node(0, "0-1", "10", 1024).cpu(0, 0, 0);
  std::string error;
  EXPECT_FALSE(load_host(sys.root(), &error).has_value());
  EXPECT_NE(error.find("cpu1"), std::string::npos);
}

TEST(LoadHost, DistanceRowOfTheWrongLengthReportsAnError) {
  FakeSysfs sys;
  two_socket_host(sys);
  sys.node(1, "2-3,6-7", "21", 1024);
  std::string error;
  EXPECT_FALSE(load_host(sys.root(), &error).has_value());
  EXPECT_NE(error.find("node1/distance"), std::string::npos);
}

TEST(LoadHost, ThisMachineSysfsLoads) {
  if (!fs::is_directory("/sys/devices/system/cpu")) GTEST_SKIP() << "no sysfs";
  std::string error;
  const auto t = load_host("/sys", &error);
  ASSERT_TRUE(t.has_value()) << error;
  EXPECT_GE(t->nr_nodes(), 1u);
  EXPECT_GE(t->nr_cpus(), 1u);
  EXPECT_GT(t->total_mem_bytes(), 0u);
}

// The numactl report.

TEST(FormatNumactlHardware, PrintsNodesSizesAndDistancesLikeNumactl) {
  MachineSpec spec = small_spec();
  spec.distance = {{10, 21}, {21, 10}};
  EXPECT_EQ(format_numactl_hardware(Topology(spec)),
            "available: 2 nodes (0-1)\n"
            "node 0 cpus: 0 1 4 5\n"
            "node 0 size: 1024 MB\n"
            "node 0 free: 1024 MB\n"
            "node 1 cpus: 2 3 6 7\n"
            "node 1 size: 1024 MB\n"
            "node 1 free: 1024 MB\n"
            "node distances:\n"
            "node   0   1\n"
            "  0:  10  21\n"
            "  1:  21  10\n");
}

TEST(FormatNumactlHardware, OneNodeMachineIsAvailableAsNodeZeroAlone) {
  MachineSpec spec = small_spec();
  spec.sockets = 1;
  EXPECT_TRUE(format_numactl_hardware(Topology(spec)).starts_with("available: 1 nodes (0)\n"));
}

TEST(FormatNumactlHardware, NodeWithoutCpusHasAnEmptyCpuList) {
  std::vector<Node> nodes(2);
  nodes[1].id = NodeId(1);
  std::vector<Cpu> cpus(1);
  const Topology t("t", nodes, cpus, {{10, 20}, {20, 10}}, {0});
  EXPECT_NE(format_numactl_hardware(t).find("node 1 cpus:\n"), std::string::npos);
}

}  // namespace
}  // namespace mmsim::topo
