"""Check every naive kernel and every candidate on the CPU (TRITON_INTERPRET=1) at small sizes against reference.

    TRITON_INTERPRET=1 .venv/bin/python benchmarks/gpu/naive/check_cpu.py
"""
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from common import NAMES, compare, load, ranked  # noqa: E402


def main():
    torch.manual_seed(0)
    rk = ranked()
    bad = 0
    for name in NAMES:
        base = load(f"benchmarks/gpu/naive/{name}.py")
        files = [("original", f"benchmarks/gpu/naive/{name}.py")]
        files += [(sid, c["file"]) for sid, c in rk[name]["candidates"].items()]
        for tag, f in files:
            mod = base if tag == "original" else load(f, f"{name}__{tag}")
            for trial in range(2):
                inputs = base.make_inputs("cpu", base.CPU_SIZES)
                ref = base.reference(*inputs)
                out = mod.launch(*inputs)
                ok, err, tol = compare(name, out, ref)
                bad += not ok
                verdict = "ok " if ok else "BAD"
                print(f"{name:17s} {tag:24s} trial {trial}: {verdict} max err {err:.2e} (atol, rtol) {tol}")
    print("all correct" if not bad else f"{bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
