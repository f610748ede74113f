"""Load `mma.sync` operand fragments from shared memory with `ldmatrix.x4`, not four 32-bit loads per thread.

## What it does
A tensor-core mainloop written with warp-level `mma.sync.aligned.m16n8k16` (fp16/bf16, or int8/fp8
`m16n8k32`) stages its tiles in shared memory and fills each thread's fragment registers with one
32-bit load per register, at the address the fragment layout gives that lane (row `lane / 4`,
column pair `2 * (lane % 4)`, plus 8 rows or 8 columns for the other registers):

    a[0] = *reinterpret_cast<const uint32_t*>(&sA[r][kk + 2 * t]);           // r = row0 + lane / 4
    a[1] = *reinterpret_cast<const uint32_t*>(&sA[r + 8][kk + 2 * t]);       // t = lane % 4
    a[2] = *reinterpret_cast<const uint32_t*>(&sA[r][kk + 2 * t + 8]);
    a[3] = *reinterpret_cast<const uint32_t*>(&sA[r + 8][kk + 2 * t + 8]);

The rewrite loads the four registers with one warp-wide `ldmatrix`: each lane passes the
address of one 16-byte row of one of four 8x8 matrices (lane `l` → row `l % 8` of matrix
`l / 8`), and the hardware hands every lane its fragment of all four:

    const uint32_t addr = __cvta_generic_to_shared(&sA[row0 + lane % 16][kk + (lane / 16) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(addr));

For a K-contiguous B tile one `x4` covers two n8 tiles (`b[n][0..1]`, `b[n + 1][0..1]`); a tile
stored the other way round (`[k][n]`) uses `ldmatrix...trans`, which transposes the 16-bit
elements on the way.

## Why it is faster
The shared-memory pipe (MIO) issues one instruction per warp per cycle or less, and a 32-bit
`LDS` moves 128 bytes per warp; `LDSM.x4` moves 512 bytes — the whole 16x16 fp16 tile — in one
instruction. An `m16n8k16` needs 4 A registers and 2 B registers per thread; with scalar loads
a warp computing a 64x64 tile issues 32 `LDS` per k16 step for 32 `HMMA`s, with `ldmatrix` 8.
The tensor cores run `mma.sync` fast enough that those loads, their address arithmetic (four
addresses per lane, against one) and their register dependencies decide whether the MMA pipe
stays fed: CUTLASS, FlashAttention-2, Marlin, flashinfer and ThunderKittens all load fragments
with `ldmatrix`. ThunderKittens' register-tile load did four `move::lds` 32-bit loads per
16x16 tile until its commit "all tests passing, matching fa2 on 4090" replaced them with
`ldsm4`/`ldsm4t`.

When it does not pay: fragments loaded once and reused across the whole loop (the Q tile of an
attention kernel, loaded before the KV loop) cost a fixed handful of loads; a kernel bound by its
global-memory stream (a decode GEMM at M ≤ 16 whose weights come from HBM) waits on HBM, not on
shared-memory issue. `ldmatrix` needs each 8-element row contiguous and 16-byte aligned in
shared memory, and the row addresses of a phase (8 rows) hit 8 different 16-byte bank groups
only with a padded or swizzled layout (`cuda-smem-padding-bank-conflicts`): an unpadded
row stride of 128 bytes makes it 8-way conflicted (64 bytes: 4-way). On sm_90 the larger step is
`wgmma`, which reads shared memory without any fragment load (`wgmma-async-mma`).

## Applies when
- a `__global__` kernel (its `__device__` helpers folded in) issues warp-level
  `mma.sync...m16n8k16` / `m16n8k32` with 16- or 8-bit operands (`.f16`, `.bf16`, `.s8`, `.u8`,
  `.e4m3`, `.e5m2`) as inline PTX;
- and reads 32-bit words from a `__shared__` tile one per thread — `*reinterpret_cast<const
  uint32_t*>(&sA[r][c])`, `*(uint32_t*)&sB[..]`, the same with `half2` / `__nv_bfloat162`, or
  an inline `ld.shared.b32` / `ld.shared.u32` helper;
- **it pays** (a suggestion) when such a load sits in a loop that also issues the MMA (the
  mainloop reloads its fragments every trip); it does not pay when all of them are outside the
  MMA's loop (loaded once, reused every trip); with no loop around the MMA at all (one tile per
  launch) it is conditional: the loads are a fixed cost per tile.

## Does not apply when
- the kernel already uses `ldmatrix` (inline PTX, or a helper named for it: `ldsm4`,
  `ldmatrix_m8n8x4`, `ldmatrix_x4`) — or WMMA, whose `load_matrix_sync` is the library's own
  fragment load;
- the MMA is tf32 or f64 (`m16n8k8.tf32`, `m8n8k4.f64`): each fragment element is a 32-bit or
  64-bit value, which `ldmatrix`'s 16-bit 8x8 matrices do not deliver in that layout;
- the fragments come straight from global memory (a decode GEMM with no shared staging):
  `ldmatrix` reads shared memory only;
- 32-bit shared loads with no tensor-core MMA (a reduction reading `half2` from shared memory):
  there are no fragments;
- the target is sm_70 or older (`ldmatrix` is sm_75+) or AMD (MFMA operands are loaded with
  `ds_read_b64`/`b128`, another kernel).

## References
- ThunderKittens `include/ops/warp/memory/tile/shared_to_register.cuh` (`load(RT&, const ST&)`:
  the 16-bit row-layout path of four `move<U2>::lds` 32-bit loads at `row = laneid / 4`,
  `col = 2 * (laneid % 4)` per 16x16 tile replaced by one `move<U2>::ldsm4` at
  `row = laneid % 16`, `col = (laneid / 16) * 8`, and `ldsm4t` for the column layout; the
  `ldsm4`/`ldsm4t` PTX wrappers added in `include/ops/warp/memory/util/util.cuh`) — at
  `774a23f815`, 2024-10-24, "all tests passing, matching fa2 on 4090", before 2025-07-01
- flashinfer `include/flashinfer/mma.cuh` (`ldmatrix_m8n8x4`: the `ldmatrix.sync.aligned.m8n8.x4
  .shared.b16` wrapper, added with the tensor-core decode path) — at `5516c19ca6`, 2023-09-05,
  "add HND decoding"; its `.trans` form `ldmatrix_m8n8x4_trans` and the permuted shared-memory
  layout that keeps its row reads conflict-free (`include/flashinfer/permuted_smem.cuh`) — at
  `a48b5dd004`, 2023-09-25, "add prefill v1", before 2025-07-01
- IST-DASLab marlin `marlin/marlin_cuda_kernel.cu` (`ldsm4`: the A fragments of every
  `m16n8k16` loaded with `ldmatrix.sync.aligned.m8n8.x4.shared.b16` from a transposed-index
  shared layout, `a_sh_rd_trans`) — at `ac6988b2f8`, 2024-01-17, "Version 0.1", before 2025-07-01
- llm-awq `awq/kernels/gemm_cuda_gen.cu` (`gemm_forward_4bit_cuda_m16n128k32`: A with
  `ldmatrix...x4.shared.b16`, the dequantised B with `ldmatrix...x4.trans.shared.b16`) — at
  `460d6d4545`, 2023-05-31, "first commit", before 2025-07-01
- PTX ISA, "Warp-level matrix load instruction: ldmatrix" and "Matrix Fragments for
  mma.m16n8k16"; CUDA C++ Programming Guide, "Shared Memory" (bank conflicts)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.predicates.cuda import code, line_of, shared_arrays
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.skeletons.base import Workload

#: warp-level MMA on 16- or 8-bit operands (the inline PTX the extractor names `ptx:mma.sync...`)
_MMA16 = re.compile(r"^mma\.sync\.aligned\.m16n8k(?:16|32)\.[\w.]*\b(?:f16|bf16|s8|u8|e4m3|e5m2)\b")
#: ldmatrix: the PTX, or a helper named for it (flashinfer `ldmatrix_m8n8x4`, Marlin `ldsm4`)
_LDMATRIX_PTX = re.compile(r"^ldmatrix\.")
_LDMATRIX_HELPER = re.compile(r"(?i)(?:^|[:.])(?:ldmatrix\w*|ldsm\d*\w*|ld_matrix\w*)$")
#: a 32-bit shared load through inline PTX
_LDS32_PTX = re.compile(r"^ld\.shared(?:::cta)?\.(?:b32|u32|s32)\b")
_T32 = r"(?:uint32_t|unsigned(?:\s+int)?|int|int32_t|half2|__half2|__nv_bfloat162|nv_bfloat162|bf16_2)"
#: `*reinterpret_cast<const uint32_t*>(&NAME[` / `(NAME +`, `*(const uint32_t*)&NAME[`, `*(uint32_t*)(NAME + `
_LOAD32 = re.compile(r"\*\s*(?:reinterpret_cast\s*<\s*(?:const\s+)?" + _T32 + r"\s*(?:const\s*)?\*\s*>|"
                     r"\(\s*(?:const\s+)?" + _T32 + r"\s*(?:const\s*)?\*\s*\))\s*\(?\s*&?\s*([A-Za-z_]\w*)\s*[\[+]")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def _shared_names(k: KernelFacts) -> set[str]:
    """`__shared__` arrays, and local pointers taken into them (`const half* sa = smem + off`)."""
    names = set(shared_arrays(k))
    for a in k.assigns:
        if a.targets and "[" not in a.targets[0] and set(_IDENT.findall(a.value or "")) & names \
                and "__cvta" not in (a.value or ""):
            target = _IDENT.findall(a.targets[0])[:1]
            if target and re.search(r"\*\s*(?:const\s+)?(?:__restrict__\s+)?" + re.escape(target[0]) + r"\s*=",
                                    code(k)):
                names.add(target[0])
    return names


def _ptx(k: KernelFacts) -> list[tuple[int, str]]:
    """(line, instruction) of inline PTX: the extractor's `ptx:` calls, and the text of `asm`
    blocks whose instruction it did not name (`"ldmatrix...b16" "{%0, ...}"` run together)."""
    out = [(c.line, c.name[4:]) for c in k.calls if c.name.startswith("ptx:")]
    return out + [(c.line, c.args[0].strip()) for c in k.calls if c.name == "asm" and c.args]


def _mma16(k: KernelFacts) -> list[int]:
    return sorted({ln for ln, ins in _ptx(k) if _MMA16.match(ins)})


def _scalar_fragment_loads(k: KernelFacts) -> list[int]:
    """32-bit loads from shared tiles: casts in the kernel's own code, `ld.shared.b32` PTX in a helper."""
    if not is_kernel(k):
        return []
    shared = _shared_names(k)
    text = code(k)
    lines = [line_of(k, text, m.start()) for m in _LOAD32.finditer(text) if m.group(1) in shared]
    return sorted(set(lines + [ln for ln, ins in _ptx(k) if _LDS32_PTX.match(ins)]))


