#!/usr/bin/env python3
"""Download and unpack the PyPI distributions that the retrieval cases need.

Stdlib only. Each case in cases.json names a package and two released versions
("before" / "after") plus a path inside the unpacked distribution. This script
fetches those distributions with `pip download --no-deps` (a wheel for this Python, a
cp310 manylinux wheel, or the sdist, in that order), unpacks only the Python sources into

    <cache>/<normalized-package>/<version>/<path inside the distribution>

and exposes `source_of(case, which, cache)` returning the text of the case's
file in either version. Nothing downloaded here is ever committed.

Usage:
    python -m benchmarks.retrieval.releases.fetch                 # all cases
    python -m benchmarks.retrieval.releases.fetch --cache DIR --only liger-kernel
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases.json"
DEFAULT_CACHE = Path(os.environ.get("SKEL_BENCH_CACHE", Path.home() / ".cache" / "skel-bench"))
MARKER = ".skel-bench-complete"


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def load_cases(path: Path = CASES) -> list[dict]:
    with open(path) as f:
        return json.load(f)


def _extract(archive: Path, dest: Path) -> int:
    """Extract *.py files (and nothing else) into dest; sdists lose their top folder."""
    n = 0
    name = archive.name
    if name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as z:
            members = [m for m in z.namelist() if m.endswith(".py")]
            strip = name.endswith(".zip") and not name.endswith(".whl")
            for m in members:
                rel = m.split("/", 1)[1] if strip and "/" in m else m
                out = dest / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(z.read(m))
                n += 1
    else:
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                if not m.isfile() or not m.name.endswith(".py"):
                    continue
                rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
                if ".." in Path(rel).parts:
                    continue
                out = dest / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                f = t.extractfile(m)
                out.write_bytes(f.read() if f else b"")
                n += 1
    return n


# pip is the only client we use: it knows the configured package index, and the
# attempts go from the cheapest artefact to the most general one.
_PIP_ATTEMPTS = (
    ["--only-binary=:all:"],  # a wheel for this interpreter (or a pure-Python one)
    ["--only-binary=:all:", "--python-version", "3.10", "--implementation", "cp",  # cp310-only wheels
     "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64",
     "--platform", "manylinux_2_17_x86_64"],
    ["--no-binary=:all:", "--no-build-isolation"],  # the sdist
)


def _pip_download(pkg: str, version: str, tmp: Path, verbose: bool = True) -> Path:
    errors = []
    for extra in _PIP_ATTEMPTS:
        for old in tmp.iterdir():
            old.unlink()
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", *extra, f"{pkg}=={version}",
               "-d", str(tmp)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        files = [p for p in tmp.iterdir() if p.is_file()]
        if r.returncode == 0 and files:
            if verbose:
                print(f"[download] {pkg}=={version}: {files[0].name} ({files[0].stat().st_size / 1e6:.1f} MB)")
            return files[0]
        errors.append((r.stderr.strip().splitlines() or ["?"])[-1])
    raise RuntimeError(f"pip download found nothing for {pkg}=={version}: {errors[-1]}")


def dist_dir(pkg: str, version: str, cache: Path | str = DEFAULT_CACHE) -> Path:
    return Path(cache) / norm(pkg) / version


def ensure(pkg: str, version: str, cache: Path | str = DEFAULT_CACHE, verbose: bool = True) -> Path:
    """Download and unpack pkg==version unless already cached; returns its folder."""
    dest = dist_dir(pkg, version, cache)
    if (dest / MARKER).exists():
        if verbose:
            print(f"[cached] {pkg}=={version}")
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as td:
        archive = _pip_download(pkg, version, Path(td), verbose)
        n = _extract(archive, dest)
        (dest / MARKER).write_text(json.dumps({"package": pkg, "version": version,
                                                "archive": archive.name, "py_files": n}))
        if verbose:
            print(f"[unpacked] {pkg}=={version}: {n} .py files -> {dest}")
    return dest


def source_of(case: dict, which: str = "before", cache: Path | str = DEFAULT_CACHE) -> str:
    """Text of the case's file in the 'before' or 'after' release (downloads if needed)."""
    if which not in ("before", "after"):
        raise ValueError("which must be 'before' or 'after'")
    version = case[which]
    path = case.get("path_after", case["path"]) if which == "after" else case["path"]
    d = ensure(case["package"], version, cache, verbose=False)
    return (d / path).read_text(encoding="utf-8", errors="replace")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default=str(DEFAULT_CACHE))
    ap.add_argument("--cases", default=str(CASES))
    ap.add_argument("--only", action="append", help="only this package (repeatable)")
    ap.add_argument("--check", action="store_true", help="verify each case's function exists in both files")
    args = ap.parse_args(argv)
    cases = load_cases(Path(args.cases))
    wanted = sorted({(c["package"], c[w]) for c in cases for w in ("before", "after")
                     if not args.only or c["package"] in args.only})
    print(f"{len(cases)} cases need {len(wanted)} distributions; cache={args.cache}")
    failed = []
    for i, (pkg, ver) in enumerate(wanted, 1):
        print(f"({i}/{len(wanted)}) ", end="")
        try:
            ensure(pkg, ver, args.cache)
        except Exception as e:
            print(f"[error] {pkg}=={ver}: {e}")
            failed.append((pkg, ver))
    if args.check:
        bad = 0
        for c in cases:
            if args.only and c["package"] not in args.only:
                continue
            for w, fn in (("before", c["function"]), ("after", c.get("function_after", c["function"]))):
                try:
                    txt = source_of(c, w, args.cache)
                except Exception as e:
                    print(f"[check] {c['id']} {w}: {e}")
                    bad += 1
                    continue
                if not re.search(rf"^\s*def {re.escape(fn)}\s*\(", txt, re.M):
                    print(f"[check] {c['id']} {w}: function {fn} not found")
                    bad += 1
        print(f"check: {bad} problems")
        if bad:
            return 1
    if failed:
        print(f"{len(failed)} distributions failed: {failed}")
        return 1
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
