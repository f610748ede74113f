"""Build the evidence that ships with skel from the GPU runs listed in the evidence manifest.

    python -m benchmarks.evidence.ship_evidence --rebuild            # rewrite skel/data/verifications.jsonl
    python -m benchmarks.evidence.ship_evidence --rebuild --check    # exit 1 if the shipped file is not the rebuild
    python -m benchmarks.evidence.ship_evidence RUN.jsonl [...]      # add runs to the manifest, then rebuild

``skel/data/verifications.jsonl`` is always rebuilt from nothing: from the raw result files that
``benchmarks/evidence/manifest.json`` lists, read in its order, with the relabels and exclusions
it states (each names its raw file and line and gives its reason). It is never merged into or
edited by hand; ``tests/test_evidence_manifest.py`` fails when the shipped file is not exactly
this rebuild.

Each raw line is one ``skel.store.evidence.Verification`` (as written by
``benchmarks.evidence.verify_catalog`` and ``benchmarks.evidence.verify_suite``; extra fields such
as the suite's ``problem``/``candidate``/``rank`` are dropped). Left out by rule: pairs a budget
never reached (``not-run``) and runs on the CPU interpreter (they prove correctness, not speed, and
CI re-checks them). A run replaces an earlier one with the same key (skeleton, kernel, subject,
device, Triton), so re-running a fixed pair supersedes its old verdict; a run recorded without its
device (a child that crashed before saying where it ran) is dropped when a later run of the same
pair says where it ran. The output is sorted by key, one ``json.dumps(sort_keys=True)`` line a run,
so the rebuild is deterministic and diffs of the data file are readable.

Manifest format (JSON)::

    {"about": "...", "out": "skel/data/verifications.jsonl",
     "results": [
       {"file": "benchmarks/results/<run>/verify_*.jsonl", "what": "...",
        "relabel": [{"line": 3, "kernel": "suite:x", "from": "old-id", "to": "new-id", "reason": "..."}],
        "exclude": [{"line": 7, "skeleton": "id", "kernel": "...", "reason": "..."}]},
       ...]}

``line`` is 1-based in the raw file; ``from`` (and ``skeleton``/``kernel`` where given) must match
the raw record there, so an entry that no longer points at its record fails the rebuild. A
relabelled record carries a note naming the manifest, the raw file and line, and the reason.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skel.store.evidence import VERDICTS, Verification

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).resolve().with_name("manifest.json")

_TOP_KEYS = {"about", "out", "results"}
_RESULT_KEYS = {"file", "what", "relabel", "exclude"}
_RELABEL_KEYS = {"line", "kernel", "from", "to", "reason"}
_EXCLUDE_KEYS = {"line", "skeleton", "kernel", "reason"}


class ManifestError(ValueError):
    """The manifest is malformed, or one of its entries does not match its raw record."""


@dataclass
class Rebuild:
    """What a rebuild produced: the file's text and how each raw record was used."""

    text: str
    runs: int = 0
    read: int = 0
    left_out: int = 0  # not-run or CPU records
    replaced: int = 0  # superseded by a later run of the same key
    dropped: int = 0  # device-less runs superseded by a placed run of the same pair
    relabelled: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)

    def summary(self, out: Path | str) -> str:
        lines = [f"{out}: {self.runs} runs ({self.read} raw records read; {self.left_out} CPU or not-run left out, "
                 f"{self.replaced} replaced by a later run of the same key, {self.dropped} superseded runs without "
                 f"a device dropped, {len(self.excluded)} excluded, {len(self.relabelled)} relabelled by the manifest)"]
        lines += [f"  relabelled: {r}" for r in self.relabelled]
        lines += [f"  excluded: {e}" for e in self.excluded]
        return "\n".join(lines)


def _check_keys(what: str, d: Any, allowed: set[str], required: set[str]) -> None:
    if not isinstance(d, dict):
        raise ManifestError(f"{what}: expected an object, got {type(d).__name__}")
    unknown = set(d) - allowed
    missing = required - set(d)
    if unknown:
        raise ManifestError(f"{what}: unknown key(s) {', '.join(sorted(unknown))}")
    if missing:
        raise ManifestError(f"{what}: missing key(s) {', '.join(sorted(missing))}")