def _ldmatrix(k: KernelFacts) -> list[int]:
    return sorted({ln for ln, ins in _ptx(k) if _LDMATRIX_PTX.match(ins)} |
                  {c.line for c in k.calls if _LDMATRIX_HELPER.search(c.name)})


def _call_sites(k: KernelFacts, line: int, seen: frozenset[str] = frozenset()) -> list[int]:
    """The kernel's own lines a line stands for: itself, or — inside a folded helper — the lines
    calling that helper (transitively)."""
    for name, (start, end) in k.folded.items():
        if start <= line <= end and name not in seen:
            sites = [c.line for c in k.calls if c.name == name and not start <= c.line <= end]
            return [s for site in sites for s in _call_sites(k, site, seen | {name})]
    return [line]


def _loops_around(k: KernelFacts, line: int) -> set[int]:
    """Start lines of the kernel's loops enclosing ``line`` (helper lines stand for their call sites)."""
    return {lp.line for site in _call_sites(k, line) for lp in k.loops if lp.line <= site <= lp.end_line
            and not any(s <= lp.line <= e for s, e in k.folded.values())}


def ldmatrix_pays(k: KernelFacts, wl: Workload) -> Payoff:
    """Scalar fragment loads in the MMA's loop: pays (every trip reloads them). All outside it:
    does not pay (loaded once). No loop around the MMA: unknown (a fixed cost per tile)."""
    loads, mmas = _scalar_fragment_loads(k), _mma16(k)
    if not loads or not mmas:
        return Payoff(UNKNOWN, "no 32-bit shared-memory fragment loads beside a 16-bit `mma.sync`")
    mma_loops = set().union(*(_loops_around(k, m) for m in mmas))
    if not mma_loops:
        return Payoff(UNKNOWN, "the `mma.sync` is in no loop (one tile per launch): the fragment loads are a fixed "
                      "cost per tile; it pays as far as the kernel's time goes into them")
    hot = [site for ln in loads if _loops_around(k, ln) & mma_loops for site in _call_sites(k, ln)]
    if hot:
        return Payoff(PAYS, f"the fragments are reloaded with one 32-bit shared load per register (line {min(hot)}) "
                      f"in the loop that issues the `mma.sync` (line {min(mma_loops)}): 4 loads per 16x16 tile "
                      "where one `ldmatrix.x4` moves the whole tile, every trip of the mainloop")
    first = min(site for ln in loads for site in _call_sites(k, ln))
    return Payoff(DOES_NOT_PAY, f"the 32-bit fragment loads (line {first}) are outside the loop issuing the "
                  f"`mma.sync` (line {min(mma_loops)}): loaded once and reused every trip, their count is fixed")


