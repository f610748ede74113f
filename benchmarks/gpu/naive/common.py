"""Shared helpers of check_cpu.py and run_gpu.py: load a kernel file by path, tolerances, the ranked list."""
import importlib.util
import json
import pathlib

import torch

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
NAMES = ["gemm_fp16", "gemm_fp32", "softmax", "cross_entropy", "rmsnorm", "layernorm", "silu_mul", "row_sum",
         "decode_attention", "qnorm"]

# |out - ref| <= atol + rtol * |ref|, by output dtype; GEMMs accumulate K=4096 products, so their atol is wider
TOL = {torch.float16: (2e-2, 2e-2), torch.bfloat16: (4e-2, 4e-2), torch.float32: (1e-4, 1e-4)}
TOL_BY_KERNEL = {"gemm_fp16": (0.125, 1e-2),  # fp16 output of values ~|64|: one fp16 ulp there is 0.03
                 "gemm_fp32": (0.25, 1e-2),   # tl.dot's default fp32 precision is tf32 on the GPU
                 "row_sum": (1e-3, 1e-4)}     # an fp32 sum of 8,192 values of |x| ~ 1


def load(path, tag=None):
    path = pathlib.Path(path)
    if not path.is_absolute():
        path = ROOT / path
    spec = importlib.util.spec_from_file_location(tag or path.stem.replace("-", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ranked():
    return json.loads((HERE / "ranked.json").read_text())


def compare(name, out, ref):
    atol, rtol = TOL_BY_KERNEL.get(name, TOL[ref.dtype])
    out, ref = out.double(), ref.double()
    err = (out - ref).abs()
    ok = bool(torch.isfinite(out).all()) and bool((err <= atol + rtol * ref.abs()).all())
    return ok, float(err.max()), (atol, rtol)
