// mmsim-mmap-fault-drop: map a file shared and mlock it (so its pages stay in
// the page cache), map it a second time, then K times: read one byte of every
// page of the second mapping and drop the mapping's pages with MADV_DONTNEED.
// Every touch is a minor fault on a cached page; the real-host counterpart of
// scenarios/seed-b-memcg-fault-drop.toml.
//
//   mmsim-mmap-fault-drop [--file PATH] [--size BYTES] [--loops K]
//
// --size takes bytes or a size in the project's grammar (util/units.h): 4K,
// 8M, 1G, 256MiB are powers of 1024, 256MB is a power of 1000.
// Without --file a temp file under /var/tmp is used. A file that does not
// exist is created with the size (filled with data, not sparse) and deleted at
// the end. Prints one JSON line: {"loops": K, "pages": n, "touches": n*K}.
// Exit status 0 ok, 1 a system call failed, 2 bad arguments.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "util/units.h"

namespace {

volatile unsigned char g_sink;

std::string g_created;  // a file this program created, removed on exit

[[noreturn]] void finish(int code) {
  if (!g_created.empty()) ::unlink(g_created.c_str());
  std::exit(code);
}

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr,
               "mmsim-mmap-fault-drop: %s\nusage: mmsim-mmap-fault-drop [--file PATH] [--size "
               "BYTES] [--loops K]\n",
               msg.c_str());
  finish(2);
}

[[noreturn]] void sys_error(const std::string& what) {
  std::fprintf(stderr, "mmsim-mmap-fault-drop: %s: %s\n", what.c_str(), std::strerror(errno));
  finish(1);
}

// Writes `size` bytes of nonzero data so that the file has real blocks.
void fill_file(int fd, const std::string& path, uint64_t size) {
  std::vector<unsigned char> chunk(1 << 20);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<unsigned char>(i * 31 + 7);
  uint64_t done = 0;
  while (done < size) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), size - done));
    const ssize_t w = ::write(fd, chunk.data(), n);
    if (w < 0) {
      if (errno == EINTR) continue;
      sys_error("write " + path);
    }
    done += static_cast<uint64_t>(w);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  uint64_t size = 256ull << 20;
  long loops = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if ((a == "--file" || a == "--size" || a == "--loops") && i + 1 >= argc) {
      usage_error(std::string(a) + ": missing value");
    }
    if (a == "--file") {
      path = argv[++i];
      if (path.empty()) usage_error("--file: empty path");
    } else if (a == "--size") {
      std::string why;
      const auto parsed = mmsim::util::parse_size(argv[++i], &why);
      if (!parsed) usage_error("--size: " + why);
      if (*parsed == 0)
        usage_error("--size: expected a size above 0, got \"" + std::string(argv[i]) + "\"");
      size = *parsed;
    } else if (a == "--loops") {
      char* end = nullptr;
      errno = 0;
      loops = std::strtol(argv[++i], &end, 10);
      if (errno || end == argv[i] || *end || loops < 1) {
        usage_error(std::string("--loops: expected a whole number >= 1, got \"") + argv[i] + "\"");
      }
    } else {
      usage_error("unknown argument \"" + std::string(a) + "\"");
    }
  }

  int fd = -1;
  if (path.empty()) {
    std::string tmpl = "/var/tmp/mmsim-mmap-fault-drop-XXXXXX";
    fd = ::mkstemp(tmpl.data());
    if (fd < 0) sys_error("mkstemp " + tmpl);
    path = tmpl;
    g_created = path;
    fill_file(fd, path, size);
  } else {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      g_created = path;
      fill_file(fd, path, size);
    } else if (errno == EEXIST) {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) sys_error("open " + path);
      struct stat st {};
      if (::fstat(fd, &st) < 0) sys_error("stat " + path);
      if (static_cast<uint64_t>(st.st_size) < size) {
        std::fprintf(stderr, "mmsim-mmap-fault-drop: %s has %lld bytes, fewer than --size %llu\n",
                     path.c_str(), static_cast<long long>(st.st_size),
                     static_cast<unsigned long long>(size));
        finish(2);
      }
    } else {
      sys_error("create " + path);
    }
  }

  const long page = ::sysconf(_SC_PAGESIZE);
  const uint64_t pages = (size + static_cast<uint64_t>(page) - 1) / static_cast<uint64_t>(page);

  void* locked = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (locked == MAP_FAILED) sys_error("mmap " + path);
  if (::mlock(locked, size) < 0) {
    const int saved = errno;
    rlimit rl{};
    ::getrlimit(RLIMIT_MEMLOCK, &rl);
    errno = saved;
    std::fprintf(stderr,
                 "mmsim-mmap-fault-drop: mlock of %llu bytes: %s (RLIMIT_MEMLOCK is %s bytes; run "
                 "as root or "
                 "raise it with ulimit -l)\n",
                 static_cast<unsigned long long>(size), std::strerror(saved),
                 rl.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(rl.rlim_cur).c_str());
    finish(1);
  }
  void* view = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (view == MAP_FAILED) sys_error("second mmap " + path);
  ::close(fd);

  const auto* bytes = static_cast<const volatile unsigned char*>(view);
  for (long k = 0; k < loops; ++k) {
    unsigned char acc = 0;
    for (uint64_t p = 0; p < pages; ++p) acc ^= bytes[p * static_cast<uint64_t>(page)];
    g_sink = acc;
    if (::madvise(view, size, MADV_DONTNEED) < 0) sys_error("madvise(MADV_DONTNEED)");
  }

  ::munmap(view, size);
  ::munlock(locked, size);
  ::munmap(locked, size);
  std::printf("{\"loops\": %ld, \"pages\": %llu, \"touches\": %llu}\n", loops,
              static_cast<unsigned long long>(pages),
              static_cast<unsigned long long>(pages * static_cast<uint64_t>(loops)));
  std::fflush(stdout);
  finish(0);
}
