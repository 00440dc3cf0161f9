#!/usr/bin/env bash
# Whole-scenario timings (Release build): the seed scenarios, the reclaim,
# tiering and THP ones, and the mid-size benchmark of issue [11] (8 threads
# sweeping 4 GiB on 8 sockets), best of 3 wall times; with BIG=1 also the big
# one (64 threads, 256 GiB of a 1 TiB 8-socket machine, once: about a minute).
# Each line: wall time, the process's peak RSS, events, page events and page
# events per second (mmsim's JSON `sim`), and the run's page faults.
#
#   bash bench/run_scenarios.sh [MMSIM]          BIG=1 bash bench/run_scenarios.sh
set -euo pipefail
mmsim=${1:-build/release/src/cli/mmsim}
out=$(mktemp)
trap 'rm -f "$out" "$out".*' EXIT
report() {
  python3 - "$@" <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[2:]]
best = min(runs, key=lambda r: r["sim"]["wall_s"])
s = best["sim"]
print(f'{sys.argv[1]:<48} wall {s["wall_s"]:7.3f} s (best of {len(runs)})  '
      f'peak RSS {s["peak_rss_bytes"] / 2**20:7.1f} MiB  events {s["events"]:>11}  '
      f'page events {s["page_events"]:>11}  {s["page_events_per_s"]:.3g}/s  '
      f'pgfault {best["vmstat"].get("pgfault", 0)}')
PY
}
scenarios=(scenarios/seed-a-numa-shared-cow.toml scenarios/seed-b-memcg-fault-drop.toml
  scenarios/reclaim-kswapd.toml scenarios/tiering-hot-cold.toml scenarios/numa-thp-migrate.toml
  bench/scenarios/mid-8s-8threads-4g.toml)
for s in "${scenarios[@]}"; do
  for i in 1 2 3; do "$mmsim" run "$s" --json "$out.$i" >/dev/null 2>&1; done
  report "$s" "$out".1 "$out".2 "$out".3
  rm -f "$out".1 "$out".2 "$out".3
done
if [[ ${BIG:-0} == 1 ]]; then
  "$mmsim" run bench/scenarios/big-8s-64threads-256g.toml --json "$out.1" >/dev/null 2>&1
  report bench/scenarios/big-8s-64threads-256g.toml "$out".1
fi
