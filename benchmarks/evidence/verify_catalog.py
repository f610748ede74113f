"""Verify every skeleton's example pair: correctness, then (on a GPU) timing — one record each.

    python -m benchmarks.evidence.verify_catalog [--device cuda|cpu] [--only ID,ID] [--budget-s 540] [--out DIR]

GPU mode: for each example, both sides are checked against the reference on every GPU shape and
CHECK_ONLY shape (first dtype; the other dtypes on the GPU shapes as the budget allows), the
machine code of the two sides is compared, then the pair is timed (``timing.time_pair``, or
``launch.measure`` for a launch-side MEASURE). CPU mode: correctness on the CPU shapes under the
interpreter, nothing timed.

Every skeleton runs in its own process (a CUDA illegal memory access poisons the context; a
hang is killed at its time limit), with its own empty Triton cache; the next process is started
while the current one runs, so imports overlap, and waits for its turn before touching the GPU.
One failure never stops the rest: it becomes a "failed" record. The budget is shared out over
the skeletons still to run.

Writes benchmarks/results/verify_catalog_<date>[_cpu].{jsonl,md}: one ``Verification`` (subject
"example") per line, and a table; prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "skel" / "skeletons" / "catalog"

STARTUP_S = 25.0  # a child's own import time is not charged to its share, up to this


def example_ids() -> list[str]:
    return [p.parent.name.replace("_", "-") for p in sorted(CATALOG.glob("*/example.py"))]


# ---- the child: one skeleton ---------------------------------------------------------------

def _shape_label(name: str, dims: dict[str, int]) -> str:
    return f"{name}(" + ",".join(f"{k}={v}" for k, v in dims.items()) + ")"


def check_both(h: Any, shape: str, dtype: str, seed: int, device: str,
               codes: dict[str, Any] | None = None) -> dict[str, list[Any]]:
    """Both sides on the same inputs (made once), poisoned outputs, one reference. With
    ``codes``, each side runs once more with its launches recorded (their machine code)."""
    import torch

    from skel.verifier.correctness import OutputCheck, compare, dtype_of, fp64, poison, unchanged

    dt = dtype_of(dtype)
    atol, rtol = h.tolerance(dtype)
    inputs = h.make_inputs(h.shapes[shape], dt, seed, device)
    saved = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    ref = h.reference(*(fp64(x) for x in saved))
    out: dict[str, list[Any]] = {}
    for side in ("before", "after"):
        outputs = h.make_outputs(h.shapes[shape], dt, device)
        for o in outputs:
            poison(o)
        h.launcher(side)(*inputs, *outputs)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        checks = [compare(o, r, atol, rtol, i) for i, (o, r) in enumerate(zip(outputs, ref))]
        for i, (x, s) in enumerate(zip(inputs, saved)):
            if isinstance(x, torch.Tensor) and not unchanged(x, s):  # bitwise: fp8 has no nan_to_num
                checks.append(OutputCheck(-1 - i, float("nan"), float("nan"), 1, 1, atol, rtol,
                                          note=f"input {i} was modified by the launcher"))
                x.copy_(s)
        out[side] = checks
        if codes is not None:
            from skel.verifier.applied import capture_launches, codes_of

            with capture_launches(offline=False) as seen:
                h.launcher(side)(*inputs, *outputs)
            torch.cuda.synchronize()
            codes[side] = codes_of(seen, prefer="ptx")
            for x, s in zip(inputs, saved):
                if isinstance(x, torch.Tensor):
                    x.copy_(s)
        del outputs
    return out


ACCURACY_MIN = 10.0  # an accuracy fix must cut the worst error against float64 at least this much


def pays_in(sk_id: str) -> str:
    from skel.skeletons.registry import get

    return get(sk_id).pays_in


def error_removed(before: dict[str, float], after: dict[str, float]) -> str | None:
    """"reduces the error ..." when the after's worst error against float64 is at least
    ``ACCURACY_MIN`` times below the before's on some output, else None."""
    best = None
    for key, b in before.items():
        a = after.get(key)
        if a is None or b <= 0:
            continue
        ratio = b / a if a > 0 else float("inf")
        if ratio >= ACCURACY_MIN and (best is None or ratio > best[0]):
            best = (ratio, key, b, a)
    if best is None:
        return None
    ratio, key, b, a = best
    times = "to zero" if ratio == float("inf") else f"{ratio:,.0f}x smaller"
    return f"reduces the error against float64 on {key}: before max abs err {b:.2g}, after {a:.2g} ({times})"


