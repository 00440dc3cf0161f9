#!/usr/bin/env bash
# CI test of the Slurm tooling, as root:
#
#   tools/slurm/test-sweep.sh [MMSIM]     (default build/release/src/cli/mmsim)
#
# Brings up a one-node Slurm cluster on this machine (single-node.sh), runs a
# small sweep as a 2-task job array through sweep.sh, and checks that the merged
# table and JSON are byte for byte those of the same sweep run unsharded by
# `mmsim compare`. The cluster is stopped whatever happens. Prints its run time.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHARDS=2
# Two settings x two seeds: four runs, so each shard has two to do.
SWEEP=(scenarios/numa-thp-migrate.toml --vary "kernel.transparent_hugepage=never,always" --repeat 2)

log() { printf 'test-sweep: %s\n' "$*" >&2; }
die() {
  log "FAILED: $*"
  exit 1
}

# Prints the absolute path of MMSIM after checking it has the sharded compare.
check_mmsim() {
  local m=$1
  [[ -x $m ]] || die "no mmsim at $m (build it first, or pass its path)"
  "$m" compare --help | grep -q -- --shard ||
    die "$m compare has no --shard/--merge: nothing to test yet"
  echo "$(cd "$(dirname "$m")" && pwd)/$(basename "$m")"
}

# Exits non-zero, showing the difference, unless files $1 and $2 are identical.
same() {
  cmp -s "$1" "$2" && return 0
  diff -u "$1" "$2" | head -n 40 >&2 || true
  die "$(basename "$2") (unsharded) and $(basename "$1") (sharded, merged) differ"
}

cleanup() {
  "$ROOT/tools/slurm/single-node.sh" stop || log "could not stop the cluster"
  rm -rf "$TMP"
}

main() {
  local t0=$SECONDS mmsim
  cd "$ROOT"
  mmsim=$(check_mmsim "${1:-build/release/src/cli/mmsim}")
  TMP=$(mktemp -d)
  trap cleanup EXIT
  tools/slurm/single-node.sh start >/dev/null
  export SLURM_CONF=${MMSIM_SLURM_DIR:-/run/mmsim-slurm}/slurm.conf
  local t1=$SECONDS
  log "cluster up in $((t1 - t0)) s"

  tools/slurm/sweep.sh -n "$SHARDS" -o "$TMP/shards" --mmsim "$mmsim" --json "$TMP/sharded.json" \
    -- "${SWEEP[@]}" >"$TMP/sharded.txt"
  local t2=$SECONDS
  log "array of $SHARDS shards and merge in $((t2 - t1)) s"
  # Each task left a log, and none reported a failure.
  local n_logs
  n_logs=$(find "$TMP/shards.logs" -name '*.out' | wc -l)
  ((n_logs == SHARDS)) || die "$n_logs task logs in $TMP/shards.logs, not $SHARDS"
  [[ -f $TMP/shards/plan.json ]] || die "the shards wrote no plan.json"

  "$mmsim" compare "${SWEEP[@]}" --json "$TMP/whole.json" >"$TMP/whole.txt"
  same "$TMP/sharded.json" "$TMP/whole.json"
  same "$TMP/sharded.txt" "$TMP/whole.txt"
  log "passed in $((SECONDS - t0)) s: the merged table and JSON are the unsharded ones"
}

main "$@"
