#!/usr/bin/env bash
# Test of a sharded sweep with GNU parallel on one machine (Debian's
# `parallel`, installed with apt-get when missing and run as root):
#
#   tools/parallel/test-sweep.sh [MMSIM]     (default build/release/src/cli/mmsim)
#
# Runs the same small sweep as tools/slurm/test-sweep.sh as 3 shards under
# parallel, merges them, and checks that the table and the JSON are byte for
# byte those of the sweep run unsharded.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHARDS=3
SWEEP=(scenarios/numa-thp-migrate.toml --vary "kernel.transparent_hugepage=never,always" --repeat 2)

log() { printf 'test-parallel: %s\n' "$*" >&2; }
die() {
  log "FAILED: $*"
  exit 1
}

# GNU parallel, from Debian, when it is missing and we may install it.
need_parallel() {
  command -v parallel >/dev/null && return 0
  [[ $(id -u) == 0 ]] || die "GNU parallel is missing (apt-get install parallel)"
  log "installing GNU parallel"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends parallel >/dev/null
}

main() {
  local t0=$SECONDS mmsim=${1:-build/release/src/cli/mmsim}
  cd "$ROOT"
  [[ -x $mmsim ]] || die "no mmsim at $mmsim (build it first, or pass its path)"
  need_parallel
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  # --will-cite: parallel's one-time citation notice would go to the log.
  parallel --will-cite --halt now,fail=1 "$mmsim" compare "${SWEEP[@]}" --jobs 1 \
    --shard {}/"$SHARDS" --out "$TMP/shards" ::: $(seq "$SHARDS") >/dev/null
  "$mmsim" compare --merge "$TMP/shards" --json "$TMP/merged.json" >"$TMP/merged.txt"
  "$mmsim" compare "${SWEEP[@]}" --json "$TMP/whole.json" >"$TMP/whole.txt"
  for f in json txt; do
    cmp -s "$TMP/merged.$f" "$TMP/whole.$f" || {
      diff -u "$TMP/whole.$f" "$TMP/merged.$f" | head -n 40 >&2 || true
      die "the merged $f differs from the unsharded one"
    }
  done
  log "passed in $((SECONDS - t0)) s: $SHARDS shards under GNU parallel merge to the unsharded table and JSON"
}

main "$@"
