"""The README's catalog table is a generated page: the ``catalog.md`` that ``skel site``
writes, for the H200 the shipped evidence comes from, from the catalog alone (no store).

    python -m skel.site.readme README.md           # rewrite the table between the markers
    python -m skel.site.readme README.md --check   # exit 1 when it drifted (the tests do this)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from skel import api
from skel.site.pages import catalog_markdown

START = "<!-- skel:catalog:start -->"
END = "<!-- skel:catalog:end -->"
#: the environment the shipped evidence was measured on (skel/data/verifications.jsonl)
TARGET = {"backend": "cuda", "arch": "sm90", "triton": "3.6.0"}


def generated_table() -> str:
    snap = api.catalog_snapshot(store=None, use_store=False,
                                target=api.parse_target(TARGET["backend"], TARGET["arch"], TARGET["triton"]))
    return catalog_markdown(snap)


def current_table(readme: str) -> str | None:
    if START not in readme or END not in readme:
        return None
    return readme.split(START, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("readme", type=Path)
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when the table drifted")
    a = ap.parse_args(argv)
    text = a.readme.read_text(encoding="utf-8")
    if current_table(text) is None:
        print(f"{a.readme}: no {START} ... {END} block", file=sys.stderr)
        return 2
    table = generated_table()
    if a.check:
        same = current_table(text) == table
        print("catalog table up to date" if same else f"catalog table drifted: python -m skel.site.readme {a.readme}")
        return 0 if same else 1
    head, rest = text.split(START, 1)
    a.readme.write_text(head + START + "\n" + table + END + rest.split(END, 1)[1], encoding="utf-8")
    print(f"{a.readme}: catalog table rewritten ({table.count(chr(10)) - 3} skeletons)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
