"""CUDA GEMM mainloops: tensor-core MMAs, shared-memory tile loads, K loops, FP8 operands.

Read from the facts the C++/CUDA extractor fills (``language == "cuda"``): call names with
their namespaces (``cute::SM90_TMA_LOAD_2D::copy``, ``WGMMA::wgmma``), one ``ptx:<mnemonic>``
call per instruction of inline asm (``ptx:wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3``),
identifiers and type names, loops with their ``#pragma unroll``. Real kernels (DeepGEMM,
FlashMLA, sgl-kernel) call these instructions through helpers that often live in another
header, so each family is recognised by its PTX mnemonic *and* by the names of the usual
wrappers (CUTLASS/CuTe atoms, DeepGEMM's ``ptx::`` and ``tma::`` helpers)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts, Loop

#: A tensor-core MMA of each family, by PTX mnemonic or by wrapper name (last ``::`` part,
#: or any part for CuTe atoms such as ``cute::SM90_64x128x32_F32E4M3E4M3_SS_TN``).
_WGMMA_PTX = re.compile(r"^ptx:wgmma\.mma_async")
_WGMMA_NAME = re.compile(r"(?i)^wgmma$|^wgmma_|_wgmma$|^(SM90_|MMA_)64x\d+x\d+_")
_MMA_SYNC_PTX = re.compile(r"^ptx:mma\.(sync|sp)")
_MMA_SYNC_NAME = re.compile(r"(?i)^mma_sync$|^hmma\w*$|^((bf16|fp16|f16|half|fp8|e4m3|int8|s8)_)?mma(_(?!async)\w*)?$|"
                            r"^SM(75|80|89)_\d+x\d+x\d+_")
_UMMA_PTX = re.compile(r"^ptx:tcgen05\.mma")
_UMMA_NAME = re.compile(r"^SM100_MMA_\w+|^UMMA$|^umma$|^umma_(?!arrive)\w+|^tcgen05_mma\w*$")
_MMA_SYNC_ATOM = re.compile(r"^SM(75|80|89)_\d+x\d+x\d+_")
#: the issue/commit/wait protocol around WGMMA (``warpgroup_arrive`` is `wgmma.fence`) and
#: around UMMA (``umma_arrive`` is `tcgen05.commit`)
_WGMMA_SYNC = re.compile(r"(?i)^(warpgroup_(arrive|commit_batch|wait|fence_operand)|wgmma_(fence|commit|wait)\w*|"
                        r"umma_arrive\w*|tcgen05_(commit|after_thread_sync|before_thread_sync)\w*)$")
_WGMMA_SYNC_PTX = re.compile(r"^ptx:(wgmma\.(fence|commit_group|wait_group)|tcgen05\.commit)")


def is_ptx(name: str) -> bool:
    """A call that is a PTX instruction of inline asm (`ptx:mbarrier.try_wait...`), not a call
    into a C++ namespace that happens to be called `ptx` (DeepGEMM's `ptx::warpgroup_arrive`)."""
    return name.startswith("ptx:") and not name.startswith("ptx::")


def _parts(name: str) -> list[str]:
    return [p for p in name.split("::") if p]


def _mma_kind(name: str) -> str:
    """'wgmma', 'mma.sync' (incl. WMMA), 'umma' (tcgen05), 'cute' (`cute::gemm` on a TiledMMA
    whose atom is not in sight) or '' for a call name."""
    if _WGMMA_PTX.match(name):
        return "wgmma"
    if _MMA_SYNC_PTX.match(name):
        return "mma.sync"
    if _UMMA_PTX.match(name):
        return "umma"
    if is_ptx(name):
        return ""
    parts = _parts(name.lstrip("."))
    if not parts:
        return ""
    last = parts[-1]
    if parts == ["cute", "gemm"]:
        return "cute"
    if _WGMMA_SYNC.match(last):
        return ""  # the fence / commit / wait around the MMAs, not an MMA
    if any(_WGMMA_NAME.search(p) for p in parts) and last not in ("arrive", "wait"):
        return "wgmma"
    if any(_UMMA_NAME.search(p) for p in parts):
        return "umma"
    if _MMA_SYNC_NAME.search(last) or any(_MMA_SYNC_ATOM.match(p) for p in parts[:-1]):
        return "mma.sync"
    return ""


def _is_atom(name: str) -> bool:
    return any((_WGMMA_NAME.search(p) and "64x" in p) or p.startswith("SM100_MMA_") or _MMA_SYNC_ATOM.match(p)
               for p in _parts(name))


def _atom_kinds(k: KernelFacts) -> set[str]:
    """MMA families whose CuTe/CUTLASS atoms the kernel names (`SM90_64x128x16_F32BF16BF16_SS`,
    `ptx::SM100_MMA_F16BF16_SS`, `SM80_16x8x16_F32BF16BF16F32_TN`)."""
    out = set()
    for n in k.names:
        parts = _parts(n)
        if any(_WGMMA_NAME.search(p) and "64x" in p for p in parts):
            out.add("wgmma")
        if any(p.startswith("SM100_MMA_") for p in parts):
            out.add("umma")
        if any(_MMA_SYNC_ATOM.match(p) for p in parts):
            out.add("mma.sync")
    return out


def _call_kind(k: KernelFacts, c: Call) -> str:
    """``_mma_kind`` of a call, with `Atom::fma(...)` through an alias (`using mma_t = ...;
    mma_t::fma(...)`) resolved by the one atom family the kernel names."""
    kind = _mma_kind(c.name)
    if kind or is_ptx(c.name) or _parts(c.name)[-1:] != ["fma"]:
        return kind
    atoms = _atom_kinds(k)
    return atoms.pop() if len(atoms) == 1 else ""


def mma_calls(k: KernelFacts, kinds: tuple[str, ...] = ("wgmma", "mma.sync", "umma")) -> list:
    """The kernel's tensor-core MMA calls of the given families."""
    return [c for c in k.calls if _call_kind(k, c) in kinds]


def wgmma_names(k: KernelFacts) -> list[int]:
    """Lines of identifiers or type names that are WGMMA or UMMA atoms (``SM90_64x128x32_..._SS``,
    ``MMA_64x128x32_F32E4M3E4M3_SS_TN``, ``SM100_MMA_F16BF16_SS``) — how CuTe code selects one."""
    return [line for n, line in k.names.items()
            if any((_WGMMA_NAME.search(p) and "64x" in p) or p.startswith("SM100_MMA_") for p in _parts(n))]


def wgmma_protocol(k: KernelFacts) -> list[int]:
    """Lines of the WGMMA issue protocol: fence / commit_group / wait_group, as PTX or
    through ``warpgroup_arrive``/``warpgroup_commit_batch``/``warpgroup_wait``."""
    return [c.line for c in k.calls
            if _WGMMA_SYNC_PTX.match(c.name) or (not is_ptx(c.name)
                                                   and _WGMMA_SYNC.match(_parts(c.name)[-1] if _parts(c.name) else ""))]


# --- loops ------------------------------------------------------------------------------

_CONST_NAME = re.compile(r"^(k[A-Z]\w*|[A-Z][A-Z0-9_]*)$")
_IDENT = re.compile(r"[A-Za-z_]\w*(?:::\w+)*")
_CPP_WORDS = {"sizeof", "static_cast", "int", "uint32_t", "unsigned", "size_t", "true", "false", "auto", "const"}


def _constant_trip(k: KernelFacts, lp: Loop) -> bool:
    """The loop's bound is a compile-time constant: literals, template parameters,
    `kNumStages`/`BLOCK_K`-style constants and qualified members (``WGMMA::K``)."""
    if lp.kind not in ("for",) or len(lp.args) < 2:
        return False
    cond = lp.args[1]
    if not cond.strip():
        return False
    constexprs = {p.name for p in k.params if p.constexpr}
    runtime = {p.name for p in k.params if not p.constexpr}  # `K`, `N`: runtime whatever their case
    for ident in _IDENT.findall(cond):
        if ident in runtime:
            return False
        if "::" in ident or ident in constexprs or ident in _CPP_WORDS or _CONST_NAME.match(ident):
            continue
        if ident in (lp.targets or []):
            continue
        if any(t == ident for t in _loop_vars(lp)):
            continue
        return False
    return True


def _loop_vars(lp: Loop) -> list[str]:
    init = lp.args[0] if lp.args else ""
    m = re.search(r"(\w+)\s*=", init)
    return [m.group(1)] if m else []


def call_sites(k: KernelFacts, line: int, _seen: frozenset = frozenset()) -> list[int]:
    """Where a statement at ``line`` runs in the kernel's own body. A line inside a device
    helper folded into the kernel (``k.folded``) runs where the kernel calls that helper:
    its loops are the loops around those calls, not the helper's."""
    helper = k.helper_at(line)
    if not helper or helper in _seen:
        return [line]
    out: list[int] = []
    for c in k.calls:
        if c.name.split("::")[-1] == helper and k.helper_at(c.line) != helper:
            out += call_sites(k, c.line, _seen | {helper})
    return out or [line]


def enclosing_loops(k: KernelFacts, line: int) -> list:
    """The kernel's loops around ``line`` (a helper's line: around the helper's call sites)."""
    sites = call_sites(k, line)
    return [lp for lp in k.loops if any(lp.line <= s <= lp.end_line for s in sites)]


def k_loops(k: KernelFacts, line: int) -> list:
    """The loops around ``line`` that walk K: not a fully unrolled constant-trip loop
    (``#pragma unroll`` over ``BLOCK_K / WGMMA::K``), i.e. a runtime bound, a `while`,
    or a loop the authors left rolled."""
    out = []
    for lp in enclosing_loops(k, line):
        unrolled = lp.kwargs.get("pragma", "").strip() == "unroll"
        if lp.kind in ("while", "do") or not _constant_trip(k, lp) or not unrolled:
            out.append(lp)
    return out


def mma_in_k_loop(k: KernelFacts, kinds: tuple[str, ...] = ("wgmma", "mma.sync", "umma")) -> list[int]:
    """Lines of MMA calls of the given families that sit inside a K loop."""
    return [c.line for c in mma_calls(k, kinds) if k_loops(k, c.line)]


# --- shared-memory tile loads -----------------------------------------------------------

#: a bulk copy *into* shared memory (`cp.async.bulk.tensor.2d.shared::cluster.global...`,
#: `cp.async.bulk.shared::cluster.global...`), not a TMA store (`...tensor.2d.global.shared::cta`)
_TMA_PTX = re.compile(r"^ptx:cp\.async\.bulk\.(tensor\.\d+d\.)?shared")
_TMA_NAME = re.compile(r"(?i)^SM\d+_TMA_(2SM_)?LOAD\w*$|^tma_load\w*$|^tma_copy\w*$|^cp_async_bulk_tensor\w*$")
_CP_ASYNC_PTX = re.compile(r"^ptx:cp\.async\.(ca|cg)\b")
_CP_ASYNC_NAME = re.compile(r"(?i)^(__pipeline_memcpy_async|memcpy_async|cp_async(?!_(commit|wait|fence))\w*|"
                            r"SM80_CP_ASYNC\w*|ldgsts\w*)$")
_SHARED_DECL = re.compile(r"__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?[\w:<>, ]*?\b(\w+)\s*\[")
_WORD = re.compile(r"[A-Za-z_]\w*")
_SMEM_NAME = re.compile(r"(?i)^(smem\w*|\w*_smem\w*|s_\w+|sh_\w+|\w*shared\w*|[A-Z]s)$")


def tma_loads(k: KernelFacts) -> list[int]:
    """Lines of TMA loads: `cp.async.bulk.tensor` / `cp.async.bulk` PTX, CuTe's
    `SM90_TMA_LOAD*` atoms, `tma_load*`/`tma::copy` helpers."""
    out = []
    for c in k.calls:
        if _TMA_PTX.match(c.name):
            out.append(c.line)
            continue
        parts = _parts(c.name.lstrip("."))
        if any(_TMA_NAME.match(p) for p in parts) or parts[-2:] == ["tma", "copy"]:
            out.append(c.line)
    return out


def cp_async_loads(k: KernelFacts) -> list[int]:
    """Lines of Ampere-style asynchronous copies (`cp.async.ca/cg`, `__pipeline_memcpy_async`,
    `cuda::memcpy_async`, `cp_async*` helpers)."""
    out = []
    for c in k.calls:
        parts = _parts(c.name.lstrip("."))
        if _CP_ASYNC_PTX.match(c.name) or (parts and _CP_ASYNC_NAME.match(parts[-1])):
            out.append(c.line)
    return out


def shared_arrays(k: KernelFacts) -> set[str]:
    """Names of the kernel's `__shared__` arrays (static or `extern`)."""
    return set(_SHARED_DECL.findall(k.source or ""))


def _plain_smem_stores(k: KernelFacts) -> list[int]:
    """Lines of ordinary stores into shared memory (`As[ty][tx] = A[...]`, `smem_a[i] = ...`)
    inside a loop: a tile staged by the threads themselves."""
    arrays = shared_arrays(k)
    out = []
    for a in k.assigns:
        if a.op != "=" or not a.loop_depth:
            continue
        for t in a.targets:
            if "[" not in t and not t.lstrip().startswith("*"):
                continue  # a plain variable, not a store through memory
            # `As[ty][tx] = ...`, `*reinterpret_cast<int4*>(&smem_a[i]) = ...`, `*(uint4*)(s_b + i) = ...`
            if any(n in arrays or _SMEM_NAME.match(n) for n in _WORD.findall(t)):
                out.append(a.line)
                break
    return out


def smem_tile_loads_in_loop(k: KernelFacts) -> list[int]:
    """Lines of tile loads into shared memory inside a loop: TMA, cp.async or plain stores."""
    lines = [ln for ln in tma_loads(k) + cp_async_loads(k) if enclosing_loops(k, ln)]
    return lines + _plain_smem_stores(k)


# --- FP8 operands -----------------------------------------------------------------------

#: FP8 data; `ue4m3` is the *scale* type of NVFP4 block-scaled MMAs, not an FP8 operand
_FP8 = re.compile(r"(?i)fp8|(?<!u)e4m3|(?<!u)e5m2")
#: block-scaled MMAs (`kind::mxf8f6f4`, `.block_scale`) apply their scales in hardware
_BLOCK_SCALED = re.compile(r"block_scale|kind::mx")
_MMA_WORD = re.compile(r"(?i)mma")


def fp8_operands(k: KernelFacts) -> list[int]:
    """Lines showing an FP8 MMA: an FP8 mnemonic or MMA helper (`...f32.e4m3.e4m3`,
    `wgmma_e4m3_m64n16k32`), or an MMA atom/selector named for FP8 (`F32E4M3E4M3`,
    `FP8MMASelector`). FP8 types alone (a `sizeof(__nv_fp8_e4m3)` in a BF16 kernel's
    padding arithmetic, a quantisation kernel) are not enough."""
    lines = [c.line for c in k.calls if _mma_kind(c.name) and _FP8.search(c.name) and not _BLOCK_SCALED.search(c.name)]
    lines += [line for n, line in k.names.items() if _FP8.search(n) and (_MMA_WORD.search(n) or _is_atom(n))]
    return lines
