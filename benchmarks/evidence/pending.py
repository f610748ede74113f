"""Which runnable pairs still lack a GPU run for a (GPU, Triton), and the device command that runs them.

    python -m benchmarks.evidence.pending --gpu H100 [--triton 3.7] [--json]

A pair is pending on a GPU when the shipped evidence (``skel/data/verifications.jsonl``) has no run
of that skeleton's own example there on that Triton (major.minor; a CUDA C++ pair is not compiled
by Triton, so any Triton counts); an accuracy skeleton's run counts once it recorded the error it
removes against float64 ("reduces the error ..."). Template-only examples (no harness) are listed apart: they have
nothing to run until someone writes one. The printed command is the one to send to the device
(``benchmarks/gpu/evidence_session.sh``; the first run of a session carries ``.wh/``, see its header):
CUDA pairs first (built in parallel), then Triton pairs, the accuracy and correctness fixes early
so a short budget still reaches them.
"""

from __future__ import annotations

import argparse
import json
import sys


def pending(gpu: str, triton: str) -> dict[str, list[str]]:
    from benchmarks.evidence.verify_catalog import example_ids
    from skel.store.evidence import shipped_verifications
    from skel.skeletons.pairs import example_path
    from skel.skeletons.registry import get
    from skel.skeletons.status import gpu_matches

    done_cuda: set[str] = set()
    done_triton: set[str] = set()
    for r in shipped_verifications():
        if r.backend == "cpu" or r.subject != "example" or not gpu_matches(r.device, gpu):
            continue
        if get(r.skeleton).pays_in == "accuracy" and not r.detail.startswith("reduces the error"):
            continue  # a run from before the error it removes was recorded: it says only its cost
        done_cuda.add(r.skeleton)
        if r.triton and ".".join(r.triton.split(".")[:2]) == triton:
            done_triton.add(r.skeleton)
    out: dict[str, list[str]] = {"cuda": [], "triton": [], "template_only": []}
    for sid in example_ids():
        text = example_path(sid).read_text()
        runnable = "def make_inputs" in text
        cuda = "before_cuda" in text
        if not runnable:
            out["template_only"].append(sid)
        elif cuda and sid not in done_cuda:
            out["cuda"].append(sid)
        elif not cuda and sid not in done_triton:
            out["triton"].append(sid)
    out["triton"].sort(key=lambda s: (get(s).pays_in == "speed", s))  # fixes first: they need one run only
    return out


def command(p: dict[str, list[str]], budget: int = 400) -> str:
    ids = p["cuda"] + p["triton"]
    if not ids:
        return ""
    steps = ["setup"] + (["cuda-build"] if p["cuda"] else []) + [f"catalog:{budget}:{','.join(ids)}"]
    return "OUT=$OUT bash benchmarks/gpu/evidence_session.sh " + " ".join(steps)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", required=True, help="a GPU name as the evidence's device has it (H100, H200)")
    ap.add_argument("--triton", default="3.7", help="major.minor (default 3.7, what the package installs)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    p = pending(a.gpu, a.triton)
    if a.json:
        print(json.dumps(dict(p, command=command(p)), indent=1))
        return 0
    print(f"pending on {a.gpu}, Triton {a.triton}: {len(p['cuda'])} CUDA pair(s), {len(p['triton'])} Triton pair(s); "
          f"{len(p['template_only'])} template-only example(s) have nothing to run")
    for k in ("cuda", "triton", "template_only"):
        if p[k]:
            print(f"  {k}: {', '.join(p[k])}")
    cmd = command(p)
    print(f"\ndevice command (one run of at most 10 minutes; split the list over runs if it is long):\n  {cmd}"
          if cmd else "\nnothing to run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
