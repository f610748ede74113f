"""A kernel's backend from the modules that import it (skel/kernels/importers.py): a
file every importer imports under `if _is_hip:` is ROCm code, and CUDA-only techniques
are not suggested for it — by `skel suggest` and in what the miner stores."""

from __future__ import annotations

import re

import pytest

from conftest import write
from skel.kernels.importers import ImportGraph, flag_backend, import_sites, package_of

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def fused_add_rmsnorm_decode_kernel(x_ptr, r_ptr, w_ptr, y_ptr, eps, D: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, D)
    x = tl.load(x_ptr + row * D + cols).to(tl.float32) + tl.load(r_ptr + row * D + cols).to(tl.float32)
    tl.store(r_ptr + row * D + cols, x)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, 0) / D + eps)
    tl.store(y_ptr + row * D + cols, x * rstd * tl.load(w_ptr + cols).to(tl.float32))
'''

HIP_ONLY = '''
from pkg.utils import is_hip

_is_hip = is_hip()

if _is_hip:
    from pkg.ops.norm import fused_add_rmsnorm_decode_kernel
'''

PLAIN = '''
from pkg.ops.norm import fused_add_rmsnorm_decode_kernel
'''


@pytest.mark.parametrize("test,backend", [
    ("_is_hip", "rocm"),
    ("is_hip()", "rocm"),
    ("current_platform.is_rocm()", "rocm"),
    ("_is_hip and use_fused", "rocm"),
    ("(_use_aiter)", "rocm"),
    ("current_platform.is_xpu()", "xpu"),
    ("_is_npu", "npu"),
    # says nothing certain about the platform
    ("not _is_hip", ""),
    ("_is_hip or _is_cuda", ""),
    ("is_hip_and_something_else(x)", ""),
    ("use_fused", ""),
])
def test_platform_flags(test, backend):
    assert flag_backend(test) == backend


def test_import_sites_read_the_branch_they_sit_in():
    text = '''import os
from .ops import norm
if _is_hip:  # the AMD path
    from .ops.fused import a
elif current_platform.is_xpu():
    import pkg.ops.xpu_fused as f
else:
    from .ops.cuda import b


def dispatch():
    if not is_hip():  # CUDA
        from pkg.ops.cuda import c
    else:
        from pkg.ops.hip import (
            d,  # the HIP path
            e,
        )
    with lock:
        if _is_hip and fast:
            from pkg.ops.hip_fast import g