def _out_of_memory(e: BaseException) -> bool:
    """torch's CUDA out-of-memory error (by name: torch is imported only in the child)."""
    return type(e).__name__ == "OutOfMemoryError" or "CUDA out of memory" in str(e)


def _free_memory(device: str) -> None:
    """Give the caching allocator's blocks back between shapes: a check-only shape that did not
    fit must not leave the next one short (the failed shape's tensors die with its frames)."""
    if not device.startswith("cuda"):
        return
    import gc  # with torch below: only a GPU child frees memory

    import torch  # here, not at the top: the parent process never imports torch

    gc.collect()
    torch.cuda.empty_cache()


def run_one(sk_id: str, device: str, budget_s: float, partial: Path | None = None) -> dict[str, Any]:
    """Everything for one skeleton; returns a Verification dict (plus a few extra keys).
    Before timing, a "correct, not timed" record goes to ``partial``: if the timing hangs and
    the process is killed, the correctness result survives."""
    from skel.skeletons.pairs import example_path, module_name
    from skel.store.evidence import Verification
    from skel.verifier.gpu import device_facts
    from skel.verifier.harness import Harness, import_file

    t0 = time.perf_counter()
    h = Harness.from_module(import_file(example_path(sk_id), module_name(sk_id)))
    gpu = device.startswith("cuda")
    facts = device_facts(device)
    rec: dict[str, Any] = dict(skeleton=sk_id, kernel=f"example:{example_path(sk_id).relative_to(ROOT)}",
                               subject="example", date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                               **facts)
    notes: list[str] = []
    # a CUDA C++ example (its sides are the strings before_cuda/after_cuda, built with
    # load_inline): nothing of it runs without a GPU, and its launches are no Triton launches
    cuda_example = isinstance(getattr(h.module, "before_cuda", None), str)
    if not gpu and (h.cpu_skip or cuda_example):
        why = h.cpu_skip or "needs a CUDA GPU and nvcc (CUDA C++ example)"
        return dict(rec, verdict="correct", detail="", skipped=f"CPU_SKIP: {why}", measure=h.measure)
    if cuda_example:
        from skel.skeletons.pairs.cuda import require_gpu

        require_gpu(sk_id)  # one clear line instead of a failure deep inside make_inputs
    # (shape, dtype, must): the first dtype on every GPU and CHECK_ONLY shape runs while this
    # skeleton's share lasts; other dtypes only within the first 45 % of it
    if gpu:
        plan = [(s, h.dtypes[0], True) for s in (*h.gpu_shapes, *h.check_only)]
        plan += [(s, d, False) for d in h.dtypes[1:] for s in h.gpu_shapes]
    else:
        plan = [(s, d, True) for s in h.cpu_shapes for d in h.dtypes]
    failures: list[str] = []
    before_wrong: list[str] = []
    max_error: dict[str, float] = {}
    max_error_before: dict[str, float] = {}  # an accuracy skeleton's evidence: the error it removes
    checked: list[str] = []
    skipped: list[str] = []
    codes: dict[str, Any] = {}
    too_big: list[str] = []  # check-only shapes this card cannot hold (a 16 GiB tensor x4 on an 80 GB H100)

    def _record(res: dict[str, Any], shape: str, dtype: str) -> None:
        for side, checks in res.items():
            for c in checks:
                if not c.ok and side == "before" and (h.measure == "first-call" or shape in h.fixes):
                    # what the technique fixes: an in-place kernel autotuned without
                    # reset_to_zero/restore_value corrupts its output on the tuning call;
                    # int32 offsets wrap past 2**31 elements (the harness's FIXES shapes)
                    before_wrong.append(f"{shape} {dtype}: output {c.index}: {c.bad}/{c.total} bad")
                elif not c.ok:
                    failures.append(f"{side} {shape} {dtype}: output {c.index}: {c.bad}/{c.total} bad, "
                                    f"max abs err {c.max_abs_error:.3g}{' ' + c.note if c.note else ''}")
                if c.index >= 0 and c.max_abs_error == c.max_abs_error:  # not NaN
                    errors = max_error if side == "after" else max_error_before
                    key = f"out{c.index}"
                    errors[key] = max(errors.get(key, 0.0), c.max_abs_error)

    for i, (shape, dtype, must) in enumerate(plan):
        spent = time.perf_counter() - t0
        if i and spent > (budget_s if must else 0.45 * budget_s):
            skipped.append(f"{shape}/{dtype}")
            continue
        want_codes = gpu and h.measure == "kernel" and i == 0 and not cuda_example
        try:
            res = check_both(h, shape, dtype, 1, device, codes if want_codes else None)
        except Exception as e:  # noqa: BLE001 - only a card too small for a check-only shape is let through
            if not (gpu and shape in h.check_only and shape not in h.fixes and _out_of_memory(e)):
                raise
            too_big.append(f"{shape}/{dtype} ({str(e).split('. ')[0]})")
        else:
            checked.append(f"{shape}/{dtype}")
            _record(res, shape, dtype)
        _free_memory(device)
    if skipped:
        notes.append(f"not checked (out of budget): {', '.join(skipped)}")
    if too_big:
        notes.append(f"not checked (the card's memory is too small for this check-only shape): {', '.join(too_big)}")
    names = list(dict.fromkeys(s for s, _, _ in plan))
    rec.update(shapes=[_shape_label(s, h.shapes[s]) for s in names], dtypes=list(h.dtypes), max_error=max_error,
               measure=h.measure, checked=checked)
    accuracy = gpu and pays_in(sk_id) == "accuracy"
    if accuracy:
        rec["max_error_before"] = max_error_before
    if failures:
        return dict(rec, verdict="wrong", detail=failures[0], failures=failures, notes=notes)
    if not gpu:
        notes.append("not timed (CPU); machine code not compared")
        return dict(rec, verdict="correct", detail=f"both sides correct on {len(checked)} CPU shape/dtype(s)",
                    notes=notes)
    if partial is not None:
        partial.write_text(json.dumps(dict(rec, verdict="correct", detail="correct; timing did not finish",
                                           notes=notes), default=str))
    from skel.verifier import launch, timing
    from skel.verifier.applied import same_machine_code

    if h.measure == "kernel":
        if "before" in codes and "after" in codes:
            same, how = same_machine_code(codes["before"], codes["after"])
            how = f"{how} (PTX, on {plan[0][0]})"
            notes.append(f"machine code: {how}")
            if same:
                return dict(rec, verdict="no-op", detail=f"same machine code: {how}", notes=notes)
        else:
            notes.append("machine code not compared" + (" (CUDA C++: two nvcc builds, no Triton launches to read)"
                                                         if cuda_example else ""))
        left = max(budget_s - (time.perf_counter() - t0), 0.25 * budget_s)
        tr = timing.time_pair(h, h.launcher("before"), h.launcher("after"), device=device,
                              shapes=list(h.gpu_shapes), dtype=h.dtypes[0], seed=1, budget_s=0.8 * left)
    else:
        tr = launch.measure(h, h.launcher("before"), h.launcher("after"), device)
    if before_wrong:
        when = "on its first (tuning) call" if h.measure == "first-call" else "where the technique fixes it"
        notes.insert(0, f"the before is wrong {when}, as expected: {before_wrong[0]}"
                        f"{f' (+{len(before_wrong) - 1} more)' if len(before_wrong) > 1 else ''}")
    rec.update(speedup=tr.speedup, spread=tr.spread, noise=tr.noise, timing=tr.method,
               per_shape=[vars(s) for s in tr.per_shape])
    detail = tr.notes[0] if tr.verdict == "wrong" and tr.notes else \
        (f"speedup {tr.speedup:.3f}" if tr.speedup else "not timed")
    verdict = tr.verdict
    if before_wrong and verdict != "wrong":
        # a correctness technique: its evidence is the before's wrong first call, not a ratio
        what = "the first (tuning) call" if h.measure == "first-call" else "the FIXES shapes"
        verdict, detail = "correct", f"fixes {what}: before wrong ({before_wrong[0]}), after right"
    elif accuracy and verdict != "wrong":
        # an accuracy technique: its evidence is the error against float64 it removes, and the
        # speed ratio is its cost (kept in the record), not its verdict
        removed = error_removed(max_error_before, max_error)
        if removed:
            verdict, detail = "correct", removed
    Verification.from_dict(dict(rec, verdict=verdict))  # validates the record's fields
    return dict(rec, verdict=verdict, detail=detail, notes=notes + tr.notes)


