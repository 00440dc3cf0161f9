#!/usr/bin/env bash
# Runs an `mmsim compare` sweep as a Slurm job array of N shards, waits for
# it, and prints the merged comparison:
#
#   tools/slurm/sweep.sh -n N -o DIR [--mmsim PATH] [--json FILE] [-c CPUS] -- SCENARIO ARGS...
#
#   -n N          shards: array tasks 1..N, each runs about 1/N of the runs
#   -o DIR        where the shards write their runs; must be new or empty, and
#                 on a file system that every node sees
#   --mmsim PATH  the mmsim binary (default: this checkout's
#                 build/release/src/cli/mmsim, else mmsim on PATH)
#   --json FILE   passed to the merge: the sweep's JSON, as `mmsim compare --json`
#   -c CPUS       CPUs per task (default 1); mmsim runs that many simulations at once
#   SCENARIO ARGS what `mmsim compare` takes: --vary, --repeat, --seed, --set, --metric
#
# stdout is the merged table only; sbatch's messages go to stderr. The tasks'
# logs are in DIR.logs/ (not in DIR, which holds the runs alone). Partition,
# account, time limit and the like come from sbatch's own environment
# variables, e.g. SBATCH_PARTITION=short SBATCH_TIMELIMIT=30 tools/slurm/sweep.sh ...
# Interrupting the script cancels the array.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)

die() {
  echo "sweep: error: $*" >&2
  exit 2
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

need_sbatch() {
  command -v sbatch >/dev/null && return 0
  die "sbatch not found: this needs a Slurm cluster's client commands (Debian: slurm-client," \
    "and SLURM_CONF or /etc/slurm/slurm.conf pointing at the cluster)." \
    "On this machine alone: tools/slurm/single-node.sh start (as root)," \
    "or GNU parallel without Slurm (tools/slurm/README.md)."
}

# Prints the absolute path of the mmsim to use.
find_mmsim() {
  local m=${1:-}
  if [[ -z $m ]]; then
    m=$HERE/../../build/release/src/cli/mmsim
    [[ -x $m ]] || m=$(command -v mmsim) || die "no mmsim: build it or pass --mmsim PATH"
  fi
  [[ -x $m && -f $m ]] || die "mmsim '$m' is not an executable file"
  echo "$(cd "$(dirname "$m")" && pwd)/$(basename "$m")"
}

# Makes DIR (new or empty: stale runs of another sweep must not be merged).
prepare_dir() {
  local dir=$1
  if [[ -e $dir ]] && [[ ! -d $dir || -n $(ls -A "$dir") ]]; then
    die "$dir exists and is not an empty directory"
  fi
  mkdir -p "$dir"
}

# Submits the array, waits for every task, and returns sbatch's status: the
# highest exit code of the tasks. On SIGINT/SIGTERM it cancels the array.
run_array() {
  local n=$1 cpus=$2 logs=$3
  shift 3
  local idfile=$logs/job-id
  # --parsable puts the job id in idfile at once; --wait then blocks until
  # all tasks end. In the background so that a trap can cancel the array.
  sbatch --wait --parsable --array="1-$n" --cpus-per-task="$cpus" \
    --output="$logs/%A_%a.out" "$HERE/compare-array.sbatch" "$@" >"$idfile" &
  local pid=$!
  trap 'cancel_array "$idfile" "$pid"' INT TERM
  local rc=0
  wait "$pid" || rc=$?
  trap - INT TERM
  echo "sweep: array job $(job_id "$idfile") ended (status $rc)" >&2
  return "$rc"
}

job_id() { cut -d';' -f1 "$1" 2>/dev/null; }

cancel_array() {
  local id
  id=$(job_id "$1")
  echo "sweep: interrupted: cancelling array job ${id:-(not submitted yet)}" >&2
  [[ -z $id ]] || scancel "$id" || true
  kill "$2" 2>/dev/null || true
  wait "$2" 2>/dev/null || true
  exit 130
}

# After a failed array: which shards failed, and the end of their logs.
report_failures() {
  local logs=$1 f
  echo "sweep: some shards failed; logs in $logs/" >&2
  for f in "$logs"/*.out; do
    [[ -e $f ]] || continue
    grep -q 'failed (exit' "$f" || grep -qi 'error' "$f" || continue
    echo "--- $f" >&2
    tail -n 5 "$f" >&2
  done
}

main() {
  local n='' dir='' mmsim='' json='' cpus=1
  while (($# > 0)); do
    case $1 in
      -n) n=${2:?-n needs N} && shift 2 ;;
      -o) dir=${2:?-o needs DIR} && shift 2 ;;
      --mmsim) mmsim=${2:?--mmsim needs PATH} && shift 2 ;;
      --json) json=${2:?--json needs FILE} && shift 2 ;;
      -c) cpus=${2:?-c needs CPUS} && shift 2 ;;
      -h | --help) usage ;;
      --) shift && break ;;
      *) die "unknown option '$1' (the scenario and its arguments go after --)" ;;
    esac
  done
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "-n N: a positive number of shards is required"
  [[ -n $dir ]] || die "-o DIR is required"
  (($# > 0)) || die "no scenario after --"
  need_sbatch
  mmsim=$(find_mmsim "$mmsim")
  prepare_dir "$dir"
  dir=$(cd "$dir" && pwd)
  local logs=$dir.logs
  mkdir -p "$logs"
  # The tasks read these (sbatch exports the submitter's environment).
  export MMSIM=$mmsim OUT=$dir MMSIM_SHARDS=$n
  run_array "$n" "$cpus" "$logs" "$@" || {
    report_failures "$logs"
    exit 1
  }
  "$mmsim" compare --merge "$dir" ${json:+--json "$json"}
}

main "$@"
