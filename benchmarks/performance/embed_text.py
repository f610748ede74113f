"""What the text a mine embeds per kernel costs, and what other texts do to retrieval.

    python -m benchmarks.performance.embed_text                       # word pieces and embedding time
    python -m benchmarks.performance.embed_text --batches 1,8,32      # the shipped text, texts per run on one thread
    SKEL_BENCH_MIRRORS=/work/.mirror python -m benchmarks.performance.embed_text --retrieval
                                                                      # + the retrieval benchmark's dev split

For each way of writing a kernel as text (``KernelFacts.text()`` as shipped, the two texts
shipped before it, and variants), over the kernels of fla-core and liger-kernel
(installed): the mean and 90th percentile of the model's word pieces, and the seconds the
mining embedder (the ONNX export of the shipped MiniLM, one thread, one text per run) takes
to embed them all. With ``--retrieval``, each variant also runs the clean benchmark's dev
split (``benchmarks.retrieval.run``, never the test split) with that text patched in,
each into its own knowledge base under a temporary folder (a full mine of the benchmark's
repositories per variant, a few minutes each).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from skel.kernels.model import KernelFacts, _unprefixed, _words

SHIPPED = KernelFacts.text


def _parts(k: KernelFacts) -> tuple[str, str, str, str, str]:
    return (_words([k.name]), _words(sorted({_unprefixed(c.name) for c in k.calls})),
            " ".join(sorted({lp.kind for lp in k.loops})) or "none",
            " ".join(sorted({_unprefixed(d.name) for d in k.decorators} - {"jit"})) or "none",
            _words(p.name for p in k.params))


def _before(k: KernelFacts) -> str:
    """The text until 2026-12-02: prefixes, underscores and repeats as written."""
    params = " ".join(p.name for p in k.params)
    calls = " ".join(sorted({c.name for c in k.calls}))
    loops = " ".join(sorted({lp.kind for lp in k.loops}))
    decs = " ".join(sorted({d.name for d in k.decorators}))
    return (f"triton kernel {k.name.replace('_', ' ')}. parameters: {params}. "
            f"calls: {calls}. loops: {loops or 'none'}. decorators: {decs}.")


def _with_params(k: KernelFacts) -> str:
    """The text shipped on 2026-12-02 evening: as now, and the parameters' words after it."""
    name, calls, loops, decs, params = _parts(k)
    return f"{k.language} kernel {name}. calls: {calls}. loops: {loops}. decorators: {decs}. parameters: {params}."


def _no_labels(k: KernelFacts) -> str:
    return "{}. {}. {}. {}. {}.".format(*_parts(k))


def _params3(k: KernelFacts) -> str:
    name, calls, loops, decs, params = _parts(k)
    return f"{name}. {calls}. {loops}. {decs}. {' '.join(w for w in params.split() if len(w) >= 3)}."


def _params_new(k: KernelFacts) -> str:
    """With parameters, but a parameter word already said in the name or the calls is left out."""
    name, calls, loops, decs, params = _parts(k)
    said = {w.lower() for w in f"{name} {calls}".split()}
    params = " ".join(w for w in params.split() if w.lower() not in said)
    return f"{k.language} kernel {name}. calls: {calls}. loops: {loops}. decorators: {decs}. parameters: {params}."


def _bare(k: KernelFacts) -> str:
    """No parameters and no section labels: the name, the calls, the loops, the decorators."""
    name, calls, loops, decs, _ = _parts(k)
    return f"{name}. {calls}. {loops}. {decs}."


def _bare_none_dropped(k: KernelFacts) -> str:
    """As ``_bare``, and a section with nothing in it ("none") left out."""
    name, calls, loops, decs, _ = _parts(k)
    return ". ".join(p for p in (name, calls, loops, decs) if p and p != "none") + "."


VARIANTS = {"shipped: no parameters": SHIPPED, "with parameters (2026-12-02 evening)": _with_params,
            "before (until 2026-12-02)": _before, "with parameters, no section labels": _no_labels,
            "no labels, parameter words of 3+ letters": _params3,
            "with parameter words not said before": _params_new,
            "no parameters, no section labels": _bare,
            "no parameters, no labels, no empty sections": _bare_none_dropped}


