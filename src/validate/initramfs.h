// The guest's initial RAM disk: a cpio archive in the kernel's "newc"
// format (Documentation/driver-api/early-userspace/buffer-format.rst),
// uncompressed, which the kernel unpacks into its rootfs before running
// /init. Built in memory; written with write().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "native/host.h"

namespace mmsim::validate {

class Initramfs {
 public:
  // Parent directories are added on demand; paths are relative ("bin/sh").
  void add_dir(const std::string& path);
  void add_file(const std::string& path, std::string data, uint32_t mode = 0644);
  void add_symlink(const std::string& path, const std::string& target);
  // The host file's bytes; false (with why) if it cannot be read.
  bool add_host_file(const std::string& path, const std::string& host_path, uint32_t mode,
                     std::string* why);
  bool has(const std::string& path) const;
  // The archive, with its trailer.
  std::string archive() const;

 private:
  struct Entry {
    std::string path;
    uint32_t mode;  // with the file type bits
    std::string data;
  };
  void add_parents(const std::string& path);
  std::vector<Entry> entries_;
};

// The shared libraries a dynamically linked program needs, with the dynamic
// loader (from ldd); empty for a static one. False with why if ldd fails.
bool shared_libraries(const std::string& program, native::SignalScope& signals,
                      std::vector<std::string>* libs, std::string* why);

}  // namespace mmsim::validate
