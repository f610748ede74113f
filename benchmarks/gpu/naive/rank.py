"""Rank each naive kernel with `skel suggest` (as a user would, at its timed sizes), then produce a candidate
for each shown suggestion with `skel apply` where a codemod exists. Writes suggest_<name>.json and ranked.json.

    python benchmarks/gpu/naive/rank.py        (from the repository root)
"""
import importlib.util
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SKEL = str(ROOT / ".venv/bin/skel")
NAMES = ["gemm_fp16", "gemm_fp32", "softmax", "cross_entropy", "rmsnorm", "layernorm", "silu_mul", "row_sum",
         "decode_attention", "qnorm"]


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def suggest_cmd(name, mod):
    cmd = [SKEL, "suggest", f"benchmarks/gpu/naive/{name}.py", "--kernel", mod.KERNEL, "--arch", "sm90",
           "--backend", "cuda", "--triton", "3.6.0"]
    for s in mod.SHAPES:
        cmd += ["--shape", s]
    return cmd + ["--json"]


def main():
    out = {}
    (HERE / "suggest").mkdir(exist_ok=True)
    for name in NAMES:
        mod = load(HERE / f"{name}.py")
        cmd = suggest_cmd(name, mod)
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        (HERE / "suggest" / f"{name}.json").write_text(r.stdout)
        data = json.loads(r.stdout)["kernels"][0]
        shown = [{"rank": i + 1, "id": s["id"], "kind": s.get("kind"), "probability": s.get("probability"),
                  "score": s.get("score")} for i, s in enumerate(data["suggestions"])]
        entry = {"file": f"benchmarks/gpu/naive/{name}.py", "kernel": mod.KERNEL, "shapes": mod.SHAPES,
                 "command": " ".join(c if not c.startswith("/") else ".venv/bin/skel" for c in cmd),
                 "exit_code": r.returncode, "threshold": data.get("threshold"), "shown": shown,
                 "conditional": data.get("conditional", []),
                 "held_back": data.get("held_back", []), "not_paying": data.get("not_paying", []),
                 "ruled_out_by_evidence": data.get("ruled_out_by_evidence", []), "candidates": {}}
        for s in shown:
            cand = HERE / "candidates" / f"{name}__{s['id']}.py"
            ar = subprocess.run([SKEL, "apply", s["id"], f"benchmarks/gpu/naive/{name}.py", "--kernel", mod.KERNEL,
                                 "-o", str(cand.relative_to(ROOT))], cwd=ROOT, capture_output=True, text=True)
            how = {0: "skel apply", 10: "by hand (no codemod)", 9: "not applicable (exit 9)"}.get(
                ar.returncode, f"skel apply exit {ar.returncode}")
            if ar.returncode == 10 and cand.exists() and "applied by hand" in cand.read_text():
                how = "by hand from the template (no codemod)"
            entry["candidates"][s["id"]] = {"file": str(cand.relative_to(ROOT)), "how": how,
                                            "apply_exit": ar.returncode, "apply_stderr": ar.stderr.strip()[-400:]}
        out[name] = entry
        print(name, "exit", r.returncode, "shown:", [s["id"] for s in shown],
              "conditional:", [c.get("id") for c in entry["conditional"]],
              "held_back:", [(h["id"], h.get("probability")) for h in entry["held_back"]][:6], file=sys.stderr)
        for sid, c in entry["candidates"].items():
            print("   ", sid, c["how"], c["apply_stderr"][:200], file=sys.stderr)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--short", "skel"], cwd=ROOT, capture_output=True, text=True).stdout
    meta = {"skel_commit": head, "skel_dirty_files": dirty.split("\n")[:-1] if dirty else [],
            "note": "ranked by the skel of this working tree (others were editing skel/ at the time)"}
    (HERE / "ranked.json").write_text(json.dumps({"_meta": meta, **out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