def child_main(sk_id: str, device: str, budget_s: float, out: Path) -> None:
    import torch  # noqa: F401  (imported while the previous skeleton runs)
    import triton  # noqa: F401

    line = sys.stdin.readline()  # our turn; the parent sends this skeleton's share of the budget
    budget_s = float(line) if line.strip() else budget_s
    try:
        rec = run_one(sk_id, device, budget_s, partial=out)
    except BaseException as e:  # recorded, never raised: the parent reads the file
        import traceback

        tb = traceback.format_exc().strip().splitlines()
        msg = str(e).splitlines()[0] if str(e) else ""
        from skel.skeletons.pairs import example_path
        from skel.verifier.gpu import device_facts

        rec = dict(skeleton=sk_id, kernel=f"example:{example_path(sk_id).relative_to(ROOT)}", subject="example",
                   date=datetime.now(timezone.utc).isoformat(timespec="seconds"), **device_facts(device),
                   verdict="failed", detail=f"{type(e).__name__}: {msg}", traceback=tb[-12:])
    out.write_text(json.dumps(rec, default=str))


# ---- the parent ----------------------------------------------------------------------------

class Child:
    def __init__(self, sk_id: str, device: str, work: Path) -> None:
        self.id = sk_id
        self.out = work / f"{sk_id}.json"
        self.log = open(work / f"{sk_id}.log", "w")
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env["TRITON_CACHE_DIR"] = str(work / f"triton-cache-{sk_id}")
        if device == "cpu":
            env["TRITON_INTERPRET"] = "1"
        else:
            env.pop("TRITON_INTERPRET", None)
        self.device = device
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self.spawned = time.perf_counter()

    def spawn(self, budget_s: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.evidence.verify_catalog", "--child", self.id, "--device", self.device,
             "--budget-s", f"{budget_s:.1f}", "--child-out", str(self.out)],
            stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT, text=True, env=self.env, cwd=ROOT,
            start_new_session=True)

    def go(self, budget_s: float, timeout_s: float) -> dict[str, Any]:
        """Start its work, wait at most ``timeout_s``; a record whatever happens."""
        assert self.proc is not None and self.proc.stdin is not None
        started = time.perf_counter()
        try:
            self.proc.stdin.write(f"{budget_s}\n")
            self.proc.stdin.flush()
            self.proc.stdin.close()
            rc = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            if self.out.is_file():  # correctness passed, then timing ran out of time
                rec = json.loads(self.out.read_text())
                rec["detail"] = f"correct; timing killed at the {timeout_s:.0f} s limit"
            else:
                rec = dict(skeleton=self.id, verdict="failed", detail=f"timed out after {timeout_s:.0f} s")
            rec["seconds"] = round(timeout_s, 1)
            return rec
        except BrokenPipeError:
            rc = self.proc.wait()
        secs = time.perf_counter() - started
        self.log.close()
        if self.out.is_file():
            rec = json.loads(self.out.read_text())
        else:
            tail = (self.out.with_suffix(".log").read_text().strip().splitlines() or ["(no output)"])[-1]
            rec = dict(skeleton=self.id, verdict="failed", detail=f"process died (exit {rc}): {tail}")
        rec["seconds"] = round(secs, 1)
        return rec

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "—" if x is None else format(x, spec)