def _kernels() -> list[KernelFacts]:
    from skel.kernels.extract import extract, hint
    from skel.kernels.model import ParseError

    out: list[KernelFacts] = []
    for pkg in ("fla", "liger_kernel"):
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            sys.exit(f"{pkg} is not installed: pip install --no-deps fla-core==0.6.0 liger-kernel==0.8.5")
        root = Path(list(spec.submodule_search_locations)[0])
        for p in sorted(root.rglob("*.py")):
            text = p.read_text(encoding="utf-8", errors="replace")
            if hint(text, str(p)):
                try:
                    out += extract(text, str(p))
                except ParseError:
                    continue
    return out


def _cost(texts: list[str]) -> tuple[float, int, float]:
    from skel.embed import OnnxMiniLM, _tokenizer, model_path

    lengths = sorted(len(e.ids) for e in _tokenizer(str(model_path())).encode_batch(texts))
    embedder = OnnxMiniLM(threads=1)
    embedder.embed(texts[:3])  # the session's load is not part of the measure
    t = time.perf_counter()
    embedder.embed(texts)
    return statistics.mean(lengths), lengths[int(0.9 * len(lengths))], time.perf_counter() - t


def _dev_split(cache: Path) -> str:
    """The dev split's overall table, with KernelFacts.text as patched by the caller."""
    import contextlib
    import io

    from benchmarks.retrieval import run

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run.main(["--cache", str(cache)])
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("dev split, all cases"))
    return next(line for line in lines[start:] if line.split()[:2] == ["all", "skel"])


def _batch_sizes(sizes: list[int], texts: list[str], repeat: int) -> None:
    """One thread of the mining embedder over the distinct texts, ``sizes`` texts per run:
    medians with min–max, and the least cosine of each size's vectors against one by one."""
    import numpy as np

    from skel.embed import OnnxMiniLM
    from skel.tables import table

    texts = list(dict.fromkeys(texts))
    times: dict[int, list[float]] = {n: [] for n in sizes}
    vectors: dict[int, np.ndarray] = {}
    for _ in range(repeat):
        for n in sizes:
            embedder = OnnxMiniLM(batch_size=n, threads=1)
            embedder.embed(texts[:3])  # the session's load is not part of the measure
            t = time.perf_counter()
            vectors[n] = np.array(embedder.embed(texts))
            times[n].append(time.perf_counter() - t)
    one = np.array(OnnxMiniLM(batch_size=1, threads=1).embed(texts))
    rows = [[n, f"{statistics.median(ts):.2f}s ({min(ts):.2f}–{max(ts):.2f})",
             f"{float((vectors[n] * one).sum(1).min()):.7f}"] for n, ts in times.items()]
    print(f"{len(texts)} distinct kernel texts of fla-core and liger-kernel; one thread; repeat {repeat}")
    print(table(["texts per run", "embed all, median (min–max)", "least cosine vs one by one"], rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--retrieval", action="store_true", help="also run the dev split per variant (minutes each)")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="only the variants whose name contains TEXT (repeatable)")
    ap.add_argument("--batches", metavar="N,N,...",
                    help="instead: the shipped text's distinct kernel texts embedded on one thread, N texts "
                         "per run (similar lengths together), each size timed --repeat times, interleaved")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from skel.tables import table

    kernels = _kernels()
    if args.batches:
        _batch_sizes([int(n) for n in args.batches.split(",")], [k.text() for k in kernels], args.repeat)
        return
    rows = []
    for name, fn in VARIANTS.items():
        if args.only and not any(o in name for o in args.only):
            continue
        texts = [fn(k) for k in kernels]
        mean, p90, secs = _cost(texts)
        row = {"text": name, "pieces (mean)": f"{mean:.1f}", "pieces (p90)": p90, "embed, 1 thread": f"{secs:.2f}s"}
        if args.retrieval:
            KernelFacts.text = fn  # type: ignore[method-assign]  # mine and suggest call it in this process
            try:
                with tempfile.TemporaryDirectory(prefix="skel-embed-text-") as tmp:
                    row["dev split: R@1 R@3 R@5 MRR"] = " ".join(re.split(r"\s+", _dev_split(Path(tmp)))[3:7])
            finally:
                KernelFacts.text = SHIPPED  # type: ignore[method-assign]
        rows.append(row)
        print(f"  {name}: {texts[len(texts) // 2]}", file=sys.stderr, flush=True)
    print(f"{len(kernels)} kernels of fla-core and liger-kernel")
    headers = list(rows[0])
    print(table(headers, [[r[h] for h in headers] for r in rows]))


if __name__ == "__main__":
    main()
