// The sweep loops built without optimisation (CMake compiles this file with
// -O0 whatever the build type): a program compiled by a plain `gcc`, as the
// seed-A write-up's was, keeps its loop counter and its sum in memory, so
// each element is a chain of store-forwarded read-modify-writes. The accesses
// need no volatile: at -O0 every one of them is made.
#include "sweep.h"

namespace mmsim::exec {
namespace {

template <typename T>
SweepCount read_elems_O0(const unsigned char* p, uint64_t n) {
  const T* e = reinterpret_cast<const T*>(p);
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += static_cast<uint64_t>(e[i]);
  return SweepCount{n, sum};
}

template <typename T>
SweepCount write_elems_O0(unsigned char* p, uint64_t n) {
  T* e = reinterpret_cast<T*>(p);
  for (uint64_t i = 0; i < n; ++i) e[i] = static_cast<T>(i + 1);
  return SweepCount{n, 0};
}

SweepCount read_strided_O0(const unsigned char* p, uint64_t n, uint64_t stride) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += *reinterpret_cast<const uint64_t*>(p + i * stride);
  return SweepCount{n, sum};
}

SweepCount write_strided_O0(unsigned char* p, uint64_t n, uint64_t stride) {
  for (uint64_t i = 0; i < n; ++i) *reinterpret_cast<uint64_t*>(p + i * stride) = i + 1;
  return SweepCount{n, 0};
}

}  // namespace

SweepCount sweep_read_O0(const unsigned char* p, uint64_t bytes, uint32_t elem_size) {
  switch (elem_size) {
    case 1:
      return read_elems_O0<uint8_t>(p, bytes);
    case 2:
      return read_elems_O0<uint16_t>(p, bytes / 2);
    case 4:
      return read_elems_O0<uint32_t>(p, bytes / 4);
    case 8:
      return read_elems_O0<uint64_t>(p, bytes / 8);
    default:
      return elem_size > 8 ? read_strided_O0(p, bytes / elem_size, elem_size) : SweepCount{};
  }
}

SweepCount sweep_write_O0(unsigned char* p, uint64_t bytes, uint32_t elem_size) {
  switch (elem_size) {
    case 1:
      return write_elems_O0<uint8_t>(p, bytes);
    case 2:
      return write_elems_O0<uint16_t>(p, bytes / 2);
    case 4:
      return write_elems_O0<uint32_t>(p, bytes / 4);
    case 8:
      return write_elems_O0<uint64_t>(p, bytes / 8);
    default:
      return elem_size > 8 ? write_strided_O0(p, bytes / elem_size, elem_size) : SweepCount{};
  }
}

}  // namespace mmsim::exec
