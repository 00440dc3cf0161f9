#include "validate/guest.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <ostream>

namespace mmsim::validate {

size_t GuestMachine::nr_cpus() const {
  size_t n = 0;
  for (const auto& c : node_cpus) n += c.size();
  return n;
}

uint64_t GuestMachine::total_mem() const {
  return std::accumulate(node_mem.begin(), node_mem.end(), uint64_t{0});
}

GuestMachine guest_machine(const topo::Topology& t) {
  GuestMachine g;
  for (const auto& n : t.nodes()) {
    g.node_mem.push_back(n.mem_bytes);
    std::vector<uint32_t> cpus;
    for (const auto c : n.cpus) cpus.push_back(c.v);
    g.node_cpus.push_back(std::move(cpus));
  }
  g.distance.assign(t.nr_nodes(), std::vector<int>(t.nr_nodes(), 10));
  for (size_t a = 0; a < t.nr_nodes(); ++a) {
    for (size_t b = 0; b < t.nr_nodes(); ++b) {
      g.distance[a][b] =
          t.distance(NodeId{static_cast<uint16_t>(a)}, NodeId{static_cast<uint16_t>(b)});
    }
  }
  // An HMAT for machines with memory nodes whose performance is given (a
  // kernel from 6.10 places such boot nodes in a tier by it).
  bool cpuless = false, complete = true;
  for (const auto& n : t.nodes()) {
    g.latency_ns.push_back(n.latency_ns);
    g.bandwidth_mbps.push_back(n.bandwidth_mbps);
    g.home.push_back(t.home(n.id).v);
    cpuless |= n.cpus.empty();
    complete &= n.latency_ns != 0 && n.bandwidth_mbps != 0;
  }
  g.hmat = cpuless && complete;
  // QEMU numbers CPUs socket by socket, core by core, thread by thread.
  uint32_t threads = 1;
  for (const auto& c : t.cpus()) threads = std::max<uint32_t>(threads, c.thread + 1u);
  const auto sockets = static_cast<uint32_t>(t.nr_sockets());
  const auto per_socket = static_cast<uint32_t>(t.nr_cpus()) / std::max<uint32_t>(sockets, 1);
  bool socket_major =
      sockets > 0 && per_socket * sockets == t.nr_cpus() && per_socket % threads == 0;
  for (const auto& c : t.cpus()) {
    if (!socket_major) break;
    const uint32_t i = c.id.v;
    socket_major = c.socket == i / per_socket && c.core == (i % per_socket) / threads &&
                   c.thread == i % threads;
  }
  if (socket_major) {
    g.sockets = sockets;
    g.cores = per_socket / threads;
    g.threads = threads;
  }
  return g;
}

namespace {

constexpr size_t kMaxGuestCpus = 64;
constexpr uint64_t kMinNodeMem = 256ull << 20;

std::string mib(uint64_t bytes) { return fmt::format("{}MiB", bytes >> 20); }
// QEMU's sizes: "2048M".
std::string qemu_size(uint64_t bytes) { return fmt::format("{}M", bytes >> 20); }

// "0-3,8-11" style ranges of a sorted CPU list, one QEMU cpus= each.
std::vector<std::string> ranges(const std::vector<uint32_t>& cpus) {
  std::vector<std::string> out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out.push_back(i == j ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string guest_misfit(const GuestMachine& g, uint64_t host_mem_bytes) {
  std::vector<std::string> why;
  const size_t nodes = g.node_mem.size();
  if (g.nr_cpus() > kMaxGuestCpus) {
    why.push_back(fmt::format(
        "{} CPUs is more than the {} a QEMU guest gets here (TCG runs them all on this host's "
        "cores); give a smaller machine, e.g. --set machine.cores_per_socket={} "
        "--set machine.threads_per_core=1",
        g.nr_cpus(), kMaxGuestCpus,
        std::max<size_t>(1, kMaxGuestCpus / std::max<size_t>(nodes, 1))));
  }
  const uint64_t cap = host_mem_bytes / 2;
  if (g.total_mem() > cap) {
    why.push_back(
        fmt::format("{} of memory ({} nodes x {}) is more than half of this host's {}; e.g. "
                    "--set machine.mem_per_node={}",
                    mib(g.total_mem()), nodes, mib(nodes ? g.node_mem[0] : 0), mib(host_mem_bytes),
                    mib(std::max(kMinNodeMem, (cap / std::max<size_t>(nodes, 1)) >> 20 << 20))));
  }
  for (size_t n = 0; n < nodes; ++n) {
    if (g.node_mem[n] < kMinNodeMem) {
      why.push_back(
          fmt::format("node {} has {}: a guest node needs at least {} (the kernel and "
                      "the initramfs live there); --set machine.mem_per_node={}",
                      n, mib(g.node_mem[n]), mib(kMinNodeMem), mib(kMinNodeMem)));
      break;
    }
    if (g.node_mem[n] % (1ull << 20) != 0) {
      why.push_back(fmt::format("node {}: {} bytes of memory is not a whole number of MiB", n,
                                g.node_mem[n]));
      break;
    }
  }
  return fmt::format("{}", fmt::join(why, "; "));
}

std::vector<std::string> qemu_argv(const GuestMachine& g, const BootSpec& b,
                                   const std::string& accel) {
  const size_t nodes = g.node_mem.size();
  std::vector<std::string> a = {"qemu-system-x86_64",
                                "-nodefaults",
                                "-no-reboot",
                                "-display",
                                "none",
                                "-accel",
                                accel,
                                "-cpu",
                                accel == "kvm" ? "host" : "max"};
  if (g.hmat) a.insert(a.end(), {"-machine", "hmat=on"});
  a.insert(a.end(), {"-m", qemu_size(g.total_mem()), "-smp",
                     g.sockets ? fmt::format("{},sockets={},cores={},threads={}", g.nr_cpus(),
                                             g.sockets, g.cores, g.threads)
                               : fmt::format("{}", g.nr_cpus())});
  for (size_t n = 0; n < nodes; ++n) {
    a.insert(a.end(), {"-object", fmt::format("memory-backend-ram,id=mem{},size={}", n,
                                              qemu_size(g.node_mem[n]))});
    std::string node = fmt::format("node,nodeid={},memdev=mem{}", n, n);
    for (const auto& r : ranges(g.node_cpus[n])) node += ",cpus=" + r;
    // A CPU-less node's attached initiator: its home node.
    if (g.hmat && g.node_cpus[n].empty()) node += fmt::format(",initiator={}", g.home[n]);
    a.insert(a.end(), {"-numa", node});
  }
  if (g.hmat) {
    // Every CPU node's access latency and bandwidth to every node: the
    // target's own figures from its home, scaled by the SLIT distance (the
    // latency up, the bandwidth down) from other initiators.
    for (size_t i = 0; i < nodes; ++i) {
      if (g.node_cpus[i].empty()) continue;
      for (size_t t = 0; t < nodes; ++t) {
        const double scale =
            static_cast<double>(g.distance[i][t]) / static_cast<double>(g.distance[g.home[t]][t]);
        const auto lat = static_cast<uint64_t>(std::lround(g.latency_ns[t] * scale));
        const auto bw = static_cast<uint64_t>(
            std::max(1.0, std::round(static_cast<double>(g.bandwidth_mbps[t]) / scale)));
        a.insert(a.end(), {"-numa", fmt::format("hmat-lb,initiator={},target={},hierarchy=memory,"
                                                "data-type=access-latency,latency={}",
                                                i, t, lat)});
        a.insert(a.end(), {"-numa", fmt::format("hmat-lb,initiator={},target={},hierarchy=memory,"
                                                "data-type=access-bandwidth,bandwidth={}M",
                                                i, t, bw)});
      }
    }
  }
  for (size_t i = 0; i < nodes; ++i) {
    for (size_t j = 0; j < nodes; ++j) {
      if (i == j) continue;
      a.insert(a.end(),
               {"-numa", fmt::format("dist,src={},dst={},val={}", i, j, g.distance[i][j])});
    }
  }
  // Under TCG every vCPU's TSC is the host's (QEMU reads the host's counter),
  // so the TSCs agree; but the kernel's boot-time check of their sync fails
  // on vCPUs that do not run in lockstep, marks the TSC unstable and falls
  // back to the HPET, an emulated device: then every clock read, the
  // kernel's timekeeping and every user clock_gettime(2), takes 1-1.5 us
  // under QEMU's big lock, and 8 busy vCPUs queue on it (they lost half
  // their time to it). A server's clock is its TSC, read in tens of ns
  // (0.07 us in the guest with it).
  const std::string clock = accel == "kvm" ? "" : "clocksource=tsc tsc=reliable ";
  a.insert(a.end(), {"-kernel", b.vmlinuz, "-initrd", b.initrd, "-append",
                     "console=ttyS0 panic=-1 " + clock + b.cmdline, "-serial", "stdio", "-serial",
                     "file:" + b.data_path, "-monitor", "none"});
  if (!b.disk_image.empty()) {
    a.insert(a.end(),
             {"-drive", fmt::format("file={},if=virtio,format=raw,cache=unsafe", b.disk_image)});
  }
  return a;
}

BootResult boot_guest(const GuestMachine& g, const BootSpec& b, native::SignalScope& signals,
                      std::ostream& log) {
  BootResult r;
  std::vector<std::string> tries;
  if (b.accel == "auto") {
    // KVM only where /dev/kvm opens; a nested paravirtual KVM may still
    // hang or fail on an unmodified guest, hence the probe.
    const int fd = ::open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      tries = {"kvm", "tcg"};
    } else {
      tries = {"tcg"};
      r.accel_note = "no usable /dev/kvm";
    }
  } else {
    tries = {b.accel};
  }
  for (size_t i = 0; i < tries.size(); ++i) {
    const std::string accel = tries[i];
    const bool probing = accel == "kvm" && b.accel == "auto";
    r.argv = qemu_argv(g, b, accel);
    r.accel = accel;
    r.came_up = false;
    ::truncate(b.data_path.c_str(), 0);
    const auto t0 = std::chrono::steady_clock::now();
    Command c{.argv = r.argv, .timeout_s = b.timeout_s};
    c.keep_going = [&](const std::string& out) {
      if (!r.came_up && out.find(b.up_line) != std::string::npos) {
        r.came_up = true;
        r.up_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      if (!probing || r.came_up) return true;
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() <
             b.kvm_probe_s;
    };
    log << fmt::format(
        "mmsim: booting the guest under {}{}\n", accel == "kvm" ? "KVM" : "TCG",
        probing ? fmt::format(" (it must come up within {:.0f} s)", b.kvm_probe_s) : "");
    log.flush();
    r.qemu = run_command(c, signals);
    if (r.qemu.interrupted || r.came_up || i + 1 == tries.size()) break;
    r.accel_note =
        fmt::format("KVM: the guest {} before coming up{}", r.qemu.what(),
                    r.qemu.stopped ? fmt::format(" (none in {:.0f} s)", b.kvm_probe_s) : "");
    log << "mmsim: " << r.accel_note << "; falling back to TCG\n";
  }
  return r;
}

std::string qemu_version(native::SignalScope& signals) {
  const CommandResult v =
      run_command({.argv = {"qemu-system-x86_64", "--version"}, .timeout_s = 30}, signals);
  if (!v.ok()) return "";
  return native::trim(v.out.substr(0, v.out.find('\n')));
}

}  // namespace mmsim::validate