def load_manifest(path: Path = MANIFEST) -> dict[str, Any]:
    """The manifest, validated: known keys only, a reason for every edit, one edit per raw line."""
    manifest = json.loads(Path(path).read_text())
    _check_keys(str(path), manifest, _TOP_KEYS, {"out", "results"})
    seen: set[str] = set()
    for i, entry in enumerate(manifest["results"]):
        where = f"{path}: results[{i}]"
        _check_keys(where, entry, _RESULT_KEYS, {"file"})
        if entry["file"] in seen:
            raise ManifestError(f"{where}: {entry['file']} is listed twice")
        seen.add(entry["file"])
        lines: set[int] = set()
        for kind, keys, required in (("relabel", _RELABEL_KEYS, {"line", "from", "to", "reason"}),
                                     ("exclude", _EXCLUDE_KEYS, {"line", "reason"})):
            for j, edit in enumerate(entry.get(kind, [])):
                ewhere = f"{where}.{kind}[{j}]"
                _check_keys(ewhere, edit, keys, required)
                if not isinstance(edit["line"], int) or edit["line"] < 1:
                    raise ManifestError(f"{ewhere}: line must be a 1-based line number")
                if not str(edit["reason"]).strip():
                    raise ManifestError(f"{ewhere}: a {kind} needs its reason")
                if edit["line"] in lines:
                    raise ManifestError(f"{ewhere}: line {edit['line']} of {entry['file']} has two entries")
                lines.add(edit["line"])
    return manifest


def _matches(raw: dict[str, Any], **expect: str | None) -> bool:
    """The raw record has these fields (a field given as None is not checked)."""
    return all(want is None or raw.get(k) == want for k, want in expect.items())


