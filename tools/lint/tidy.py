#!/usr/bin/env python3
"""clang-tidy (checks in .clang-tidy) over the project's src/ files.

    python3 tools/lint/tidy.py [-p build/release] [-j 2] [--clang-tidy clang-tidy] [REGEX]

Takes the translation units of BUILD/compile_commands.json under src/ (or
matching REGEX, searched in the absolute path), runs clang-tidy on them in
parallel, prints each finding once (a header's finding shows up in every file
that includes it), then the findings grouped by check. Exit status 1 when there
is any finding or clang-tidy fails on a file, else 0.

clang-tidy 14 (Debian 12) lacks __builtin_source_location, so GCC 12's
<source_location> is empty for it; clang14_source_location.h, force-included,
stands in for it during the analysis.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIM = Path(__file__).resolve().parent / "clang14_source_location.h"
DIAG = re.compile(
    r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>warning|error): "
    r"(?P<msg>.*?)(?: \[(?P<checks>[^\]]+)\])?$")
NOISE = re.compile(r"^(\d+ warnings?( and \d+ errors?)? generated\.|\d+ errors? generated\.|"
                   r"Suppressed \d+ warnings|Use -header-filter=|Error while processing )")


def run_one(clang_tidy, build, source):
    cmd = [clang_tidy, "-p", str(build), "--quiet", "--use-color=false",
           f"--extra-arg=-include{SHIM}", source]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return source, proc.returncode, proc.stdout


def blocks(output):
    """Splits clang-tidy output into (header match, block text) per diagnostic."""
    current, lines = None, []
    for line in output.splitlines():
        m = DIAG.match(line)
        if m or NOISE.match(line):
            if current:
                yield current, "\n".join(lines)
            current, lines = (m, [line]) if m else (None, [])
        elif current:
            lines.append(line)
    if current:
        yield current, "\n".join(lines)


def rel(path):
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-p", dest="build", default=str(ROOT / "build" / "release"))
    ap.add_argument("-j", dest="jobs", type=int, default=int(os.environ.get("JOBS", "2")))
    ap.add_argument("--clang-tidy", default="clang-tidy")
    ap.add_argument("regex", nargs="?", default="^" + re.escape(str(ROOT / "src")) + "/")
    args = ap.parse_args()

    db_path = Path(args.build) / "compile_commands.json"
    if not db_path.is_file():
        sys.exit(f"tidy: {db_path} not found (configure the build first)")
    pattern = re.compile(args.regex)
    sources = sorted({str(Path(e["directory"], e["file"]).resolve())
                      for e in json.loads(db_path.read_text())})
    sources = [s for s in sources if pattern.search(s)]
    if not sources:
        sys.exit(f"tidy: no file of {db_path} matches {args.regex}")
    print(f"tidy: clang-tidy on {len(sources)} files of {db_path}", flush=True)

    seen = {}      # header line -> block text
    by_check = {}  # check -> [file:line: message]
    failed = []    # files clang-tidy failed on without printing a finding
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for source, rc, out in pool.map(lambda s: run_one(args.clang_tidy, args.build, s),
                                        sources):
            found = False
            for m, text in blocks(out):
                found = True
                key = m.group(0)
                if key in seen:
                    continue
                seen[key] = text
                print(text, flush=True)
                checks = (m.group("checks") or "clang-diagnostic").split(",")
                check = next(c for c in checks if not c.startswith("-"))
                by_check.setdefault(check, []).append(
                    f"{rel(m.group('file'))}:{m.group('line')}: {m.group('msg')}")
            if rc != 0 and not found:  # no diagnostic to show: a crash, a bad command line
                print(out, flush=True)
                failed.append(rel(source))

    if not seen and not failed:
        print(f"tidy: no findings in {len(sources)} files")
        return 0
    print(f"\ntidy: {len(seen)} findings")
    for check in sorted(by_check):
        print(f"{check} ({len(by_check[check])}):")
        for item in sorted(by_check[check]):
            print(f"  {item}")
    if failed:
        print(f"tidy: clang-tidy failed without a finding on {len(failed)} files: "
              f"{' '.join(failed)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
