#include "sim/check.h"

#include <cstdio>
#include <cstdlib>

namespace mmsim {

void check_failed(std::string_view msg, const std::source_location& loc) {
  std::fprintf(stderr, "mmsim: internal check failed at %s:%u: %.*s\n", loc.file_name(),
               static_cast<unsigned>(loc.line()), static_cast<int>(msg.size()), msg.data());
  std::abort();
}

}  // namespace mmsim
