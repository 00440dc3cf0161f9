#include "validate/initramfs.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "native/host.h"
#include "validate/command.h"

namespace mmsim::validate {

void Initramfs::add_parents(const std::string& path) {
  for (size_t slash = path.find('/'); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    if (!has(dir)) entries_.push_back({dir, S_IFDIR | 0755, ""});
  }
}

void Initramfs::add_dir(const std::string& path) {
  add_parents(path);
  if (!has(path)) entries_.push_back({path, S_IFDIR | 0755, ""});
}

void Initramfs::add_file(const std::string& path, std::string data, uint32_t mode) {
  add_parents(path);
  entries_.push_back({path, S_IFREG | (mode & 07777), std::move(data)});
}

void Initramfs::add_symlink(const std::string& path, const std::string& target) {
  add_parents(path);
  entries_.push_back({path, S_IFLNK | 0777, target});
}

bool Initramfs::add_host_file(const std::string& path, const std::string& host_path, uint32_t mode,
                              std::string* why) {
  std::ifstream in(host_path, std::ios::binary);
  std::ostringstream data;
  if (!in || !(data << in.rdbuf())) {
    *why = fmt::format("cannot read {}", host_path);
    return false;
  }
  add_file(path, data.str(), mode);
  return true;
}

bool Initramfs::has(const std::string& path) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.path == path; });
}

std::string Initramfs::archive() const {
  std::string out;
  auto pad4 = [&] { out.append((4 - out.size() % 4) % 4, '\0'); };
  auto header = [&](uint32_t ino, uint32_t mode, size_t size, const std::string& name) {
    // c_magic, then 13 eight-digit hex fields: ino mode uid gid nlink mtime
    // filesize devmajor devminor rdevmajor rdevminor namesize check.
    out += fmt::format(
        "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}"
        "{:08x}{:08x}",
        ino, mode, 0, 0, (mode & S_IFMT) == S_IFDIR ? 2 : 1, 0, size, 0, 0, 0, 0, name.size() + 1,
        0);
    out += name;
    out += '\0';
    pad4();
  };
  uint32_t ino = 1;
  for (const auto& e : entries_) {
    header(ino++, e.mode, e.data.size(), e.path);
    out += e.data;
    pad4();
  }
  header(0, 0, 0, "TRAILER!!!");
  return out;
}

bool shared_libraries(const std::string& program, native::SignalScope& signals,
                      std::vector<std::string>* libs, std::string* why) {
  const CommandResult r = run_command({.argv = {"ldd", program}, .timeout_s = 60}, signals);
  libs->clear();
  if (r.exit_status != 0) {
    // ldd says "not a dynamic executable" (status 1) for a static program.
    if (r.spawn_errno == 0 && r.exit_status == 1 &&
        (r.out + r.err).find("not a dynamic executable") != std::string::npos) {
      return true;
    }
    *why = fmt::format("ldd {} {}: {}", program, r.what(), native::trim(r.err));
    return false;
  }
  // "\tlibfmt.so.9 => /lib/x86_64-linux-gnu/libfmt.so.9 (0x...)" and
  // "\t/lib64/ld-linux-x86-64.so.2 (0x...)"; the vDSO has no file.
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string w;
    std::string path;
    while (words >> w) {
      if (!w.empty() && w[0] == '/') {
        path = w;
        break;
      }
    }
    if (path.empty()) {
      if (line.find("not found") != std::string::npos) {
        *why = fmt::format("ldd {}: {}", program, native::trim(line));
        return false;
      }
      continue;
    }
    libs->push_back(path);
  }
  return true;
}

}  // namespace mmsim::validate
