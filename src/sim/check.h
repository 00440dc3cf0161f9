// Invariant checks: a failed check is a simulator bug. It aborts with the
// message and the caller's source location (cf. the kernel's VM_BUG_ON).
#pragma once

#include <source_location>
#include <string_view>

namespace mmsim {

[[noreturn]] void check_failed(std::string_view msg, const std::source_location& loc);

inline void check(bool cond, std::string_view msg,
                  const std::source_location loc = std::source_location::current()) {
  if (!cond) [[unlikely]]
    check_failed(msg, loc);
}

}  // namespace mmsim
