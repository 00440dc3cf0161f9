// The same summing loop as numa_shared_cow_loop_O0.cc, compiled -O2 without
// vectorising: the optimised variant (mmsim-numa-shared-cow --loop O2), one
// load and one add an element, as the simulator's sweep_elem_ns prices.
#include "numa_shared_cow.h"

int sum_pass_O2() {
  int b = 0;
  int j;
  for (j = 0; j < 1000000; j++) b += g_data[j];
  return b;
}
