// The sweep loops (sweep.h). Each access goes through a pointer to volatile:
// a volatile access is observable behaviour, so every one of them is made,
// once, with the element's own width.
#include "sweep.h"

namespace mmsim::exec {
namespace {

template <typename T>
[[gnu::noinline]] SweepCount read_elems(const unsigned char* p, uint64_t n) {
  const volatile T* e = reinterpret_cast<const volatile T*>(p);
  SweepCount c;
  for (uint64_t i = 0; i < n; ++i) c.sum += static_cast<uint64_t>(e[i]);
  c.elements = n;
  return c;
}

template <typename T>
[[gnu::noinline]] SweepCount write_elems(unsigned char* p, uint64_t n) {
  volatile T* e = reinterpret_cast<volatile T*>(p);
  for (uint64_t i = 0; i < n; ++i) e[i] = static_cast<T>(i + 1);
  SweepCount c;
  c.elements = n;
  return c;
}

// Elements wider than a word (a struct of `stride` bytes): one 8-byte load or
// store at the start of each.
[[gnu::noinline]] SweepCount read_strided(const unsigned char* p, uint64_t n, uint64_t stride) {
  SweepCount c;
  for (uint64_t i = 0; i < n; ++i) {
    c.sum += *reinterpret_cast<const volatile uint64_t*>(p + i * stride);
  }
  c.elements = n;
  return c;
}

[[gnu::noinline]] SweepCount write_strided(unsigned char* p, uint64_t n, uint64_t stride) {
  for (uint64_t i = 0; i < n; ++i) *reinterpret_cast<volatile uint64_t*>(p + i * stride) = i + 1;
  SweepCount c;
  c.elements = n;
  return c;
}

}  // namespace

SweepCount sweep_read(const unsigned char* p, uint64_t bytes, uint32_t elem_size) {
  switch (elem_size) {
    case 1:
      return read_elems<uint8_t>(p, bytes);
    case 2:
      return read_elems<uint16_t>(p, bytes / 2);
    case 4:
      return read_elems<uint32_t>(p, bytes / 4);
    case 8:
      return read_elems<uint64_t>(p, bytes / 8);
    default:
      return elem_size > 8 ? read_strided(p, bytes / elem_size, elem_size) : SweepCount{};
  }
}

SweepCount sweep_write(unsigned char* p, uint64_t bytes, uint32_t elem_size) {
  switch (elem_size) {
    case 1:
      return write_elems<uint8_t>(p, bytes);
    case 2:
      return write_elems<uint16_t>(p, bytes / 2);
    case 4:
      return write_elems<uint32_t>(p, bytes / 4);
    case 8:
      return write_elems<uint64_t>(p, bytes / 8);
    default:
      return elem_size > 8 ? write_strided(p, bytes / elem_size, elem_size) : SweepCount{};
  }
}

}  // namespace mmsim::exec