def table(recs: list[dict[str, Any]]) -> str:
    rows = ["| skeleton | measure | shapes | max error | speedup ± spread | noise | verdict | s | detail |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        err = max(r.get("max_error", {}).values(), default=None)
        sp = f"{_fmt(r.get('speedup'))} ± {_fmt(r.get('spread'))}" if r.get("speedup") else "—"
        verdict = f"skipped ({r['skipped']})" if r.get("skipped") else r["verdict"]
        detail = str(r.get("detail", "")).replace("|", "/")[:140]
        rows.append(f"| {r['skeleton']} | {r.get('measure', '?')} | {len(r.get('shapes', []))} | {_fmt(err, '.2g')} | "
                    f"{sp} | {_fmt(r.get('noise'))} | {verdict} | {r.get('seconds', '')} | {detail} |")
    return "\n".join(rows)


def per_shape_lines(recs: list[dict[str, Any]]) -> str:
    out = []
    for r in recs:
        lines = [f"- {s['shape']} {s['dtype']}: {_fmt(s.get('original_ms'), '.4f')} -> "
                 f"{_fmt(s.get('candidate_ms'), '.4f')} ms, x{_fmt(s.get('speedup'))}; {s.get('note', '')}"
                 for s in r.get("per_shape", [])]
        extra = [f"- note: {n}" for n in r.get("notes", [])] + [f"- failure: {f}" for f in r.get("failures", [])[:5]]
        if lines or extra:
            out.append(f"### {r['skeleton']}\n" + "\n".join(lines + extra))
    return "\n\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cuda", "cpu"), default=None)
    ap.add_argument("--only", default="", help="comma-separated skeleton ids")
    ap.add_argument("--budget-s", type=float, default=540.0, help="wall-clock budget for the whole catalog")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child_main(a.child, a.device or "cuda", a.budget_s, a.child_out)
        return
    if a.device is None:
        import torch

        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    ids = example_ids()
    if a.only:
        wanted = [s.strip() for s in a.only.split(",") if s.strip()]
        unknown = [w for w in wanted if w not in ids]
        if unknown:
            raise SystemExit(f"no example for {unknown}; have {ids}")
        ids = wanted
    t_start = time.perf_counter()
    deadline = t_start + a.budget_s
    recs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="skel-verify-") as tmp:
        work = Path(tmp)
        children = [Child(i, a.device, work) for i in ids]
        if children:
            children[0].spawn(a.budget_s / len(ids))
        for n, ch in enumerate(children):
            remaining = deadline - time.perf_counter()
            share = max(remaining / (len(children) - n), 1.0)
            if n + 1 < len(children):
                children[n + 1].spawn(share)  # its imports overlap this one's run
            if remaining <= 1:
                ch.kill()
                rec = dict(skeleton=ch.id, verdict="failed", detail="not run: the catalog budget was spent")
            else:
                rec = ch.go(share, timeout_s=min(remaining, 2 * share + STARTUP_S))
            recs.append(rec)
            print(f"[{n + 1}/{len(children)}] {ch.id}: {rec['verdict']} {rec.get('detail', '')[:100]} "
                  f"({rec.get('seconds', '?')} s)", flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    stem = a.out / f"verify_catalog_{date.today().isoformat()}{'' if a.device == 'cuda' else '_cpu'}"
    from skel.skeletons.pairs import example_path
    from skel.store.evidence import Verification

    with open(stem.with_suffix(".jsonl"), "w") as f:
        for r in recs:
            if r.get("skipped"):
                continue
            r.setdefault("kernel", f"example:{example_path(r['skeleton']).relative_to(ROOT)}")
            r.setdefault("subject", "example")
            v = Verification.from_dict(r)
            extra = {k: r.get(k) for k in ("seconds", "notes", "failures", "traceback", "measure") if r.get(k)}
            f.write(json.dumps(dict(v.to_dict(), **extra), default=str) + "\n")
    head = recs[0] if recs else {}
    md = (f"# verify_catalog {date.today().isoformat()}\n\n"
          f"device: {head.get('device')} (cc {head.get('cc')}), torch {head.get('torch')}, "
          f"triton {head.get('triton')}, driver {head.get('driver')}; {len(recs)} skeletons in "
          f"{time.perf_counter() - t_start:.0f} s\n\n"
          f"{table(recs)}\n\n{per_shape_lines(recs)}\n")
    stem.with_suffix(".md").write_text(md)
    print(md)
    print(f"wrote {stem.with_suffix('.jsonl')} and {stem.with_suffix('.md')}")


if __name__ == "__main__":
    main()
