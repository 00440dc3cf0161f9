// The inner loops of mmsim-exec's sweep op: one volatile access per element,
// so that the compiler can neither drop nor widen the accesses the plan asks
// for. Kept in their own translation unit, out of line, so that the tests run
// exactly the code the executor runs.
#pragma once

#include <cstdint>

namespace mmsim::exec {

struct SweepCount {
  uint64_t elements = 0;  // accesses made
  uint64_t sum = 0;       // reads: the sum of the values read (mod 2^64); writes: 0
};

// Reads every elem_size-byte element of [p, p + bytes), one load each, in
// address order: the element itself (1, 2, 4 or 8 bytes), or the first 8
// bytes of a wider one (16 to 4096 bytes, a power of two). REQUIRES: p is
// aligned to the element; bytes is a multiple of it.
SweepCount sweep_read(const unsigned char* p, uint64_t bytes, uint32_t elem_size);

// Writes every element of [p, p + bytes) once, in address order: element i
// gets i + 1 (cut to the element's width). Same REQUIRES as sweep_read.
SweepCount sweep_write(unsigned char* p, uint64_t bytes, uint32_t elem_size);

// The same two loops built at -O0 (sweep_O0.cc): the loop a plain `gcc`
// makes, its counter and sum kept in memory.
SweepCount sweep_read_O0(const unsigned char* p, uint64_t bytes, uint32_t elem_size);
SweepCount sweep_write_O0(unsigned char* p, uint64_t bytes, uint32_t elem_size);

}  // namespace mmsim::exec
