// Seed B in small, for tests: a file mapped and mlocked (every page cached
// and mapped once), then `loops` x (touch each page of a second mapping of
// it, MADV_DONTNEED), in memory cgroup /bench. `head` holds the tables that
// differ between tests ([scenario], [machine], [kernel], [memcg], [costs]).
#pragma once

#include <string>

namespace mmsim::testing {

inline std::string fault_drop_scenario(const std::string& head, const std::string& file_size,
                                       bool cached, int loops) {
  return head + R"(
[[cgroups]]
path = "/bench"
[[files]]
name = "data"
size = ")" +
         file_size + "\"\ncached = " + (cached ? "true" : "false") + R"(
[run]
program = "main"
process_image = "mapped"
cgroup = "/bench"
[[programs.main]]
op = "map"
region = "locked"
file = "data"
prot = "r"
flags = "shared"
[[programs.main]]
op = "mlock"
region = "locked"
[[programs.main]]
op = "map"
region = "reader"
file = "data"
prot = "r"
flags = "shared"
[[programs.main]]
op = "loop"
count = )" +
         std::to_string(loops) +
         R"(
body = [ { op = "touch", region = "reader" }, { op = "madvise", region = "reader", advice = "dontneed" } ]
)";
}

}  // namespace mmsim::testing
