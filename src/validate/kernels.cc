#include "validate/kernels.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "util/atomic_file.h"
#include "validate/command.h"

namespace mmsim::validate {

namespace fs = std::filesystem;

std::string KernelImage::config(const std::string& option) const {
  std::ifstream in(dir + "/boot/config-" + release);
  const std::string key = "CONFIG_" + option + "=";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  }
  return "";
}

std::string kernel_cache_dir() {
  const char* xdg = ::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/mmsim/kernels";
  const char* home = ::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.cache/mmsim/kernels";
}

namespace {

constexpr const char* kInfoFile = "mmsim-kernel.txt";

// Natural order: digit runs compare as numbers ("6.1.0-9" < "6.1.0-50").
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const std::string x = a.substr(i, i2 - i), y = b.substr(j, j2 - j);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::vector<std::string> series_packages(const std::vector<std::string>& names,
                                         const std::string& series) {
  const std::string head = "linux-image-" + series + ".";
  const std::string tail = "-amd64-unsigned";
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (n.rfind(head, 0) != 0 || n.size() <= head.size() + tail.size() ||
        n.compare(n.size() - tail.size(), tail.size(), tail) != 0) {
      continue;
    }
    const std::string mid = n.substr(head.size(), n.size() - head.size() - tail.size());
    // The generic flavour: "0-50" or "107+deb12"; not "0-50-cloud", "0-50-rt".
    if (mid.empty() || !std::isdigit(static_cast<unsigned char>(mid[0])) ||
        mid.find("cloud") != std::string::npos || mid.find("-rt") != std::string::npos) {
      continue;
    }
    out.push_back(n);
  }
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return natural_less(b, a); });
  return out;
}

std::optional<KernelImage> cached_kernel(const std::string& cache, const std::string& series) {
  const std::string dir = cache + "/" + series;
  std::ifstream in(dir + "/" + kInfoFile);
  if (!in) return std::nullopt;
  KernelImage k;
  k.series = series;
  k.dir = dir;
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "package") k.package = value;
    if (key == "version") k.version = value;
    if (key == "release") k.release = value;
  }
  std::error_code ec;
  if (k.package.empty() || k.release.empty() || !fs::is_regular_file(k.vmlinuz(), ec)) {
    return std::nullopt;
  }
  return k;
}

std::optional<KernelImage> fetch_kernel(const std::string& cache, const std::string& series,
                                        native::SignalScope& signals, std::ostream& log,
                                        std::string* why) {
  const CommandResult names = run_command(
      {.argv = {"apt-cache", "pkgnames", "linux-image-" + series + "."}, .timeout_s = 120},
      signals);
  if (names.spawn_errno) {
    *why = "apt-cache " + names.what() + " (kernels come from Debian's packages)";
    return std::nullopt;
  }
  std::vector<std::string> all;
  std::istringstream ns(names.out);
  for (std::string n; ns >> n;) all.push_back(n);
  const std::vector<std::string> pkgs = series_packages(all, series);
  if (pkgs.empty()) {
    *why = fmt::format(
        "apt knows no package linux-image-{}.*-amd64-unsigned (Debian 12 has 6.1 and, in its "
        "updates, 6.12; run apt-get update?)",
        series);
    return std::nullopt;
  }
  KernelImage k;
  k.series = series;
  k.package = pkgs.front();
  const CommandResult show = run_command(
      {.argv = {"apt-cache", "show", "--no-all-versions", k.package}, .timeout_s = 120}, signals);
  std::istringstream ss(show.out);
  for (std::string line; std::getline(ss, line);) {
    if (line.rfind("Version: ", 0) == 0) k.version = line.substr(9);
  }
  // linux-image-6.1.0-50-amd64-unsigned holds 6.1.0-50-amd64.
  k.release = k.package.substr(12, k.package.size() - 12 - 9);

  std::error_code ec;
  fs::create_directories(cache, ec);
  std::string tmpl = cache + "/.fetch-XXXXXX";
  if (ec || !::mkdtemp(tmpl.data())) {
    *why = fmt::format("cannot make a directory in {}: {}", cache,
                       ec ? ec.message() : native::errno_text(errno));
    return std::nullopt;
  }
  const std::string tmp = tmpl;
  // apt-get download runs as the _apt user where it can: let it write here.
  ::chmod(tmp.c_str(), 0777);
  auto fail = [&](const std::string& w) {
    *why = w;
    fs::remove_all(tmp, ec);
    return std::nullopt;
  };
  log << fmt::format("mmsim: fetching {} {} (apt-get download) into {}\n", k.package, k.version,
                     cache);
  log.flush();
  const CommandResult dl = run_command(
      {.argv = {"apt-get", "download", "-q", k.package}, .timeout_s = 1800, .cwd = tmp}, signals);
  if (!dl.ok()) {
    return fail(
        fmt::format("apt-get download {} {}: {}", k.package, dl.what(), native::trim(dl.err)));
  }
  std::string deb;
  for (const auto& e : fs::directory_iterator(tmp, ec)) {
    if (e.path().extension() == ".deb") deb = e.path().string();
  }
  if (deb.empty()) return fail("apt-get download left no .deb in " + tmp);
  const std::string root = tmp + "/root";
  const CommandResult x =
      run_command({.argv = {"dpkg-deb", "-x", deb, root}, .timeout_s = 600}, signals);
  if (!x.ok())
    return fail(fmt::format("dpkg-deb -x {} {}: {}", deb, x.what(), native::trim(x.err)));
  fs::remove(deb, ec);
  // The unpacked tree becomes the series' directory, with what it is.
  const std::string dir = cache + "/" + series;
  fs::remove_all(dir, ec);
  fs::rename(root, dir, ec);
  if (ec) return fail(fmt::format("cannot move {} to {}: {}", root, dir, ec.message()));
  fs::remove_all(tmp, ec);
  k.dir = dir;
  const std::string info =
      fmt::format("package={}\nversion={}\nrelease={}\n", k.package, k.version, k.release);
  std::string werr;
  if (!util::write_file_atomically(dir + "/" + kInfoFile, info, &werr)) {
    *why = werr;
    return std::nullopt;
  }
  if (!fs::is_regular_file(k.vmlinuz(), ec)) {
    *why = fmt::format("{} holds no {}", k.package, k.vmlinuz());
    return std::nullopt;
  }
  return k;
}

}  // namespace mmsim::validate
