#!/usr/bin/env bash
# Seeds the libFuzzer corpora under CORPUS_ROOT (default build/fuzz/corpus):
#   fuzz_scenario_load/  every scenarios/*.toml, fuzz/seeds/fuzz_scenario_load/*.toml and the
#                        reproducers in fuzz/findings/*.toml
#   fuzz_scenario_run/   a few fixed byte strings (the generator's input) and
#                        fuzz/seeds/fuzz_scenario_run/*
# Inputs already in a corpus stay; seeds are (re)written under fixed names.
#   fuzz/seed-corpus.sh [CORPUS_ROOT]
set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
corpus=${1:-$root/build/fuzz/corpus}
load=$corpus/fuzz_scenario_load
run=$corpus/fuzz_scenario_run
mkdir -p "$load" "$run"
shopt -s nullglob

for f in "$root"/scenarios/*.toml "$here"/seeds/fuzz_scenario_load/*.toml "$here"/findings/*.toml; do
  cp -- "$f" "$load/seed-$(basename "$f")"
done

for f in "$here"/seeds/fuzz_scenario_run/*; do
  cp -- "$f" "$run/seed-$(basename "$f")"
done
# The run target decodes bytes into a scenario: an empty input gives the
# smallest one, longer ones bigger scenarios. Fixed patterns plus
# pseudo-random strings from fixed seeds (the same files every time).
python3 - "$run" <<'PY'
import random, sys, os
out = sys.argv[1]
seeds = {"empty": b"", "zeros-64": bytes(64), "ones-64": b"\xff" * 64,
         "ramp-256": bytes(range(256)), "ramp-down-256": bytes(reversed(range(256)))}
for i, n in enumerate([64, 128, 256, 384, 512, 512, 768, 1024]):
    r = random.Random(1000 + i)
    seeds[f"random-{i}-{n}"] = bytes(r.randrange(256) for _ in range(n))
for name, data in seeds.items():
    with open(os.path.join(out, "seed-" + name), "wb") as f:
        f.write(data)
PY
echo "seeded $load ($(ls "$load" | wc -l) inputs) and $run ($(ls "$run" | wc -l) inputs)"
