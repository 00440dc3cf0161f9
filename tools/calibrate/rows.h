// What a calibrator measured, row by row, as calibrate_paths and
// calibrate_hw print it while they run and write it at the end: each row a
// measurement's name, its runs' summary and how it was measured (or why it
// was skipped), plus free-form notes. Header-only: each calibrator is one
// translation unit.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "util/stats.h"

namespace mmsim::calibrate {

struct Row {
  std::string key;
  util::Summary s;
  std::string method;  // or the reason when skipped
  bool skipped = false;
};

class Rows {
 public:
  // `width`: the name column of the progress lines on stderr.
  explicit Rows(int width) : width_(width) {}

  void put(const std::string& key, const std::vector<double>& samples, const std::string& method) {
    const util::Summary s = util::summarize(samples);
    rows_.push_back({key, s, method, false});
    std::fprintf(stderr, "  %-*s %12.3f  [%.3f .. %.3f]\n", width_, key.c_str(), s.median, s.min,
                 s.max);
  }
  void skip(const std::string& key, const std::string& why) {
    rows_.push_back({key, {}, why, true});
    std::fprintf(stderr, "  %-*s skipped: %s\n", width_, key.c_str(), why.c_str());
  }
  void note(const std::string& text) {
    notes_.push_back(text);
    std::fprintf(stderr, "  note: %s\n", text.c_str());
  }
  // The median of a measured row, or -1.
  double median(const std::string& key) const {
    for (const auto& r : rows_) {
      if (r.key == key && !r.skipped) return r.s.median;
    }
    return -1;
  }
  const std::vector<Row>& rows() const { return rows_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  int width_;
  std::vector<Row> rows_;
  std::vector<std::string> notes_;
};

// The command line both calibrators take: [--runs N] [--out FILE]. `runs`
// comes in with its default; `cmd` is the line as run, for the output's
// header. Prints the usage and returns false on anything else.
inline bool parse_args(int argc, char** argv, int& runs, std::string& out, std::string& cmd) {
  cmd = argv[0];
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(3, std::atoi(argv[++i]));
      cmd += " --runs " + std::to_string(runs);
    } else if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
      cmd += " --out " + out;
    } else {
      std::fprintf(stderr, "usage: %s [--runs N] [--out FILE]\n", argv[0]);
      return false;
    }
  }
  return true;
}

}  // namespace mmsim::calibrate
