// Real kernels to validate against: Debian's packaged kernel images, fetched
// with apt-get download and unpacked with dpkg-deb into a cache directory
// ($XDG_CACHE_HOME/mmsim/kernels, else ~/.cache/mmsim/kernels), one
// directory per series ("6.1", "6.12") with what was fetched recorded.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "native/host.h"

namespace mmsim::validate {

struct KernelImage {
  std::string series;   // "6.1"
  std::string package;  // "linux-image-6.1.0-50-amd64-unsigned"
  std::string version;  // the package's, "6.1.176-1"
  std::string release;  // uname -r in the guest, "6.1.0-50-amd64"
  std::string dir;      // where the package is unpacked
  std::string vmlinuz() const { return dir + "/boot/vmlinuz-" + release; }
  std::string modules() const { return dir + "/lib/modules/" + release; }
  // CONFIG_<option>'s value in the image's config ("y", "m"), "" when unset.
  std::string config(const std::string& option) const;
};

// $XDG_CACHE_HOME/mmsim/kernels, else $HOME/.cache/mmsim/kernels.
std::string kernel_cache_dir();

// The unpacked image of `series` in the cache, if it is there.
std::optional<KernelImage> cached_kernel(const std::string& cache, const std::string& series);

// The newest generic amd64 image of the series this host's apt knows of:
// linux-image-<series>.*-amd64-unsigned, not -cloud nor -rt. Downloads and
// unpacks it into the cache; progress on `log`. nullopt with why.
std::optional<KernelImage> fetch_kernel(const std::string& cache, const std::string& series,
                                        native::SignalScope& signals, std::ostream& log,
                                        std::string* why);

// Among package names, the images of a series, newest (by version numbers
// in the name) first.
std::vector<std::string> series_packages(const std::vector<std::string>& names,
                                         const std::string& series);

}  // namespace mmsim::validate
