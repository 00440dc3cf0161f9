// The seed write-up's summing loop as its author built it: this file is
// compiled with -O0 (bench/programs/CMakeLists.txt), whatever the build type.
// Written as the write-up writes it: int counter and int sum, both kept in
// memory by an unoptimised build.
#include "numa_shared_cow.h"

int sum_pass_O0() {
  int b = 0;
  int j;
  for (j = 0; j < 1000000; j++) b += g_data[j];
  return b;
}