'''
    got = {(s.module, s.names): s.guard for s in import_sites(text, "pkg/layers/attn.py")}
    assert got == {
        ("os", ()): "",
        ("pkg.layers.ops", ("norm",)): "",
        ("pkg.layers.ops.fused", ("a",)): "rocm",
        ("pkg.ops.xpu_fused", ()): "xpu",
        ("pkg.layers.ops.cuda", ("b",)): "",
        ("pkg.ops.cuda", ("c",)): "",
        ("pkg.ops.hip", ("d", "e")): "rocm",  # the else of `if not is_hip()`
        ("pkg.ops.hip_fast", ("g",)): "rocm",
    }


def graph_of(files: dict[str, str]) -> ImportGraph:
    graph = ImportGraph(lambda stem: ())
    for rel, text in files.items():
        graph.add(rel, text)
    return graph


def test_every_importer_must_agree():
    files = {"pkg/ops/norm.py": KERNEL, "pkg/layers/attn.py": HIP_ONLY}
    backend, why = graph_of(files).backend("pkg/ops/norm.py")
    assert backend == "rocm" and "attn.py:7 under `if _is_hip`" in why
    # one plain importer anywhere and the module is ordinary Triton
    files["pkg/layers/mlp.py"] = PLAIN
    assert graph_of(files).backend("pkg/ops/norm.py") == ("", "")
    # a test imports everything: it is not an importer
    del files["pkg/layers/mlp.py"]
    files["tests/test_norm.py"] = PLAIN
    assert graph_of(files).backend("pkg/ops/norm.py")[0] == "rocm"
    # nobody imports it: nothing is known
    assert graph_of({"pkg/ops/norm.py": KERNEL}).backend("pkg/ops/norm.py") == ("", "")


def test_rocm_files_and_their_imports_count_as_rocm():
    files = {
        "pkg/ops/norm.py": KERNEL,
        # a file AMD's own path names: what it imports is imported for ROCm
        "pkg/layers/compress_hip.py": "from pkg.ops.runtime import run\n",
        "pkg/ops/runtime.py": "from .norm import fused_add_rmsnorm_decode_kernel\n",
    }
    backend, why = graph_of(files).backend("pkg/ops/norm.py")
    assert backend == "rocm" and "runtime.py:1, itself imported only for rocm" in why
    files["pkg/layers/cuda_path.py"] = "import pkg.ops.runtime\n"
    assert graph_of(files).backend("pkg/ops/norm.py") == ("", "")


def test_a_package_reexport_stands_for_the_importers_of_its_names():
    files = {
        "pkg/ops/norm.py": KERNEL,
        "pkg/ops/__init__.py": "from .norm import fused_add_rmsnorm_decode_kernel\n",
        "pkg/layers/attn.py": "if _is_hip:\n    from pkg.ops import fused_add_rmsnorm_decode_kernel\n",
    }
    assert graph_of(files).backend("pkg/ops/norm.py")[0] == "rocm"
    files["pkg/layers/mlp.py"] = "from pkg.ops import fused_add_rmsnorm_decode_kernel\n"
    assert graph_of(files).backend("pkg/ops/norm.py") == ("", "")
    # `from .norm import *` hides who uses what: nothing is concluded
    files = dict(files, **{"pkg/ops/__init__.py": "from .norm import *\n"})
    del files["pkg/layers/mlp.py"]
    assert graph_of(files).backend("pkg/ops/norm.py") == ("", "")


def test_absolute_imports_match_whatever_folder_was_mined():
    # mined from inside the package folder: paths lack `pkg/`, imports have it
    assert graph_of({"ops/norm.py": KERNEL, "layers/attn.py": HIP_ONLY}).backend("ops/norm.py")[0] == "rocm"
    # a checkout with the package under python/: paths have more than imports
    files = {"python/pkg/ops/norm.py": KERNEL, "python/pkg/layers/attn.py": HIP_ONLY}
    assert graph_of(files).backend("python/pkg/ops/norm.py")[0] == "rocm"


def test_package_of_climbs_over_namespace_folders(tmp_path):
    write(tmp_path / "proj" / "pyproject.toml", "")
    write(tmp_path / "proj" / "pkg" / "__init__.py", "")
    write(tmp_path / "proj" / "pkg" / "srt" / "ops" / "norm.py", KERNEL)  # srt/ and ops/ have no __init__
    root, rel = package_of(tmp_path / "proj" / "pkg" / "srt" / "ops" / "norm.py")
    assert root == (tmp_path / "proj").resolve() and rel == "pkg/srt/ops/norm.py"
    write(tmp_path / "lone" / "k.py", KERNEL)
    assert package_of(tmp_path / "lone" / "k.py") is None


def hip_package(root) -> None:
    write(root / "pkg" / "__init__.py", "")
    write(root / "pkg" / "ops" / "norm.py", KERNEL)
    write(root / "pkg" / "layers" / "attn.py", HIP_ONLY)


def test_suggest_reads_the_platform_from_the_importers(tmp_path):
    # (no platform word in the test name: pytest puts it in tmp_path, and a path part
    # `hip` alone would mark the file ROCm by its path)
    from skel.retriever.suggest import suggest

    hip_package(tmp_path)
    (res,) = suggest(tmp_path / "pkg" / "ops" / "norm.py", None, k=50)
    ids = [s.id for s in res.suggestions]
    assert "launch-pdl" not in ids, "PDL is NVIDIA-only: never for a module only ROCm imports"
    assert any(re.search(r"rocm backend \(every importer imports it for rocm only: attn.py:\d+ under `if _is_hip`\)", n)
               for n in res.notes), res.notes
    # the same file once a CUDA path imports it too: PDL is back, and so is the CUDA target
    write(tmp_path / "pkg" / "layers" / "mlp.py", PLAIN)
    (res,) = suggest(tmp_path / "pkg" / "ops" / "norm.py", None, k=50)
    assert "launch-pdl" in [s.id for s in res.suggestions]
    assert not any("rocm" in n for n in res.notes)


def test_the_miner_stores_the_importers_backend_and_remines_when_it_changes(tmp_path, kb, hash_embedder):
    from skel.miner.mine import mine
    from skel.miner.sources import DirectorySource

    hip_package(tmp_path / "repo")
    mine(DirectorySource(tmp_path / "repo"), kb, embedder=hash_embedder, jobs=1)
    (rec,) = kb.kernels(where={"source": "repo"})
    assert "launch-pdl" not in rec.applicable
    write(tmp_path / "repo" / "pkg" / "layers" / "mlp.py", PLAIN)
    report = mine(DirectorySource(tmp_path / "repo"), kb, embedder=hash_embedder, jobs=1)
    assert report.kernels_written == 1, "the kernel file itself did not change, its importers did"
    (rec,) = kb.kernels(where={"source": "repo"})
    assert "launch-pdl" in rec.applicable


def test_a_common_module_name_is_narrowed_then_given_up(tmp_path, monkeypatch):
    """`skel suggest` reads only the files that mention a module's name; for a common name
    it keeps those that could import it, and past the limit concludes nothing (never a
    guess from a partial read)."""
    import skel.kernels.importers as imp

    monkeypatch.setattr(imp, "MAX_MENTIONS", 3)
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "ops" / "runtime.py", KERNEL)
    write(tmp_path / "pkg" / "layers" / "attn.py",
          "if _is_hip:\n    from pkg.ops.runtime import fused_add_rmsnorm_decode_kernel\n")
    for i in range(5):  # the word, not an import of it
        write(tmp_path / "pkg" / "misc" / f"m{i}.py", "# the runtime decides\nRUNTIME = 1\n")
    assert imp.backend_by_importers(tmp_path / "pkg" / "ops" / "runtime.py")[0] == "rocm"
    for i in range(5):  # now more files than the limit could import it
        write(tmp_path / "pkg" / "misc" / f"m{i}.py", "from pkg.ops import runtime_stats\n")
    assert imp.backend_by_importers(tmp_path / "pkg" / "ops" / "runtime.py") == ("", "")


# --- the functions that launch a kernel, and where they are called --------------------

LAUNCHED = KERNEL + '''

