#!/usr/bin/env bash
# Self-test of cmake/MmsimLayers.cmake: builds throwaway projects in a temp dir
# and checks that an upward #include fails configure (with the message), that
# a correct layering configures and builds, that DEPS must name earlier layers,
# and that adding a bad include later makes the next build re-run configure
# and fail.   Usage: bash tools/lint/test_layers.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
module="$root/cmake/MmsimLayers.cmake"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
fails=0

pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; fails=$((fails + 1)); }

# new_project DIR: a project with layers low (bottom), mid (DEPS low), high (DEPS mid).
new_project() {
  local d="$1"
  mkdir -p "$d/src/low" "$d/src/mid" "$d/src/high"
  cat > "$d/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(layers_selftest CXX)
include("$module")
add_subdirectory(src/low)
add_subdirectory(src/mid)
add_subdirectory(src/high)
CMAKE
  echo 'mmsim_layer(NAME low SOURCES low.cc)' > "$d/src/low/CMakeLists.txt"
  echo 'mmsim_layer(NAME mid SOURCES mid.cc DEPS low)' > "$d/src/mid/CMakeLists.txt"
  echo 'mmsim_layer(NAME high SOURCES high.cc DEPS mid)' > "$d/src/high/CMakeLists.txt"
  printf '#pragma once\nint low();\n' > "$d/src/low/low.h"
  printf '#include "low/low.h"\nint low() { return 1; }\n' > "$d/src/low/low.cc"
  printf '#pragma once\nint mid();\n' > "$d/src/mid/mid.h"
  printf '#include "mid/mid.h"\n#include "low/low.h"\nint mid() { return low() + 1; }\n' > "$d/src/mid/mid.cc"
  printf '#pragma once\nint high();\n' > "$d/src/high/high.h"
  # high includes low: allowed through the transitive closure (high -> mid -> low).
  printf '#include "high/high.h"\n#include "mid/mid.h"\n#include <vector>\n#include "low/low.h"\nint high() { return mid() + low(); }\n' \
    > "$d/src/high/high.cc"
}

configure() { cmake "${gen[@]}" -S "$1" -B "$1/build" >"$1/out.txt" 2>&1; }

# 1. A correct layering configures and builds.
p="$tmp/good"; new_project "$p"
if configure "$p" && cmake --build "$p/build" >>"$p/out.txt" 2>&1; then
  pass "a correct layering configures and builds"
else
  fail "a correct layering configures and builds"; cat "$p/out.txt"
fi

# 2. The lower layer includes an upper one: configure fails with the message.
p="$tmp/bad"; new_project "$p"
printf '#include "low/low.h"\n\n// the layering error:\n  #  include "high/high.h"\nint low() { return 1; }\n' > "$p/src/low/low.cc"
want='layer low includes high/high.h (src/low/low.cc:4), but low does not depend on high; its layers below are: (none)'
if configure "$p"; then
  fail "an upward include fails configure (configure succeeded)"
elif grep -qF "$want" "$p/out.txt"; then
  pass "an upward include fails configure with the message"
else
  fail "an upward include fails configure with the message"; cat "$p/out.txt"
fi

# 3. The closure is the one reported: mid includes high.
p="$tmp/bad2"; new_project "$p"
printf '#pragma once\n#include "high/high.h"\nint mid();\n' > "$p/src/mid/mid.h"
want='layer mid includes high/high.h (src/mid/mid.h:2), but mid does not depend on high; its layers below are: low'
if ! configure "$p" && grep -qF "$want" "$p/out.txt"; then
  pass "a header's upward include fails configure, naming the layers below"
else
  fail "a header's upward include fails configure, naming the layers below"; cat "$p/out.txt"
fi

# 4. DEPS may only name layers declared before.
p="$tmp/order"; new_project "$p"
echo 'mmsim_layer(NAME low SOURCES low.cc DEPS mid)' > "$p/src/low/CMakeLists.txt"
if ! configure "$p" && grep -qF "DEPS names mid, which is not a layer declared before low" "$p/out.txt"; then
  pass "DEPS naming a later layer fails configure"
else
  fail "DEPS naming a later layer fails configure"; cat "$p/out.txt"
fi

# 5. Adding a bad include to a configured tree: the next build re-runs configure and fails.
p="$tmp/later"; new_project "$p"
if configure "$p" && cmake --build "$p/build" >>"$p/out.txt" 2>&1; then
  sleep 1  # a newer mtime than the build files on coarse-grained file systems
  printf '#include "mid/mid.h"\nint low() { return mid(); }\n' > "$p/src/low/low.cc"
  if cmake --build "$p/build" >"$p/out2.txt" 2>&1; then
    fail "a bad include added later fails the next build (build succeeded)"
  elif grep -qF 'layer low includes mid/mid.h (src/low/low.cc:1)' "$p/out2.txt"; then
    pass "a bad include added later fails the next build at configure"
  else
    fail "a bad include added later fails the next build at configure"; cat "$p/out2.txt"
  fi
else
  fail "a bad include added later: the first configure failed"; cat "$p/out.txt"
fi

if [ "$fails" -ne 0 ]; then
  echo "test_layers: $fails check(s) failed"
  exit 1
fi
echo "test_layers: all checks passed"
