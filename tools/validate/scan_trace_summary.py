#!/usr/bin/env python3
"""One line per task_numa_work call in a guest's scan trace.

`mmsim validate --scan-trace DIR` writes DIR/NAME-KERNEL-runI.trace, the
guest kernel's ftrace buffer with kprobes on task_numa_work (the task's
numa_scan_seq, numa_scan_period and node_stamp on entry), change_prot_numa
(the VMA, the range, the PTEs it changed). This prints,
for each call: its time, the task, the call's guest time, its scan period,
the PTEs changed, and the VMAs it changed PTEs in (size in pages = changed),
the largest VMA (>= --big pages) shown as BUF[first..end page]=changed.

    tools/validate/scan_trace_summary.py DIR/numa02-6.1-run1.trace

With --faults it lists instead each hinting fault outside the largest VMAs
(>= --big pages), from kprobes on mpol_misplaced (the address) and
task_numa_fault (the TNF_* flags and the page's node), as `mmsim validate
--kprobe "task_numa_fault last_cpupid=%di:s32 mem_node=%si:s32
pages=%dx:s32 flags=%cx:x32" --kprobe "mpol_misplaced addr=%dx:x64"` takes
them and `mmsim run --scan-trace` writes them: the scan pass, the task, the
address, its VMA (start and pages, as the pass's change_prot_numa calls
named it) and the page's offset in it. Flags: 0x1 migrated, 0x2 no group,
0x4 shared, 0x8 local, 0x10 migration failed.
"""
import argparse
import re

LINE = re.compile(r"\s*(.+)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+):(.*)")
ARG = re.compile(r"(\w+)=(0x[0-9a-f]+|-?\d+)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--big", type=int, default=16384, help="pages from which a VMA is shown as BUF")
    ap.add_argument("--faults", action="store_true", help="list the hinting faults, not the calls")
    a = ap.parse_args()
    calls, cur, seen = [], {}, set()
    vmas, faults, addr = set(), [], {}
    for line in open(a.trace, errors="replace"):
        if line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            continue
        comm, pid, _cpu, ts, ev, rest = m.groups()
        if (pid, ts, ev) in seen:  # the ring buffer can repeat its first entries
            continue
        seen.add((pid, ts, ev))
        args = {k: int(v, 0) for k, v in ARG.findall(rest)}
        ts = float(ts)
        if ev == "task_numa_work":
            c = {"t": ts, "who": f"{comm.strip()}-{pid}", "vmas": [], "upd": 0, "end": ts, "args": args}
            calls.append(c)
            cur[pid] = c
        elif ev == "task_numa_work_ret" and pid in cur:
            cur[pid]["end"] = ts
        elif ev in ("mpol_misplaced", "probe_mpol_misplaced") and "addr" in args:
            addr[pid] = args["addr"]
        elif ev in ("task_numa_fault", "probe_task_numa_fault") and pid in addr:
            faults.append((len(calls), comm.strip(), ts, addr.pop(pid), args))
        if ev == "change_prot_numa" and pid in cur:
            vmas.add((args["vm_start"], args["vm_end"]))
            cur[pid]["vmas"].append([args["vm_start"], args["vm_end"], args["start"], args["end"], 0])
        elif ev == "change_prot_numa_ret" and pid in cur and cur[pid]["vmas"]:
            cur[pid]["vmas"][-1][4] = args["updated"]
            cur[pid]["upd"] += args["updated"]
    if a.faults:
        print_faults(faults, vmas, a.big)
        return
    total = 0
    for c in calls:
        total += c["upd"]
        desc = []
        for vs, ve, s, e, u in c["vmas"]:
            size = (ve - vs) >> 12
            if size >= a.big:
                desc.append(f"BUF[{(s - vs) >> 12}..{(e - vs) >> 12}]={u}")
            elif u:
                desc.append(f"{size}p={u}")
        period = c["args"].get("numa_scan_period", -1)
        print(f"{c['t']:10.3f} {c['who']:14} {1e3 * (c['end'] - c['t']):7.1f} ms  period {period:5} ms  "
              f"changed {c['upd']:6}  " + " ".join(desc))
    print(f"calls {len(calls)}, PTEs changed {total}")


def print_faults(faults, vmas, big):
    for scan, comm, ts, at, args in faults:
        vma = next(((vs, ve) for vs, ve in vmas if vs <= at < ve), None)
        if vma and (vma[1] - vma[0]) >> 12 >= big:
            continue
        where = f"{vma[0]:#x}({(vma[1] - vma[0]) >> 12}p)+{(at - vma[0]) >> 12}" if vma else "?"
        print(f"pass {scan:2} {comm:12} {ts:12.4f} {at:#16x} {where:32} flags={args.get('flags', -1):#x} "
              f"node={args.get('mem_node', -1)} pages={args.get('pages', -1)}")
    print(f"faults {len(faults)}")


if __name__ == "__main__":
    main()