def _global_kernel(k: KernelFacts) -> bool | None:
    """A `__global__` kernel (a whole-unit fact: no lines of its own)."""
    return is_kernel(k) or None


KERNEL = custom("cuda-kernel", "a `__global__` kernel", _global_kernel, signature=True)
MMA16 = custom("mma-sync-16bit", "warp-level `mma.sync.aligned.m16n8k16`/`m16n8k32` on 16- or 8-bit operands "
               "(inline PTX)", _mma16)
#: the technique is already used: ldmatrix PTX or a helper named for it
PRESENT = custom("ldmatrix", "`ldmatrix.sync.aligned` fragment loads (PTX, or an `ldsm4`/`ldmatrix_*` helper)",
                 _ldmatrix)
#: the subject: per-thread 32-bit loads of fragment registers from a shared tile
SUBJECT = custom("scalar-smem-fragment-loads", "per-thread 32-bit loads from a `__shared__` tile "
                 "(`*reinterpret_cast<const uint32_t*>(&sA[r][c])`, `ld.shared.b32`)", _scalar_fragment_loads)

SKELETON = Skeleton(
    id="cuda-ldmatrix-fragment-loads",
    title="ldmatrix.x4 for mma.sync operand fragments (one instruction per 16x16 tile)",
    summary="Fill mma.sync A/B fragments from shared memory with ldmatrix.sync.aligned.m8n8.x4, not four 32-bit "
    "loads a thread.",
    category=Category.MEMORY,
    doc=__doc__,
    ruled_out_by=(r"\bldmatrix\b", r"\bldsm\d?\b"),
    present=PRESENT,
    preconditions=[SUBJECT, MMA16, KERNEL],
    subject=SUBJECT,
    env=Env(backends=("cuda",)),
    helps=("memory", "latency"),
    languages=("cuda",),
    payoff=ldmatrix_pays,
)
