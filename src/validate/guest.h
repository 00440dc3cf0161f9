// A guest machine in QEMU shaped as a scenario's machine: its NUMA nodes
// with their CPUs and memory, and the SLIT distances; booted with a kernel
// and an initramfs, its console on stdout and a second serial port (ttyS1)
// written to a file, the guest's channel for results.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "native/host.h"
#include "topo/topology.h"
#include "validate/command.h"

namespace mmsim::validate {

struct GuestMachine {
  std::vector<uint64_t> node_mem;                // bytes per node
  std::vector<std::vector<uint32_t>> node_cpus;  // the CPUs of each node (the model's numbers)
  std::vector<std::vector<int>> distance;        // SLIT
  // The HMAT, when a CPU-less node has latency and bandwidth figures: each
  // node's from its home node (its attached initiator), and that home.
  std::vector<uint32_t> latency_ns;
  std::vector<uint64_t> bandwidth_mbps;
  std::vector<uint32_t> home;
  bool hmat = false;
  // The CPU topology (-smp sockets, cores, threads), so that the guest's
  // last-level caches, and with them its sched domains' imb_numa_nr, are
  // the model's; 0 when the model's CPU numbering is not QEMU's
  // socket-major order (then plain -smp N).
  uint32_t sockets = 0, cores = 0, threads = 0;
  size_t nr_cpus() const;
  uint64_t total_mem() const;
};
GuestMachine guest_machine(const topo::Topology& t);

// What this host can boot, and why not: CPUs (TCG runs every vCPU on the
// host's cores), memory (at most half the host's), each node at least
// 256 MiB (the kernel and the initramfs live in the first). Empty if it fits.
std::string guest_misfit(const GuestMachine& g, uint64_t host_mem_bytes);

struct BootSpec {
  std::string vmlinuz;
  std::string initrd;
  std::string cmdline;     // the kernel's command line (console=ttyS0 ... added)
  std::string data_path;   // ttyS1's output goes here
  std::string disk_image;  // a raw image for a virtio disk (/dev/vda), if any
  std::string accel;       // "kvm", "tcg" or "auto" (KVM if it boots, else TCG)
  double timeout_s = 1800;
  double kvm_probe_s = 30;  // auto: KVM must print the up line within this
  std::string up_line = "MMSIM-GUEST-UP";
};

struct BootResult {
  CommandResult qemu;      // the last QEMU run: its console on qemu.out
  std::string accel;       // the one that ran
  std::string accel_note;  // why not KVM, under auto
  std::vector<std::string> argv;
  bool came_up = false;
  double up_s = 0;  // from QEMU's start to the up line
};

std::vector<std::string> qemu_argv(const GuestMachine& g, const BootSpec& b,
                                   const std::string& accel);
BootResult boot_guest(const GuestMachine& g, const BootSpec& b, native::SignalScope& signals,
                      std::ostream& log);

// "qemu-system-x86_64 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18)"-like, or "".
std::string qemu_version(native::SignalScope& signals);

}  // namespace mmsim::validate
