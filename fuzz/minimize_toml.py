#!/usr/bin/env python3
"""Cuts a failing scenario down: drops whole tables, then single key lines, as
long as `mmsim run FILE --check --no-timing` still fails the same way.

    fuzz/minimize_toml.py IN.toml OUT.toml --signature "INVARIANT CHECK FAILED"
    fuzz/minimize_toml.py IN.toml OUT.toml --hang 5      # still runs longer than 5 s

The signature is text the failing run prints (stdout or stderr): a checker
message, "runtime error", "AddressSanitizer". Inline loop bodies are kept
whole; trim them by hand. Greedy and quadratic: give it what the fuzzer
minimised first (fuzz/README.md).
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--signature", help="text the failing run prints")
    how.add_argument("--hang", type=float, metavar="SECONDS",
                     help="the failure is a run longer than this")
    ap.add_argument("--timeout", type=float, default=30, help="per run, seconds (default 30)")
    ap.add_argument("--mmsim", default=os.path.join(HERE, "..", "build", "fuzz", "src", "cli", "mmsim"),
                    help="the mmsim binary (default build/fuzz/src/cli/mmsim)")
    args = ap.parse_args()

    def fails(lines):
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write("\n".join(lines) + "\n")
            name = f.name
        try:
            r = subprocess.run([args.mmsim, "run", name, "--check", "--no-timing"],
                               capture_output=True, text=True, errors="replace",
                               timeout=args.hang if args.hang else args.timeout)
            return args.signature is not None and args.signature in r.stdout + r.stderr
        except subprocess.TimeoutExpired:
            return args.hang is not None
        finally:
            os.unlink(name)

    lines = [l for l in open(args.input).read().split("\n") if l.strip()]
    if not fails(lines):
        sys.exit(f"{args.input} does not fail that way to begin with")

    def tables(ls):
        out, cur = [], []
        for i, l in enumerate(ls):
            if l.startswith("[") and cur:
                out.append(cur)
                cur = []
            cur.append(i)
        if cur:
            out.append(cur)
        return out

    changed = True
    while changed:
        changed = False
        for t in reversed(tables(lines)):
            cand = [l for i, l in enumerate(lines) if i not in t]
            if fails(cand):
                lines, changed = cand, True
        i = len(lines) - 1
        while i >= 0:
            if not lines[i].startswith("["):
                cand = lines[:i] + lines[i + 1:]
                if fails(cand):
                    lines, changed = cand, True
            i -= 1
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{args.output}: {len(lines)} lines")


if __name__ == "__main__":
    main()
