"""Make a per-model dimension that bounds a loop or a mask (head dim, norm width, group size, top-k) `tl.constexpr`.

## What it does
A dimension that is fixed for the whole model — the head dimension (`head_dim`, `D`,
`head_dim_v`), a norm's hidden size (`hidden_size`, or `n_cols` / `N_COLS` of a norm
kernel), a quantization group size (`group_size`), the experts per token (`top_k`) — is
passed to a `@triton.jit` kernel as a plain runtime integer and used as a loop bound
(`for off in range(0, N_COLS, BLOCK_SIZE)`, `for j in range(top_k)`) or as the bound of
the masks of loads and stores in a loop (`mask=o_d < head_dim`). The rewrite annotates it
`N_COLS: tl.constexpr` (nothing else changes in the body or at the call site): the kernel
is compiled once per model's value instead of once for all, and in exchange its loop has
a static trip count and its masks a constant bound.

## Why it is faster
With the bound a compile-time constant, a column loop whose row fits in one block
(`N_COLS <= BLOCK_SIZE`) has one static trip and disappears; a short loop gets a known
trip count the compiler can unroll, so the loads of the next trip issue before the math of
this one; a mask `cols < N_COLS` with `N_COLS == BLOCK_SIZE` is all true and its
predicates and `other=` selects fold away; `x / N_COLS` and `i // D` become a multiply or
a shift by a constant. xformers measured "a 30% speedup in the usual case" on its RMSNorm
when `N_COLS` became constexpr (two passes over the row, "probably because the data doesn't
have to be read twice": with one static trip the second pass reuses the first's loads).
Compiled offline for sm_90 (Triton 3.7.1, no GPU), this skeleton's example shows it in the
machine code: a 4,096-wide bf16 row goes from 6 to 4 global loads a thread, a 5,120-wide one
from 12 to 8 loads and 63 to 41 registers; from 65,536 columns (8 blocks of 8,192) the
constexpr loop stays a loop and compiles to the runtime version's loads. The cost is one
compilation per distinct value — a handful per model (the head dims of K and V, the hidden
size, the norm of each head) — paid at the first call.

## Applies when
- the kernel is launched (reads `tl.program_id`) and a non-constexpr parameter named like
  a model dimension — a head dim (`head_dim`, `head_size`, `qk_head_dim`, `DK`/`DV`,
  `Lk`/`Lv`, `rope_dim`, `kv_lora_rank`), a hidden size (`hidden_size`, `d_model`, `dim`,
  `D`), a quantization `group_size` (not in a norm), the experts per token of a MoE kernel
  (`top_k`/`topk` beside `topk_ids`/expert arguments, `num_experts_per_tok`), or
  `n_cols`/`N_COLS`/`N` in a normalization kernel (it takes a `rsqrt`/`sqrt`, so its width
  is the hidden size) — is
  - the bound of a `range`/`tl.range` loop with no `tl.dot` in it (a column loop
    `range(0, D, BLOCK_D)`, a per-expert loop `range(top_k)`), or
  - compared in the mask of a load, a store or a `tl.where` inside a loop (the hot path:
    every trip pays the predicate);
- it pays (`payoff`) when the dimension is given and small against a block: at most 8,192
  (`--shape head_dim=128`, `--shape cols=4096`, `--shape x_ptr=8192x4096`): the loop then
  runs one or a few static trips, which unroll (8,192 is the block cap of xformers' commit,
  under which its 30% was "the usual case"). A width given of 65,536 or more stays a loop:
  it does not pay. A width in between, or one nobody gave, is a conditional suggestion —
  a head dim, a quantization group or a MoE's experts per token too: the name says it is
  usually small (a few hundred at most), the condition names the `--shape` that decides.

## Does not apply when
- the value changes per call — `T`, `seq_len`, `num_tokens`, `n_rows`, `batch`: every new
  value would compile a new kernel (the opposite advice, `do-not-specialize`); the same for
  `n_cols` outside a norm (an attention row, a vocabulary), a sampling `top_k` (set per
  request), the tokens a sparse attention keeps, and every size of a group norm (its
  "group" and "hidden size" are channels × pixels: they change with the image);
- it is already `tl.constexpr`, or the authors listed it in `do_not_specialize`;
- it bounds the K loop of a `tl.dot` (a GEMM over `hidden_size`): masking the ragged last
  K tile is `heuristics-constexpr`'s EVEN_K flag, and autotuning keys on K;
- it only bounds a mask outside any loop, in a kernel whose row fits one block: the
  predicate is evaluated once per element, and Triton already vectorises a masked load
  whose bound is a multiple of 16 (an EVEN_K flag measured 1.01× on an H200,
  `heuristics-constexpr`); or it is only a stride or an index multiplier (`row * D`).

## References
- xformers `xformers/ops/_triton/rmsnorm_kernels.py` (`_rms_norm_kernel`, `_rms_norm_add_kernel`:
  `N_COLS` becomes `tl.constexpr`, the bound of both `range(0, N_COLS, BLOCK_SIZE)` passes and of
  their masks; message "Make RMSNorm's N_COLS constexpr ... provides a 30% speedup in the usual
  case") — at `8665cf967a`, 2024-01-15, before 2025-07-01
- unsloth `unsloth/kernels/rms_layernorm.py` (`_rms_layernorm_forward`, `_gemma_rms_layernorm_forward`)
  and `unsloth/kernels/layernorm.py` (`layernorm_forward`, `layernorm_backward`: `n_cols : tl.constexpr`,
  the bound of `mask = col_offsets < n_cols` and the divisor of the mean; message "constexpr") — at
  `5843d784f5`, 2025-03-13, before 2025-07-01
- flash-linear-attention `fla/modules/fused_linear_cross_entropy.py` (`cross_entropy_kernel`: the
  runtime `n_cols` becomes `V: tl.constexpr`, the bound of the `range(0, V, BV)` loops and their
  `o_x < V` masks; message "[Cross Entropy] Update default params") — at `78d29a0fa8`, 2024-09-13,
  before 2025-07-01
- xformers `xformers/ops/fmha/triton_splitk.py` (`_fwd_kernel_splitK`, `_splitK_reduce`: the head
  counts `H`, `G` become constexpr, folding `off_zhg // (H * G)`; message "[splitK] Support GQA") —
  at `e67425066c`, 2023-09-22, before 2025-07-01
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import DOES_NOT_PAY, PAYS, UNKNOWN, Category, Env, Payoff, Skeleton
from skel.skeletons.conditions import IDENT
from skel.skeletons.patterns import any_of, calls_where, loops_where, per_kernel
from skel.skeletons.predicates.names import VARYING_LENGTH
from skel.skeletons.predicates.payoff import row_shape
from skel.skeletons.predicates.programs import KERNEL_ENTRY

if TYPE_CHECKING:
    from skel.kernels.model import Call, KernelFacts, Loop
    from skel.skeletons.base import Workload  # the floor re-exports the type (catalog modules import no kernels.workload)

#: Dimensions that are small in every model: head dims (64-256; 576 for MLA's latent), rotary
#: dims, query heads per KV head. Named like one, the conditional entry says it is usually small.
HEAD_DIM = re.compile(
    r"(?i:(qk_|v_|kv_|qk_nope_|qk_rope_|rope_|nope_)?head_?(dim|size)(_?(q|k|v|qk|o))?"
    r"|d_?head|dim_?head|rope_?dim|rotary_?dim|nope_?dim|kv_?lora_?rank|l[kv]"
    r"|kv_?group_?num|num_?queries_?per_?kv)"
    r"|D[KV]|D_[KV]|D[kv]")
#: Experts per token (1-8): a model constant in a MoE kernel only; elsewhere `top_k` is a
#: sampling parameter per request or the number of tokens a sparse attention keeps.
TOP_K = re.compile(r"(?i:top_?k|num_experts_per_tok|n_?experts_?per_?tok(en)?|experts_per_token)")
_MOE_PARAM = re.compile(r"(?i)expert|topk_(ids|weights)")
#: a group norm's kernel: its name, or a spatial size or a channel count per group among its
#: parameters. Its "hidden size" and "group size" are channels × pixels: they change with
#: the image, so none of its sizes is a model constant.
_GROUP_NORM_NAME = re.compile(r"(?i)\w*group_?norm\w*")
_GROUP_NORM_PARAM = re.compile(r"(?i)\w*spatial\w*|\w*channels_per_group\w*|hw")
#: A quantization group (32-128): a model constant, except in a group norm, where the
#: "group" is channels × pixels and changes with the image size.
GROUP_SIZE = re.compile(r"(?i:(quant_?)?group_?size)")
#: Dimensions fixed per model but not always small: the hidden size and its aliases.
HIDDEN_DIM = re.compile(r"(?i:hidden(_?(size|dim))?|d_?model|model_?dim|embed_?dim|n_?embd|dim)|D")
#: A row's width: the hidden size in a normalization kernel, anything elsewhere (an
#: attention row, a vocabulary), so it counts only where the kernel normalizes.
ROW_WIDTH = re.compile(r"(?i:n_?cols?|num_?cols)|N_COLS|N")
#: a normalization: it takes a (reciprocal) square root of the row's statistics
_NORM_CALL = re.compile(r"(^|\.)(rsqrt|sqrt|sqrt_rn)$")
#: the widest dimension that still fits one block of a row kernel: xformers' RMSNorm, whose
#: constexpr `N_COLS` measured 30%, raised its block cap to 8,192 in the same commit. Compiled
#: offline for sm_90 (Triton 3.7.1, this skeleton's example, bf16, blocks of up to 8,192),
#: widths up to 32,768 unroll and the second pass reuses the first pass's loads
#: (4,096: 6 -> 4 global loads a thread; 5,120: 12 -> 8, 63 -> 41 registers)
SMALL_WIDTH = 8192
#: from this width on, the constexpr loop stays a loop: at 65,536 and 151,936 columns (8 and
#: 19 blocks of 8,192) the example compiles to the runtime version's 12 loads
LARGE_WIDTH = 65536

_LESS = r"(?<![<])<(?![<])=?"  # `<` or `<=`, not a shift


def _normalizes(k: KernelFacts) -> bool:
    return any(_NORM_CALL.search(c.name) for c in k.calls)


def _moe(k: KernelFacts) -> bool:
    return any(_MOE_PARAM.search(p.name) for p in k.params)


def _group_norm(k: KernelFacts) -> bool:
    return bool(_GROUP_NORM_NAME.fullmatch(k.name)) or any(_GROUP_NORM_PARAM.fullmatch(p.name) for p in k.params)


def _small_kind(name: str, k: KernelFacts) -> str:
    """What a dimension small in every model is ("a head dim", a MoE kernel's "experts per
    token", "a quantization group"), "" for any other name."""
    if HEAD_DIM.fullmatch(name):
        return "a head dim"
    if TOP_K.fullmatch(name) and _moe(k):
        return "a MoE's experts per token"
    if GROUP_SIZE.fullmatch(name) and not _normalizes(k):
        return "a quantization group"
    return ""


def _small_by_name(name: str, k: KernelFacts) -> bool:
    return bool(_small_kind(name, k))


def _is_dimension(name: str, k: KernelFacts) -> bool:
    if VARYING_LENGTH.fullmatch(name) or _group_norm(k):
        return False  # a per-call length (recompiling per value is the opposite advice), an image's size
    if _small_by_name(name, k) or HIDDEN_DIM.fullmatch(name):
        return True
    return bool(ROW_WIDTH.fullmatch(name)) and _normalizes(k)


def _kept_runtime(k: KernelFacts) -> set[str]:
    """Parameters the authors listed in `@triton.jit(do_not_specialize=[...])`."""
    d = k.decorator("triton.jit")
    text = d.kwargs.get("do_not_specialize", "") if d is not None else ""
    return set(re.findall(r"[\"'](\w+)[\"']", text))


@per_kernel  # read by every loop and call tested: once per kernel
def _dimensions(k: KernelFacts) -> tuple[frozenset[str], frozenset[str]]:
    """(runtime, constexpr) parameters named like a model dimension."""
    kept = _kept_runtime(k)
    runtime = {p.name for p in k.params if not p.constexpr and p.name not in kept and _is_dimension(p.name, k)}
    const = {p.name for p in k.params if p.constexpr and _is_dimension(p.name, k)}
    return frozenset(runtime), frozenset(const)


#: calls whose result is not a size derived from a dimension (a tile, a loaded value, a program id)
_NOT_A_SIZE = {"tl.arange", "tl.load", "tl.program_id", "tl.zeros", "tl.full"}


@per_kernel  # read by every call tested: once per kernel
def _bound_names(k: KernelFacts) -> dict[str, frozenset[str]]:
    """Names that stand for a model dimension in a comparison -> the dimensions: each
    dimension itself, and scalars derived from one outside loops (`half = head_dim // 2`)."""
    runtime, const = _dimensions(k)
    out: dict[str, frozenset[str]] = {d: frozenset({d}) for d in runtime | const}
    for _ in range(2):
        for a in k.assigns:
            if a.op != "=" or a.loop_depth or len(a.targets) != 1 or set(a.calls) & _NOT_A_SIZE:
                continue
            target = a.targets[0].strip()
            got = frozenset().union(*(out[n] for n in a.names if n in out))
            if got and IDENT.fullmatch(target) and target not in out:
                out[target] = got
    return out


def _compares(text: str, k: KernelFacts) -> set[str]:
    """The model dimensions ``text`` uses as the upper side of a `<` (`o_d < D`, `cols <
    n_cols - off`, `o < half` with `half = head_dim // 2`) or the larger side of a `>`."""
    out: set[str] = set()
    for n, dims in _bound_names(k).items():
        if n in text and (re.search(rf"{_LESS}[^<>=&|,;]*\b{re.escape(n)}\b", text)
                          or re.search(rf"\b{re.escape(n)}\b[^<>=&|,;]*>(?![>])", text)):
            out |= dims
    return out


@per_kernel  # read by every call tested: once per kernel
def _mask_names(k: KernelFacts) -> dict[str, frozenset[str]]:
    """Local masks bounded by a dimension (`m_d = o_d < D`) -> the dimensions they compare
    against, one assignment deep and then through `&` combinations."""
    out: dict[str, set[str]] = {}
    for _ in range(2):
        for a in k.assigns:
            if a.op != "=" or len(a.targets) != 1 or not IDENT.fullmatch(a.targets[0].strip()):
                continue
            got = _compares(a.value, k)
            for name in set(a.names) & set(out):
                got |= out[name]
            if got:
                out.setdefault(a.targets[0].strip(), set()).update(got)
    return {n: frozenset(v) for n, v in out.items()}


def _mask_dimensions(c: Call, k: KernelFacts) -> set[str]:
    """The model dimensions bounding the mask of a load, store or select."""
    text = _mask_text(c)
    if not text:
        return set()
    masks = _mask_names(k)
    return _compares(text, k).union(*(masks.get(n, frozenset()) for n in IDENT.findall(text)))


#: where each bounded call takes its mask positionally: `tl.load(ptr, mask)`,
#: `tl.store(ptr, value, mask)`, `tl.where(condition, a, b)`
_MASK_POSITION = {"tl.load": 1, "tl.store": 2, "tl.where": 0}


def _mask_text(c: Call) -> str:
    """The mask (or `tl.where` condition) of a load, store or select, as source text."""
    if c.name != "tl.where" and "mask" in c.kwargs:
        return c.kwargs["mask"]
    if c.name == "tl.where" and "condition" in c.kwargs:
        return c.kwargs["condition"]
    i = _MASK_POSITION[c.name]
    return c.args[i] if len(c.args) > i else ""


def _in_dot_loop(c: Call, k: KernelFacts) -> bool:
    """The call sits in a loop that also runs a `tl.dot`: the K loop of a matmul."""
    return any(lp.line <= c.line <= lp.end_line and _dot_inside(lp, k) for lp in k.loops)


def _masked_by(c: Call, k: KernelFacts, dims: frozenset[str]) -> bool:
    return bool(_mask_dimensions(c, k) & dims)


def _dot_inside(lp: Loop, k: KernelFacts) -> bool:
    return any(c.name in ("tl.dot", "tl.dot_scaled") and lp.line <= c.line <= lp.end_line for c in k.calls)


def _loop_dimensions(lp: Loop, k: KernelFacts) -> set[str]:
    """The model dimensions bounding a loop (`range(0, D, BLOCK_D)`, `range(half)`), none
    for a `tl.dot` loop."""
    if _dot_inside(lp, k):
        return set()
    names = _bound_names(k)
    return set().union(*(names[n] for n in IDENT.findall(" ".join(lp.args)) if n in names))


def _bounds_loop(lp: Loop, k: KernelFacts, dims: frozenset[str]) -> bool:
    return bool(_loop_dimensions(lp, k) & dims)


def _runtime_loop(lp: Loop, k: KernelFacts) -> bool:
    """A column / per-expert loop bounded by a runtime model dimension (no `tl.dot` in it)."""
    return _bounds_loop(lp, k, _dimensions(k)[0])


def _runtime_mask(c: Call, k: KernelFacts) -> bool:
    """A load, store or `tl.where` in a loop whose mask compares against a runtime model
    dimension (directly or through a local mask); not in a `tl.dot` K loop, whose masked
    ragged tile is `heuristics-constexpr`'s EVEN_K case."""
    return _masked_by(c, k, _dimensions(k)[0]) and not _in_dot_loop(c, k)


def _constexpr_loop(lp: Loop, k: KernelFacts) -> bool:
    return _bounds_loop(lp, k, _dimensions(k)[1])


def _constexpr_mask(c: Call, k: KernelFacts) -> bool:
    return _masked_by(c, k, _dimensions(k)[1])


_BOUNDED = ("tl.load", "tl.store", "tl.where")

RUNTIME_DIM_LOOP = loops_where(
    kind=("range", "tl.range"), where=_runtime_loop, name="runtime-model-dimension-loop",
    describe="a loop bounded by a runtime model dimension (`range(0, D, BLOCK_D)`, `range(top_k)`)")
RUNTIME_DIM_MASK = calls_where(
    *_BOUNDED, in_loop=True, where=_runtime_mask, name="runtime-model-dimension-mask",
    describe="a mask in a loop bounded by a runtime model dimension (`mask=o_d < head_dim`)")
#: the subject: a runtime model dimension bounding the hot path
RUNTIME_DIM_BOUND = any_of(
    RUNTIME_DIM_LOOP, RUNTIME_DIM_MASK, name="runtime-model-dimension-bound",
    describe="a runtime model dimension (head dim, a norm's width, group size, top-k) bounding a loop or a "
             "mask in a loop")
CONSTEXPR_DIM_BOUND = any_of(
    loops_where(kind=("range", "tl.range", "tl.static_range"), where=_constexpr_loop,
                name="constexpr-model-dimension-loop", describe="a loop bounded by a constexpr model dimension"),
    calls_where(*_BOUNDED, where=_constexpr_mask, name="constexpr-model-dimension-mask",
                describe="a mask bounded by a constexpr model dimension"),
    name="constexpr-model-dimension-bound",
    describe="a `tl.constexpr` model dimension bounding a loop or a mask")
#: the technique is already used: a constexpr dimension bounds the loops and masks, and no
#: runtime one is left
PRESENT = CONSTEXPR_DIM_BOUND & ~RUNTIME_DIM_BOUND


def _bounding_dimensions(k: KernelFacts) -> list[str]:
    """The runtime model dimensions that bound a loop or a mask in a loop, in signature order."""
    runtime = _dimensions(k)[0]
    used: set[str] = set()
    for lp in k.loops:
        if lp.kind in ("range", "tl.range"):
            used |= _loop_dimensions(lp, k) & runtime
    for c in k.calls:
        if c.name in _BOUNDED and c.loop_depth > 0 and _runtime_mask(c, k):
            used |= _mask_dimensions(c, k) & runtime
    return [p.name for p in k.params if p.name in used]


def small_model_dimension(k: KernelFacts, wl: Workload) -> Payoff:
    """Pays when a bounding dimension is given and small against a block (at most 8,192).
    Given and 65,536 or more: the loop stays a loop. In between, or not given: unknown — a
    head dim / quantization group / MoE top-k by its name too (a name is not a size)."""
    dims = _bounding_dimensions(k)
    if not dims:
        return Payoff(UNKNOWN, "no runtime model dimension bounds a loop here", "")
    known: dict[str, int] = {}
    for d in dims:
        v = wl.size(d)
        if v is None and (ROW_WIDTH.fullmatch(d) or HIDDEN_DIM.fullmatch(d)):
            v = row_shape(k, wl)[1]  # a row's width: `--shape cols=N`, or the last dim of a shape given
        if v is not None:
            known[d] = v
    small = {d: v for d, v in known.items() if v <= SMALL_WIDTH}
    if small:
        d, v = next(iter(small.items()))
        return Payoff(PAYS, f"{d} = {v:,} is fixed per model and at most {SMALL_WIDTH:,}: a constexpr bound gives "
                      "its loop a few static trips (one when it fits the block), which unroll, and folds its masks; "
                      "one compile per model")
    by_name = [d for d in dims if _small_by_name(d, k) and d not in known]
    if by_name:
        d = by_name[0]
        # a name is not a size: the shown list skips the probability threshold only for a payoff
        # grounded in sizes, and no GPU run backs this skeleton yet, so a name leaves it conditional
        return Payoff(UNKNOWN, f"pays if {d} is small, as {_small_kind(d, k)} usually is (at most "
                      f"{SMALL_WIDTH:,}: its loop unrolls, its masks get a constant bound)", f"--shape {d}=N")
    need = [d for d in dims if d not in known]
    if known and not need:
        d, v = min(known.items(), key=lambda kv: kv[1])
        if v >= LARGE_WIDTH:
            return Payoff(DOES_NOT_PAY, f"{d} = {v:,} spans many blocks: the loop stays a loop with or without a "
                          "constexpr bound (compiled, the same loads as the runtime version), which saves only the "
                          "last block's mask")
        return Payoff(UNKNOWN, f"{d} = {v:,}: between the widths that unroll for certain (at most {SMALL_WIDTH:,}) "
                      f"and those that stay a loop ({LARGE_WIDTH:,} and more); measure it with `skel verify`")
    return Payoff(UNKNOWN, f"pays if {need[0]} is small (at most {SMALL_WIDTH:,}: a few static trips of the "
                  "block)", " ".join(f"--shape {d}=N" for d in need))


SKELETON = Skeleton(
    id="constexpr-model-dimension",
    title="constexpr model dimensions (head dim, norm width, group size) as loop and mask bounds",
    summary="Annotate a per-model dimension bounding loops or masks (head_dim, N_COLS, group_size) `tl.constexpr`.",
    category=Category.TUNING,
    doc=__doc__,
    ruled_out_by=(r"\bconstexpr\b", r"\brecompil\w*"),
    present=PRESENT,
    preconditions=[KERNEL_ENTRY, RUNTIME_DIM_BOUND],
    subject=RUNTIME_DIM_BOUND,
    env=Env(),
    payoff=small_model_dimension,
    helps=("latency", "memory"),
)
