"""Every skeleton's judgement of every kernel, as JSON lines: a behaviour fingerprint.

    python benchmarks/assessments_dump.py OUT.jsonl

Writes, for each kernel of the skeleton fixtures, the examples and the installed fla-core
and liger-kernel packages, its facts and every skeleton's assessment (already present,
preconditions matched with their lines, preconditions failed, environment notes) for an
unknown target and for CUDA sm_90 Triton 3.7.1. Two code trees that judge kernels the same
way write byte-identical files (`cmp a.jsonl b.jsonl`): run it with each tree first on
PYTHONPATH to check that a refactor changed nothing. Older trees kept the extractor in
``skel.miner.facts``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def corpus(code_root: Path):
    for p in sorted((code_root / "skel/skeletons/fixtures").glob("*.py")):
        yield str(p.relative_to(code_root)), p
    for p in sorted((code_root / "examples").glob("*.py")):
        yield str(p.relative_to(code_root)), p
    for name in ("fla", "liger_kernel"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"{name} is not installed (pip install --no-deps fla-core==0.6.0 liger-kernel==0.8.5)")
        root = Path(list(spec.submodule_search_locations)[0])
        for p in sorted(root.rglob("*.py")):
            yield f"{name}/{p.relative_to(root)}", p


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    try:
        from skel.kernels.triton import extract_file
    except ImportError:  # trees before the kernels layer
        from skel.miner.facts import extract_file  # type: ignore[no-redef]
    import skel
    from skel.skeletons.base import Target
    from skel.skeletons.registry import all_skeletons

    code_root = Path(skel.__file__).resolve().parent.parent
    skeletons = all_skeletons()
    targets = [Target(), Target(backend="cuda", cc=90, triton="3.7.1")]
    dropped = {"strings", "returns", "module_calls"}  # fields some trees do not have
    n = 0
    with open(sys.argv[1], "w") as out:
        for rel, path in corpus(code_root):
            text = path.read_text(encoding="utf-8", errors="replace")
            if "jit" not in text:
                continue
            try:
                kernels = extract_file(text, rel)
            except Exception as exc:  # noqa: BLE001 - recorded, compared like the rest
                out.write(json.dumps({"file": rel, "error": type(exc).__name__}) + "\n")
                continue
            for k in kernels:
                facts = {key: v for key, v in k.to_dict().items() if key not in dropped}
                record = {"file": rel, "kernel": k.name, "facts": facts, "assess": {}}
                for s in skeletons:
                    for i, t in enumerate(targets):
                        a = s.assess(k, t)
                        present = None if a.present is None else [str(h) for h in a.present] + [
                            list(h.lines) for h in a.present]
                        record["assess"][f"{s.id}/{i}"] = [
                            present, [[h.condition, str(h), list(h.lines)] for h in a.matched], a.failed,
                            a.env_ok, a.env_notes]
                out.write(json.dumps(record, sort_keys=True) + "\n")
                n += 1
    print(f"{n} kernels -> {sys.argv[1]}")


if __name__ == "__main__":
    main()
