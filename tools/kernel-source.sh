#!/usr/bin/env bash
# Unpacks Debian's kernel sources (packages linux-source-<series>) under DIR:
#   tools/kernel-source.sh DIR SERIES...
# DIR/linux-source-<series>/ holds the tree, DIR/linux-source-<series>.version
# the package's version. A series already unpacked at the package's current
# version is left alone. `make kernel-source` calls it.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: $0 DIR SERIES..." >&2
  exit 2
fi
dir=$1
shift
mkdir -p "$dir"
for series in "$@"; do
  pkg=linux-source-$series
  version=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
  if [[ -z $version ]]; then
    echo "$0: apt knows no package $pkg (apt-get update?)" >&2
    exit 3
  fi
  if [[ -f $dir/$pkg.version && $(cat "$dir/$pkg.version") == "$version" && -d $dir/$pkg ]]; then
    echo "$pkg $version: already in $dir/$pkg"
    continue
  fi
  tmp=$(mktemp -d "$dir/.fetch-XXXXXX")
  chmod 0777 "$tmp"  # apt-get download runs as _apt where it can
  trap 'rm -rf "$tmp"' EXIT
  echo "$pkg $version: downloading"
  (cd "$tmp" && apt-get download -q "$pkg" >/dev/null)
  dpkg-deb -x "$tmp"/*.deb "$tmp/root"
  tarball=$(ls "$tmp"/root/usr/src/"$pkg".tar.* | head -1)
  echo "$pkg $version: unpacking $(basename "$tarball")"
  rm -rf "${dir:?}/$pkg"
  tar -C "$dir" -xf "$tarball"
  echo "$version" >"$dir/$pkg.version"
  rm -rf "$tmp"
  trap - EXIT
  echo "$pkg $version: $dir/$pkg"
done