def rebuild(manifest_path: Path = MANIFEST, root: Path | None = None) -> Rebuild:
    """Rebuild the shipped evidence from the manifest's raw files (nothing else is read); the
    manifest's paths are relative to ``root`` (the repository)."""
    root = root or ROOT
    manifest = load_manifest(manifest_path)
    manifest_name = _rel(Path(manifest_path), root)
    by_key: dict[str, Verification] = {}
    res = Rebuild(text="")
    for entry in manifest["results"]:
        name = entry["file"]
        path = root / name
        if not path.is_file():
            raise ManifestError(f"{manifest_name}: {name} does not exist")
        relabels = {e["line"]: e for e in entry.get("relabel", [])}
        excludes = {e["line"]: e for e in entry.get("exclude", [])}
        used: set[int] = set()
        for lineno, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            raw = json.loads(line)
            res.read += 1
            if lineno in excludes:
                e = excludes[lineno]
                if not _matches(raw, skeleton=e.get("skeleton"), kernel=e.get("kernel")):
                    raise ManifestError(f"{manifest_name}: the exclusion of {name}:{lineno} does not match its record "
                                        f"({raw.get('skeleton')!r} on {raw.get('kernel')!r})")
                used.add(lineno)
                res.excluded.append(f"{name}:{lineno} ({raw.get('skeleton')} on {raw.get('kernel')}): {e['reason']}")
                continue
            if raw.get("verdict") not in VERDICTS:  # a pair the budget never reached ("not-run")
                if lineno in relabels:
                    raise ManifestError(f"{manifest_name}: {name}:{lineno} is relabelled but never ships "
                                        f"(verdict {raw.get('verdict')!r})")
                res.left_out += 1
                continue
            if lineno in relabels:
                e = relabels[lineno]
                if not _matches(raw, skeleton=e["from"], kernel=e.get("kernel")):
                    raise ManifestError(f"{manifest_name}: the relabel of {name}:{lineno} expects {e['from']!r}"
                                        f"{' on ' + repr(e['kernel']) if 'kernel' in e else ''}, the record is "
                                        f"{raw.get('skeleton')!r} on {raw.get('kernel')!r}")
                used.add(lineno)
                raw = {**raw, "skeleton": e["to"],
                       "notes": [*raw.get("notes", []), f"relabelled from {e['from']} by {manifest_name} "
                                 f"(raw record {name}:{lineno}): {e['reason']}"]}
                res.relabelled.append(f"{name}:{lineno} {e['from']} -> {e['to']} on {raw.get('kernel')}")
            rec = Verification.from_dict(raw)
            if rec.backend == "cpu":
                if lineno in relabels:
                    raise ManifestError(f"{manifest_name}: {name}:{lineno} is relabelled but is a CPU run, "
                                        "never shipped")
                res.left_out += 1
                continue
            if rec.key in by_key:
                res.replaced += 1
            by_key[rec.key] = rec
        stale = (set(relabels) | set(excludes)) - used
        if stale:
            raise ManifestError(f"{manifest_name}: no record at {name} line(s) {', '.join(map(str, sorted(stale)))}")
    # a run recorded without its device (a child that crashed before saying where it ran) is
    # superseded by a later run of the same pair: it cannot be placed in any environment
    placed: dict[tuple[str, str, str], str] = {}
    for r in by_key.values():
        if r.device:
            pair = (r.skeleton, r.kernel, r.subject)
            placed[pair] = max(placed.get(pair, ""), r.date or "")
    dropped = [k for k, r in by_key.items()
               if not r.device and placed.get((r.skeleton, r.kernel, r.subject), "") > (r.date or "")]
    for k in dropped:
        del by_key[k]
    res.dropped = len(dropped)
    res.runs = len(by_key)
    res.text = "".join(json.dumps(by_key[k].to_dict(), sort_keys=True) + "\n" for k in sorted(by_key))
    return res


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def add_to_manifest(files: list[Path], manifest_path: Path = MANIFEST, root: Path | None = None) -> list[str]:
    """Append raw result files to the manifest (after the ones it lists); returns those added."""
    root = root or ROOT
    manifest = load_manifest(manifest_path)
    listed = {e["file"] for e in manifest["results"]}
    added = []
    for f in files:
        if not f.is_file():
            raise ManifestError(f"{f} does not exist")
        name = _rel(f, root)
        if name.startswith("/") or name.startswith(".."):
            raise ManifestError(f"{f} is outside the repository; raw results live under benchmarks/results/")
        if name not in listed:
            manifest["results"].append({"file": name})
            listed.add(name)
            added.append(name)
    if added:
        Path(manifest_path).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return added


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="*", type=Path,
                    help="raw result files to add to the manifest (appended, in this order) before rebuilding")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the shipped file from the manifest")
    ap.add_argument("--check", action="store_true",
                    help="with --rebuild: write nothing, exit 1 if the shipped file is not the rebuild")
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--out", type=Path, default=None, help="where to write (default: the manifest's out)")
    args = ap.parse_args(argv)
    if not args.results and not args.rebuild:
        ap.error("name raw result files to add, or --rebuild")
    if args.check and args.results:
        ap.error("--check rebuilds the manifest as it is; add files without --check")
    if args.results:
        for name in add_to_manifest(args.results, args.manifest):
            print(f"{args.manifest}: added {name}")
    out = args.out or ROOT / load_manifest(args.manifest)["out"]
    res = rebuild(args.manifest)
    if args.check:
        current = out.read_text() if out.is_file() else ""
        if current == res.text:
            print(f"{out}: the rebuild from {args.manifest} ({res.runs} runs)")
            return 0
        old = set(current.splitlines())
        new = set(res.text.splitlines())
        print(f"{out} is not the rebuild from {args.manifest}: {len(old - new)} line(s) only in the file, "
              f"{len(new - old)} only in the rebuild; run python -m benchmarks.evidence.ship_evidence --rebuild")
        for line in sorted(old - new):
            r = json.loads(line)
            print(f"  only in the file:    {r.get('skeleton')} on {r.get('kernel')} ({r.get('date')})")
        for line in sorted(new - old):
            r = json.loads(line)
            print(f"  only in the rebuild: {r.get('skeleton')} on {r.get('kernel')} ({r.get('date')})")
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(res.text)
    print(res.summary(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
