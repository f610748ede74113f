"""Stop recompiling for every new sequence length: `do_not_specialize` / de-constexpr lengths.

## What it does
Two moves with one goal — a length that changes from call to call must not be part of
the compiled kernel's identity:
- a length annotated `T: tl.constexpr` (or `seq_len`, `n_rows`, `B`, `NT` ...) becomes
  a plain runtime argument: every new value of a constexpr is a new compilation;
- a runtime length is listed in `@triton.jit(do_not_specialize=['T'])`: Triton otherwise
  specializes integer arguments on `== 1` and on divisibility by 16, so a length that
  moves between 1, multiples of 16 and other values compiles up to three variants.

## Why it is faster
It removes compilation from the steady state, not cycles from the kernel. Each
compilation runs the whole Triton pipeline (and, for an autotuned kernel, every config
again). With a constexpr sequence length, every new prompt length in serving or every
new packed-batch length in varlen training stalls on the compiler, and the JIT cache
grows without bound. FLA marks `T` `do_not_specialize` on most of its kernels.

## Applies when
- the kernel is launched (reads `tl.program_id`) and has a length-like parameter whose
  value changes between calls — `T`, `NT`, `B`, `seq_len`, `seqlen`, `batch_size`, `bs`,
  `n_rows`, `num_tokens`, `N_CTX` ... — and either
  - it is annotated `tl.constexpr` but sizes no tile (`tl.arange`, `tl.zeros`,
    block shapes) and bounds no `tl.static_range` — the de-constexpr direction, the big
    win; or
  - it is a runtime *sequence or token* length (`T`, `seq_len`, `num_tokens`, `N_CTX`,
    or the `n_rows` of a row-wise kernel over activations flattened to tokens) used in
    the body, not listed in `do_not_specialize`, and not part of an autotune
    `key` (a key entry re-tunes per value anyway; see `autotune-key-bucketing`). The gain
    is small — at most a few extra compiles per kernel — but they land at unpredictable
    moments in serving (first odd-length prompt, first decode step).

## Does not apply when
- the "length" is a tensor of lengths (`seq_lens_ptr`, `num_tokens_post_padded_ptr`, or
  any argument a load/store address is built from): its values are read on the device,
  and Triton specializes a pointer only on its alignment, never on what it points to;
- the value is fixed per model (hidden size `D`/`n_cols`, head dim `K`/`V`, heads `H`):
  a constexpr there lets Triton unroll and fold constants; keep it;
- the constexpr is genuinely needed at compile time: it sizes a `tl.arange`/`tl.zeros`
  tile, bounds a `tl.static_range`, or is a `BLOCK`-like size — derive a bucket
  (`triton.next_power_of_2`) instead;
- the length is always a multiple of 16 and loads rely on it for vectorization:
  `do_not_specialize` drops the divisibility hint (`do_not_specialize_on_alignment`
  keeps the `== 1` specialization off only for alignment);
- only a handful of distinct values ever occur (fixed-shape training): the compile is
  paid once.

## References
- flash-linear-attention `fla/ops/common/chunk_o.py` (`chunk_fwd_kernel_o`, `@triton.jit(do_not_specialize=['T'])`) — at `49b00f0a94`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/rope.py` (`_triton_rope`, constexpr `bs`) — at `5e3bf99abb`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/rms_norm.py` (`_rms_norm_backward_kernel`) — at `5e3bf99abb`, before 2025-07-01
- Triton `triton.jit` documentation: `do_not_specialize`, `do_not_specialize_on_alignment`
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import decorated
from skel.skeletons.patterns import params_where, per_kernel
from skel.skeletons.predicates.autotune import autotune_key_names
from skel.skeletons.predicates.names import IDENT, VARYING_LENGTH
from skel.skeletons.predicates.pointers import pointer_arg, pointer_bases
from skel.skeletons.predicates.programs import KERNEL_ENTRY

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Param

#: the subset of `VARYING_LENGTH` (predicates.names) that changes with every request in
#: serving (sequence and token counts): for a runtime argument only these are worth
#: `do_not_specialize` (the win is a few compiles).
#: Row counts are included: row-wise kernels (norms, activations, losses) see activations
#: flattened to (batch * seq, hidden), so `n_rows` is the token count under another name.
SEQUENCE_LENGTH = re.compile(
    r"T|T_?q|T_?k|T_?kv|N_CTX|seq_?len\w*|seqlen\w*|max_seq_?len\w*|seq_length\w*|n_?tokens|num_tokens\w*"
    r"|total_tokens|n_rows|num_rows")


def _used_in_body(k: KernelFacts, name: str) -> bool:
    _, sep, body = k.source.partition("\ndef ")
    body = body if sep else k.source
    body = body.split("):", 1)[-1]  # after the signature
    return re.search(rf"\b{re.escape(name)}\b", body) is not None


_SHAPE_CALLS = ("tl.arange", "tl.zeros", "tl.full", "tl.reshape", ".reshape", "tl.view", ".view",
                "tl.broadcast_to", ".broadcast_to", "tl.make_block_ptr", "tl.make_tensor_descriptor")


@per_kernel  # read by every element tested: once per kernel
def shape_names(k: KernelFacts) -> set[str]:
    """Identifiers that must be compile-time: tile shapes and static_range bounds."""
    names: set[str] = set()
    for c in k.calls:
        if c.name in _SHAPE_CALLS:
            args = c.args if c.name not in ("tl.make_block_ptr", "tl.make_tensor_descriptor") else [
                c.kwargs.get("block_shape", "")] + c.args[4:5]
            names.update(IDENT.findall(" ".join(args)))
    for lp in k.loops:
        if lp.kind == "tl.static_range":
            names.update(IDENT.findall(" ".join(lp.args)))
    return names


def _not_a_shape(p: Param, k: KernelFacts) -> bool:
    """The parameter sizes no tile and bounds no static_range (those must be constexpr)."""
    return p.name not in shape_names(k)


_POINTER_NAME = re.compile(r".*(?:_ptr|Ptr|_ptrs|_tensor)")


@per_kernel  # read by every element tested: once per kernel
def _pointer_params(k: KernelFacts) -> set[str]:
    """Arguments that are tensors, not integers: named as pointers (`seq_lens_ptr`,
    `num_tokens_tensor`) or the base a load/store/atomic address is built from
    (`tl.load(seq_lens + pid)`). `seq_len\\w*` and `num_tokens\\w*` match those names,
    but a pointer is never specialized on its value: only its 16-byte alignment."""
    bases: set[str] = set()
    for c in k.calls:
        if c.name in ("tl.load", "tl.store") or c.name.startswith("tl.atomic_"):
            bases |= pointer_bases(pointer_arg(c), k, c.line)
    return bases | {p.name for p in k.params if _POINTER_NAME.fullmatch(p.name)}


def _specialized_on(p: Param, k: KernelFacts) -> bool:
    """A runtime length Triton specializes on: not in the autotune key, read in the body,
    and an integer rather than a tensor."""
    return p.name not in set(autotune_key_names(k)) and _used_in_body(k, p.name) and p.name not in _pointer_params(k)


CONSTEXPR_LENGTH = params_where(like=VARYING_LENGTH, constexpr=True, where=_not_a_shape, name="constexpr-length",
                                describe="a per-call length annotated `tl.constexpr` (T, seq_len, n_rows, B ...)")
SPECIALIZED_LENGTH = params_where(
    like=SEQUENCE_LENGTH, constexpr=False, where=_specialized_on, name="specialized-runtime-length",
    describe="a runtime sequence/token length (T, seq_len, num_tokens ...) Triton specializes on (not in the autotune key)")
DO_NOT_SPECIALIZE = decorated("triton.jit", kw="do_not_specialize", name="jit-do-not-specialize",
                              describe="`@triton.jit(do_not_specialize=[...])`") | decorated(
    "triton.jit", kw="do_not_specialize_on_alignment", name="jit-do-not-specialize-on-alignment",
    describe="`@triton.jit(do_not_specialize_on_alignment=[...])`")

#: the subject: a length the kernel is specialised (recompiled) on
SPECIALIZED_ON_LENGTH = CONSTEXPR_LENGTH | SPECIALIZED_LENGTH

SKELETON = Skeleton(
    id="do-not-specialize",
    title="do_not_specialize / de-constexpr per-call lengths",
    summary="Keep per-call lengths (T, seq_len, n_rows) runtime and unspecialized so new values never recompile.",
    category=Category.TUNING,
    doc=__doc__,
    ruled_out_by=(r"\bdo_not_specialize\b",),
    present=DO_NOT_SPECIALIZE,
    preconditions=[KERNEL_ENTRY, SPECIALIZED_ON_LENGTH],
    subject=SPECIALIZED_ON_LENGTH,
    env=Env(),
    helps=("latency",),
)
