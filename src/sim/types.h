// Strong value types shared by every layer: simulated time and the ids of
// pages, virtual pages, nodes and CPUs. A Pfn can never stand in for a Vpn.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace mmsim {

// A tagged integer: same layout as Rep, no implicit conversions.
template <class Tag, class Rep>
struct Strong {
  Rep v{};
  constexpr Strong() = default;
  constexpr explicit Strong(Rep value) : v(value) {}
  constexpr Rep value() const { return v; }
  friend constexpr auto operator<=>(const Strong&, const Strong&) = default;
};

// Simulated time in nanoseconds since the start of the run.
struct Tick {
  int64_t ns = 0;
  constexpr Tick() = default;
  constexpr explicit Tick(int64_t n) : ns(n) {}
  static constexpr Tick max() { return Tick(INT64_MAX); }
  constexpr double seconds() const { return static_cast<double>(ns) * 1e-9; }
  friend constexpr auto operator<=>(const Tick&, const Tick&) = default;
  friend constexpr Tick operator+(Tick a, Tick b) { return Tick(a.ns + b.ns); }
  friend constexpr Tick operator-(Tick a, Tick b) { return Tick(a.ns - b.ns); }
  constexpr Tick& operator+=(Tick b) {
    ns += b.ns;
    return *this;
  }
  constexpr Tick& operator-=(Tick b) {
    ns -= b.ns;
    return *this;
  }
};

constexpr Tick nanoseconds(int64_t n) { return Tick(n); }
// A cost in ns as a duration, rounded half up (costs are never negative).
// Costs are never negative, so adding a half and truncating rounds to nearest;
// std::llround is not constexpr before C++23.
// NOLINTNEXTLINE(bugprone-incorrect-roundings)
constexpr Tick to_tick(double ns) { return Tick(static_cast<int64_t>(ns + 0.5)); }
constexpr Tick microseconds(int64_t n) { return Tick(n * 1000); }
constexpr Tick milliseconds(int64_t n) { return Tick(n * 1000000); }
constexpr Tick seconds(int64_t n) { return Tick(n * 1000000000); }

struct PfnTag {};
struct VpnTag {};
struct NodeTag {};
struct CpuTag {};

// Index of a folio in the machine's folio table (a page frame of the model).
using Pfn = Strong<PfnTag, uint32_t>;
// Virtual page number: a user address divided by the 4 KiB page size.
using Vpn = Strong<VpnTag, uint64_t>;
using NodeId = Strong<NodeTag, uint16_t>;
using CpuId = Strong<CpuTag, uint16_t>;

inline constexpr uint64_t kPageSize = 4096;
inline constexpr int kPageShift = 12;
// TASK_SIZE_MAX of x86-64 with 4-level page tables: 128 TiB less a page.
inline constexpr uint64_t kTaskSizePages = ((uint64_t{1} << 47) - 4096) >> 12;

}  // namespace mmsim

template <class Tag, class Rep>
struct std::hash<mmsim::Strong<Tag, Rep>> {
  size_t operator()(const mmsim::Strong<Tag, Rep>& s) const noexcept {
    return std::hash<Rep>{}(s.v);
  }
};