def fused_add_rmsnorm(x, r, w, eps):
    y = torch.empty_like(x)
    fused_add_rmsnorm_decode_kernel[(x.shape[0],)](x, r, w, y, eps, D=x.shape[1])
    return y


if __name__ == "__main__":
    fused_add_rmsnorm(*make_inputs())  # a self-test is no caller
'''

CALLED_FOR_HIP = '''
from pkg.ops.norm import fused_add_rmsnorm
from pkg.utils import is_hip

_is_hip = is_hip()


class Norm:
    def forward(self, x, r):
        if _is_hip:
            return fused_add_rmsnorm(x, r, self.w, self.eps)
        return torch.ops.sgl_kernel.fused_add_rmsnorm(x, r, self.w, self.eps)
'''


def kernel_facts(files: dict[str, str], rel: str = "pkg/ops/norm.py"):
    from skel.kernels.importers import settle_backends
    from skel.kernels.triton import extract_file

    kernels = extract_file(files[rel], rel)
    settle_backends(graph_of(files), rel, kernels)
    (k,) = kernels
    return k


def test_a_module_imported_everywhere_but_launched_only_for_rocm_is_rocm():
    files = {"pkg/ops/norm.py": LAUNCHED, "pkg/layers/norm.py": CALLED_FOR_HIP}
    k = kernel_facts(files)
    assert k.backend_hint == "rocm"
    assert k.backend_reason == ("its launcher `fused_add_rmsnorm` is called for rocm only: "
                                "norm.py:11 under `if _is_hip`")
    # one call on the common path and nothing is concluded
    files["pkg/layers/mlp.py"] = "from pkg.ops.norm import fused_add_rmsnorm\n\ny = fused_add_rmsnorm(x, r, w, 1e-6)\n"
    assert kernel_facts(files).backend_hint == ""
    # a function handed to a dispatch table is a use as much as a call
    files["pkg/layers/mlp.py"] = "from pkg.ops.norm import fused_add_rmsnorm\n\nOPS = {'norm': fused_add_rmsnorm}\n"
    assert kernel_facts(files).backend_hint == ""
    # imported under another name, its calls cannot be found: nothing is concluded
    files["pkg/layers/mlp.py"] = "from pkg.ops.norm import fused_add_rmsnorm as norm\n"
    assert kernel_facts(files).backend_hint == ""
    # names in docstrings, `__all__` strings and import lists are not uses; nobody calling it
    # concludes nothing
    files = {"pkg/ops/norm.py": LAUNCHED + '\n__all__ = ["fused_add_rmsnorm"]\n',
             "pkg/layers/doc.py": '"""See\n  fused_add_rmsnorm(x) for the fused path.\n"""\n'
                                  'from pkg.ops.norm import (\n    fused_add_rmsnorm,\n)\n'}
    assert kernel_facts(files).backend_hint == ""


def test_a_launcher_called_from_a_platform_named_function_or_file_is_that_platforms():
    # a function whose name says it (`forward_prepare_hip`) counts as much as an `if _is_hip:`
    caller = CALLED_FOR_HIP.replace("    def forward(self, x, r):\n        if _is_hip:\n            return",
                                    "    def forward_prepare_hip(self, x, r):\n        return")
    k = kernel_facts({"pkg/ops/norm.py": LAUNCHED, "pkg/layers/norm.py": caller})
    assert k.backend_hint == "rocm" and "in `forward_prepare_hip`" in k.backend_reason
    # its signature over several lines (`) -> None:` closing it, less indented than the body)
    # still encloses the call (sglang's DSv4 `_forward_unified_hip`)
    long_sig = caller.replace("    def forward_prepare_hip(self, x, r):\n",
                              "    def forward_prepare_hip(\n        self,\n        x,\n        r,\n    ) -> None:\n"
                              "        \"\"\"HIP path.\"\"\"\n")
    assert long_sig != caller
    k = kernel_facts({"pkg/ops/norm.py": LAUNCHED, "pkg/layers/norm.py": long_sig})
    assert k.backend_hint == "rocm" and "in `forward_prepare_hip`" in k.backend_reason
    # a ROCm file calling the launcher counts as a ROCm call site
    files = {"pkg/ops/norm.py": LAUNCHED,
             "pkg/layers/compress_hip.py": "from pkg.ops.norm import fused_add_rmsnorm\n\n"
                                           "def run(x, r, w):\n    return fused_add_rmsnorm(x, r, w, 1e-6)\n"}
    assert kernel_facts(files).backend_hint == "rocm"
    # a dispatcher's own callers are not followed (a scan of the package per name): a launcher
    # called from an unguarded function of a plain file concludes nothing
    dispatcher = LAUNCHED + "\n\ndef norm_dispatch(x, r, w, eps):\n    return fused_add_rmsnorm(x, r, w, eps)\n"
    caller = CALLED_FOR_HIP.replace("fused_add_rmsnorm(x, r, self.w", "norm_dispatch(x, r, self.w").replace(
        "from pkg.ops.norm import fused_add_rmsnorm", "from pkg.ops.norm import norm_dispatch")
    assert kernel_facts({"pkg/ops/norm.py": dispatcher, "pkg/layers/norm.py": caller}).backend_hint == ""


def test_suggest_reads_the_platform_from_the_launchers_callers(tmp_path):
    from skel.retriever.suggest import suggest

    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "ops" / "norm.py", "import torch\n" + LAUNCHED)
    write(tmp_path / "pkg" / "layers" / "norm.py", CALLED_FOR_HIP)
    (res,) = suggest(tmp_path / "pkg" / "ops" / "norm.py", None, k=50)
    assert "launch-pdl" not in [s.id for s in res.suggestions]
    assert any("its launcher `fused_add_rmsnorm` is called for rocm only" in n for n in res.notes), res.notes
