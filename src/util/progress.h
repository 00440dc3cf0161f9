// A progress line on a terminal: redrawn in place ("\r", erase to the end of
// the line) at most five times a second, erased when done. Drawn only when
// enabled, which callers set from stderr_is_terminal(), so that logs and
// byte-identical output are unaffected. Thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <ostream>
#include <string>

namespace mmsim::util {

class ProgressLine {
 public:
  ProgressLine(std::ostream& out, bool enabled) : out_(out), enabled_(enabled) {}
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }
  // Draws `text`, unless the last drawing is under 200 ms old (`force`: draw).
  void update(const std::string& text, bool force = false);
  // Erases the line, if anything was drawn.
  void clear();

 private:
  std::ostream& out_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
  std::mutex mu_;
};

// Whether standard error is a terminal (isatty(2)).
bool stderr_is_terminal();

}  // namespace mmsim::util
