#!/usr/bin/env python3
"""Refreshes docs/validation.md with the results of a few scenarios.

`make validate` rewrites docs/validation.md whole (about an hour under TCG).
After a change that moves only some scenarios, rerun those with
`mmsim validate X.toml --kernel K --markdown F.md` and splice them in: each
"## SCENARIO on KERNEL" section of F.md replaces the document's section of
that name, and its summary row the document's, and the notes at the end are
copied again from validate/NOTES.md.

usage: tools/validate/splice.py F.md [F.md ...]
"""
import re
import sys

DOC = "docs/validation.md"
NOTES = "validate/NOTES.md"
SECTION = re.compile(r"^## (\S+) on (\S+)$", re.M)


def sections(text):
    """The "## X on K" sections of text, by (X, K), each up to the next heading."""
    found = {}
    heads = list(re.finditer(r"^## .*$", text, re.M))
    for i, h in enumerate(heads):
        m = SECTION.match(h.group(0))
        if not m:
            continue
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        found[(m.group(1), m.group(2))] = text[h.start():end]
    return found


def summary_rows(text):
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("scenario", "---"):
            rows[(cells[0], cells[1])] = line
    return rows


def main(paths):
    doc = open(DOC).read()
    notes_at = doc.find("## What the disagreements come from")
    if notes_at < 0:
        sys.exit(f"{DOC}: no notes section to replace")
    tables = doc[:notes_at]
    for path in paths:
        new = open(path).read()
        new_sections = sections(new)
        if not new_sections:
            sys.exit(f"{path}: no '## SCENARIO on KERNEL' section")
        old_sections = sections(tables)
        for key, body in new_sections.items():
            if key not in old_sections:
                sys.exit(f"{path}: {key[0]} on {key[1]} is not in {DOC}: run make validate")
            tables = tables.replace(old_sections[key], body.rstrip("\n") + "\n\n")
        old_rows = summary_rows(tables.split("\n## ", 2)[1] if "\n## " in tables else "")
        for key, row in summary_rows(new.split("## " + next(iter(new_sections))[0])[0]).items():
            if key in old_rows:
                tables = tables.replace(old_rows[key], row)
    open(DOC, "w").write(tables + open(NOTES).read())


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
