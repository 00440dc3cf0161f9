#include "util/progress.h"

#include <unistd.h>

namespace mmsim::util {

void ProgressLine::update(const std::string& text, bool force) {
  if (!enabled_) return;
  const std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && !force && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  drawn_ = true;
  out_ << '\r' << text << "\x1b[K" << std::flush;
}

void ProgressLine::clear() {
  if (!enabled_) return;
  const std::lock_guard lock(mu_);
  if (!drawn_) return;
  drawn_ = false;
  out_ << "\r\x1b[K" << std::flush;
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace mmsim::util
