#!/usr/bin/env bash
# Whole-scenario timings: the seed scenarios and the reclaim and tiering ones
# at full size (Release build), best of 3 wall times, with the simulated page
# events per second mmsim reports.
set -euo pipefail
mmsim=${1:-build/release/src/cli/mmsim}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for s in scenarios/seed-a-numa-shared-cow.toml scenarios/seed-b-memcg-fault-drop.toml \
  scenarios/reclaim-kswapd.toml scenarios/tiering-hot-cold.toml scenarios/numa-thp-migrate.toml; do
  for i in 1 2 3; do "$mmsim" run "$s" --json "$out" >/dev/null 2>&1; cp "$out" "$out.$i"; done
  python3 - "$s" "$out".1 "$out".2 "$out".3 <<'PY'
import json, sys
runs = [json.load(open(p))["sim"] for p in sys.argv[2:]]
best = min(runs, key=lambda r: r["wall_s"])
print(f'{sys.argv[1]:<45} wall {best["wall_s"]:.3f} s (best of 3)  events {best["events"]}  '
      f'page events {best["page_events"]}  {best["page_events_per_s"]:.3g} page events/s')
PY
  rm -f "$out".1 "$out".2 "$out".3
done
