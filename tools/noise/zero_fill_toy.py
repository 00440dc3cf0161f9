#!/usr/bin/env python3
"""A toy of zero-fill-race under a host's schedule (validate/NOTES.md).

W writers each take N THPs in order: at a THP nobody has mapped yet a writer
allocates one and clears it (CLEAR us of its CPU), and the first clear to
end maps it; then (or at once, if it was mapped) the writer writes it
(MEMSET us). A writer that reaches a THP before any clear of it has ended
allocates one too: the race the kernel's do_huge_pmd_anonymous_page loses.
Printed: THPs allocated per THP mapped, for each host schedule and length
of turn, four seeds each. The schedules, for W writers on H host CPUs:

  fluid        each runs at H/W of its speed, always (exact lockstep here);
  independent  each is taken off on its own, turns of T (lognormal, cv)
               after exponential runs of mean T (what `host_turn` drew until
               2026-12-07);
  aligned      round robin, both host CPUs switching at once every T;
  fifo         round robin, a slice end for each host CPU, one line
               (sim::HostCpus);
  percpu       a run queue for each host CPU, W/H writers each.

Usage: zero_fill_toy.py [--clear US] [--memset US] [--cv CV]
A 10 us time step: a few seconds a line.
"""
import argparse
import math
import random


def run(mode, seed, turn, cv, clear, memset, writers=4, cpus=2, thps=128, dt=10.0):
    rng = random.Random(seed)
    s2 = math.log(1 + cv * cv)
    mu = math.log(turn) - s2 / 2

    def draw():
        return rng.lognormvariate(mu, math.sqrt(s2))

    pos = [0] * writers
    phase = ["arrive"] * writers
    left = [0.0] * writers
    mapped = [False] * thps
    allocs = 0
    order = list(range(writers))
    rng.shuffle(order)
    # Host state by schedule.
    on = [True] * writers
    until = [0.0] * writers
    cur, end, lines = [None] * cpus, [0.0] * cpus, []
    if mode == "independent":
        for w in range(writers):
            on[w] = rng.random() < cpus / writers
            until[w] = rng.expovariate(1 / turn) if on[w] else draw()
    elif mode == "aligned":
        until = [0.0]
    elif mode in ("fifo", "percpu"):
        if mode == "fifo":
            lines = [order[cpus:]]
            queue_of = [0] * cpus
            firsts = order[:cpus]
        else:
            lines = [[w for w in order if w % cpus == c] for c in range(cpus)]
            queue_of = list(range(cpus))
            firsts = [lines[c].pop(0) for c in range(cpus)]
        for c in range(cpus):
            cur[c], end[c] = firsts[c], rng.random() * draw()
    t, done = 0.0, 0
    while done < writers:
        live = [w for w in range(writers) if pos[w] < thps]
        if mode == "independent":
            for w in range(writers):
                if t >= until[w]:
                    on[w] = not on[w]
                    until[w] = t + (rng.expovariate(1 / turn) if on[w] else draw())
        elif mode == "aligned":
            if t >= until[0]:
                order = order[cpus:] + order[:cpus]
                until[0] = t + draw()
            running = [w for w in order if w in live][:cpus]
            on = [w in running for w in range(writers)]
        elif mode in ("fifo", "percpu"):
            for c in range(cpus):
                line = lines[queue_of[c]]
                line[:] = [w for w in line if w in live]
                if cur[c] is not None and cur[c] not in live:
                    cur[c] = line.pop(0) if line else None
                    end[c] = t + draw()
                elif t >= end[c] and line:
                    line.append(cur[c])
                    cur[c] = line.pop(0)
                    end[c] = t + draw()
            on = [w in cur for w in range(writers)]
        speed = cpus / writers if mode == "fluid" else 1.0
        for w in live:
            if mode != "fluid" and not on[w]:
                continue
            if phase[w] == "arrive":
                if mapped[pos[w]]:
                    phase[w], left[w] = "memset", memset
                else:
                    phase[w], left[w] = "clear", clear
                    allocs += 1
            left[w] -= dt * speed
            if left[w] <= 0:
                if phase[w] == "clear":
                    mapped[pos[w]] = True  # the first to end maps it; later ones free theirs
                    phase[w], left[w] = "memset", memset
                else:
                    pos[w] += 1
                    phase[w] = "arrive"
                    done += pos[w] >= thps
        t += dt
    return allocs / thps


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clear", type=float, default=2600, help="a THP's clear, us (guest: 2.6 ms)")
    p.add_argument("--memset", type=float, default=2400, help="a THP's memset, us (guest: 2.4 ms)")
    p.add_argument("--cv", type=float, default=0.56, help="the turns' cv")
    a = p.parse_args()
    for mode in ("fluid", "independent", "aligned", "fifo", "percpu"):
        for turn in (800.0, 3000.0, 7000.0):
            r = [run(mode, s, turn, a.cv, a.clear, a.memset) for s in range(4)]
            print(f"{mode:12s} turn {turn / 1000:3.1f} ms: " + " ".join(f"{x:.2f}" for x in r))


if __name__ == "__main__":
    main()
