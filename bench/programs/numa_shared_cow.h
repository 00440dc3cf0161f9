// The summing pass of mmsim-numa-shared-cow, in two builds of the same loop:
// sum_pass_O0 (numa_shared_cow_loop_O0.cc, compiled -O0 as the seed write-up's
// author compiled the whole program, with a plain `gcc`: i and the sum live in
// memory, a store-forwarding chain per element) and sum_pass_O2
// (numa_shared_cow_loop_O2.cc, -O2 like the rest of the build).
#pragma once

#include <cstddef>

constexpr std::size_t kElements = 1'000'000;

// The initialised global array every child reads (numa_shared_cow.cc).
extern int g_data[kElements];

// One pass over g_data: the sum of its elements.
int sum_pass_O0();
int sum_pass_O2();
