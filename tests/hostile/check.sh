#!/usr/bin/env bash
# Runs every hostile-input case (tests/hostile/cases/*.toml) against BINARY and
# compares its exit code, stderr and stdout with the case's header (README.md).
#   tests/hostile/check.sh BINARY [CASE-GLOB]      e.g. check.sh build/release/src/cli/mmsim '01*'
# Environment: HOSTILE_TIMEOUT (seconds, default 20; a case's "# timeout:" wins),
# HOSTILE_VMEM_KB (virtual memory limit, default 4000000),
# HOSTILE_VERBOSE=1 prints the output of failing cases.
# Exit status: 0 if every case passes, 1 otherwise, 2 on bad usage.
set -u
if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 BINARY [CASE-GLOB]" >&2
  exit 2
fi
bin=$(realpath -e -- "$1" 2>/dev/null) || { echo "$0: no such binary: $1" >&2; exit 2; }
[[ -x $bin ]] || { echo "$0: not executable: $bin" >&2; exit 2; }
glob=${2:-*}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
limit_s=${HOSTILE_TIMEOUT:-20}
vmem_kb=${HOSTILE_VMEM_KB:-4000000}

# One header value per line: header FILE KEY prints every "# KEY: value" of the
# leading comment block.
header() {
  awk -v key="$2" '
    !/^#/ { exit }
    { line = $0; sub(/^#[ \t]*/, "", line)
      if (index(line, key ":") == 1) { v = substr(line, length(key) + 2); sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v); print v } }
  ' "$1"
}

pass=0
fail=0
shopt -s nullglob
for case_file in "$here"/cases/$glob.toml; do
  id=$(basename "$case_file" .toml)
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/hostile.XXXXXX")
  mkdir -p "$tmp/case" "$tmp/dir" "$tmp/run"
  # The binary gets a copy, so that a case that makes it write over its input
  # (--json {file}) cannot damage the corpus.
  cp -- "$case_file" "$tmp/case/$id.toml"
  args=$(header "$case_file" args | head -n 1)
  [[ -z $args ]] && args='run {file}'
  args=${args//\{file\}/$(printf '%q' "$tmp/case/$id.toml")}
  args=${args//\{dir\}/$(printf '%q' "$tmp/dir")}
  args=${args//\{missing\}/$(printf '%q' "$tmp/missing/nothing")}
  case_limit=$(header "$case_file" timeout | head -n 1)
  [[ -z $case_limit ]] && case_limit=$limit_s
  # Sanitizer builds run several times slower (HOSTILE_TIMEOUT_SCALE).
  case_limit=$((case_limit * ${HOSTILE_TIMEOUT_SCALE:-1}))
  want_exit=$(header "$case_file" exit | head -n 1)
  [[ -z $want_exit ]] && want_exit=0
  mapfile -t want_err < <(header "$case_file" stderr)
  mapfile -t want_out < <(header "$case_file" stdout)

  argv=()
  eval "argv=($args)"
  # The subshell reports the binary's status as its own exit code (so that
  # bash prints no "Segmentation fault" here); its own stderr is discarded.
  (
    cd "$tmp/run" || exit 99
    ulimit -v "$vmem_kb"
    timeout -k 5 "$case_limit" "$bin" "${argv[@]}" >"$tmp/stdout" 2>"$tmp/stderr" </dev/null
  ) 2>/dev/null
  got=$?

  problems=()
  if [[ $got != "$want_exit" ]]; then
    how="exit $got"
    if [[ $got == 124 ]]; then
      how="exit $got (hang: killed after ${case_limit}s)"
    elif [[ $got == 137 ]]; then
      how="exit $got (SIGKILL: a hang past the grace period, or the OOM killer)"
    elif ((got > 128)); then
      how="exit $got (signal $(kill -l $((got - 128)) 2>/dev/null || echo $((got - 128))))"
    fi
    problems+=("expected exit $want_exit got $how")
  fi
  for f in "${want_err[@]}"; do
    grep -qF -- "$f" "$tmp/stderr" || problems+=("missing \"$f\" in stderr")
  done
  for f in "${want_out[@]}"; do
    grep -qF -- "$f" "$tmp/stdout" || problems+=("missing \"$f\" in stdout")
  done
  if ((${#problems[@]} == 0)); then
    echo "ok $id"
    pass=$((pass + 1))
  else
    msg=$(printf '%s; ' "${problems[@]}")
    echo "FAIL $id: ${msg%; }"
    if [[ ${HOSTILE_VERBOSE:-0} == 1 ]]; then
      { head -c 600 "$tmp/stderr"; echo; } | sed '/^$/d; s/^/    stderr| /'
      { head -c 300 "$tmp/stdout"; echo; } | sed '/^$/d; s/^/    stdout| /'
    fi
    fail=$((fail + 1))
  fi
  rm -rf -- "$tmp"
done
echo "total: $((pass + fail)) cases, $pass ok, $fail FAIL"
((fail == 0))
