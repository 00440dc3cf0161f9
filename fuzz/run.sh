#!/usr/bin/env bash
# Runs libFuzzer targets built in build/fuzz (preset fuzz) for SECONDS each,
# side by side, and summarises. `make fuzz FUZZ_SECONDS=N` builds and calls it.
#   fuzz/run.sh SECONDS TARGET...
#
# Each target runs in libFuzzer's fork mode, which goes on fuzzing after a
# crash, timeout, leak or OOM (each kept as an artifact), with at most
# FUZZ_PROCS (default 2) fuzzing processes in all, shared by the targets.
# FUZZ_PROCS=1 leaves a core free on a 2-core machine.
# Corpus: build/fuzz/corpus/TARGET (seeded by fuzz/seed-corpus.sh; it grows
# from run to run). Findings: build/fuzz/findings/TARGET/{crash,timeout,leak,oom}-*.
# Log: build/fuzz/logs/TARGET.log.
# Exit status: 1 if this run left any finding (an artifact newer than the
# run's start), or a fuzzer failed; 2 on bad usage.
set -u
if [[ $# -lt 2 || ! $1 =~ ^[0-9]+$ || $1 -lt 1 ]]; then
  echo "usage: $0 SECONDS TARGET..." >&2
  exit 2
fi
secs=$1
shift
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
out=$root/build/fuzz
max_procs=${FUZZ_PROCS:-2}  # fuzzing processes in all (FUZZ_PROCS)
per_target=$((max_procs / $#))
((per_target < 1)) && per_target=1
if (($# > max_procs)); then
  echo "$0: at most $max_procs targets at once" >&2
  exit 2
fi

# Symbolised stacks in the reports (clang-16's runtime does not find the
# symbolizer by itself), and UBSan's stack too.
if [[ -z ${ASAN_SYMBOLIZER_PATH:-} ]]; then
  for s in /usr/lib/llvm-16/bin/llvm-symbolizer "$(command -v llvm-symbolizer)"; do
    if [[ -x $s ]]; then
      export ASAN_SYMBOLIZER_PATH=$s
      break
    fi
  done
fi
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

bash "$here/seed-corpus.sh" "$out/corpus" || exit 1
mkdir -p "$out/logs"
stamp=$(mktemp "${TMPDIR:-/tmp}/mmsim-fuzz-stamp.XXXXXX")
trap 'rm -f "$stamp"' EXIT
sleep 1  # artifacts of this run are newer than the stamp

pids=()
for t in "$@"; do
  bin=$out/fuzz/$t
  if [[ ! -x $bin ]]; then
    echo "$0: no fuzz target $bin (make fuzz builds it)" >&2
    exit 2
  fi
  mkdir -p "$out/findings/$t" "$out/corpus/$t"
  extra=()
  [[ $t == fuzz_scenario_load ]] && extra+=("-dict=$here/scenario.dict")
  # A run hits ~20,000 coverage features; entropic scheduling's per-input
  # feature frequencies then took half the time (perf), for a target whose
  # input is a generator's choices, not text: plain scheduling runs 2-4x more.
  [[ $t == fuzz_scenario_run ]] && extra+=(-entropic=0)
  echo "fuzzing $t for ${secs}s ($per_target process(es); log build/fuzz/logs/$t.log)"
  # Artifacts are written relative to the working directory of the fuzzer's
  # children; run in the findings dir so that nothing lands elsewhere.
  (cd "$out/findings/$t" &&
    exec "$bin" -fork="$per_target" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$out/findings/$t/" "${extra[@]}" "$out/corpus/$t") \
    >"$out/logs/$t.log" 2>&1 &
  pids+=($!)
done

status=0
rcs=()
for p in "${pids[@]}"; do
  wait "$p"
  rcs+=($?)
done

echo
printf '%-20s %10s %7s %7s %6s %8s %5s %4s\n' target executions exec/s corpus crash timeout leak oom
i=0
for t in "$@"; do
  log=$out/logs/$t.log
  # Fork mode's status lines: "#EXECS: cov: C ft: F corp: N exec/s: R ... time: Ts ...":
  # executions after the first pass over the corpus, and the speed of the last job.
  last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -n 1)
  execs=$(sed -nE 's/^#([0-9]+):.*/\1/p' <<<"$last")
  rate=$(sed -nE 's/.* exec\/s: ([0-9]+).*/\1/p' <<<"$last")
  corp=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$last")
  count() { find "$out/findings/$t" -maxdepth 1 -type f -name "$1-*" -newer "$stamp" | wc -l; }
  crash=$(count crash)
  timeout=$(count timeout)
  leak=$(count leak)
  oom=$(count oom)
  printf '%-20s %10s %7s %7s %6s %8s %5s %4s\n' "$t" "${execs:-?}" "${rate:-?}" "${corp:-?}" \
    "$crash" "$timeout" "$leak" "$oom"
  if ((crash + timeout + leak + oom > 0)); then
    status=1
  fi
  # The fork-mode parent exits with its last failing job's code (crash,
  # timeout, ...); it failed itself only if it never got to "exiting".
  if ! grep -q '^INFO: exiting:' "$log" || [[ -z $execs ]]; then
    echo "  $t: the fuzzer failed (exit ${rcs[$i]}); see $log" >&2
    tail -n 20 "$log" | sed 's/^/    /' >&2
    status=1
  fi
  i=$((i + 1))
done
if ((status)); then
  echo
  echo "findings: build/fuzz/findings/<target>/ (this run's are the newest); turning one into a"
  echo "reproducer and a regression test: fuzz/README.md"
fi
exit $status
