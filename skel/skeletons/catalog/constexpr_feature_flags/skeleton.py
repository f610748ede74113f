"""Make feature switches `tl.constexpr` flags (USE_*/HAS_*/IS_*) so variants compile out.

## What it does
Turns a runtime switch argument that the kernel branches on (`if apply_scale:`,
`if mode == 1:`, `if delta != 0.0:`) into a `tl.constexpr` parameter with a flag name
(`USE_SCALE: tl.constexpr`, `HAS_BIAS`, `IS_VARLEN`, `STORE_RESIDUAL`). Triton then
compiles one specialised variant per flag value and deletes the dead branch, its loads
and its registers, instead of emitting both paths and a runtime test.

## Why it is faster
A runtime `if` on a scalar keeps both arms in the binary: the unused arm still costs
registers (raising pressure and possibly lowering occupancy), blocks some scheduling
across the branch, and may keep extra pointer arithmetic and loads alive. A constexpr
flag removes all of that; one source then serves many variants at no runtime cost.
flash-linear-attention and Liger-Kernel both write their switches this way (see
References).

## Applies when
- the kernel is launched (reads `tl.program_id`) and has an `if` whose test reads only
  kernel arguments, at least one of them a non-constexpr scalar switch — not a
  pointer, not a length or dimension, and not a `None` check;
- the switch takes few values per program (a mode, an on/off option), fixed per call.

## Does not apply when
- the test is a `None` check (`if bias is not None`): Triton already specialises `None`
  arguments at compile time;
- the value is data (`y == ignore_index`) or a bound (`i_t * BT >= T`): these must stay
  runtime;
- the switch flips between many values per launch: each value compiles a new variant
  (more JIT time and cache); keep those runtime or bucket them;
- the branch is in cold code whose cost does not matter.

## References
- flash-linear-attention `fla/ops/common/chunk_o.py` (`chunk_fwd_kernel_o`: `USE_G`, `IS_VARLEN` flags) — at `49b00f0a94`, before 2025-07-01
- Liger-Kernel `src/liger_kernel/ops/cross_entropy.py` (`liger_cross_entropy_kernel`: `HAS_WEIGHT`, `HAS_SOFTCAPPING`) — at `5e3bf99abb`, before 2025-07-01
"""

from __future__ import annotations

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import param
from skel.skeletons.predicates.branches import RUNTIME_SWITCH_BRANCH
from skel.skeletons.predicates.programs import KERNEL_ENTRY

FEATURE_FLAGS = param(r"(?i:use|has|is|store|save)_\w+", constexpr=True, name="constexpr-feature-flag",
                      describe="a constexpr feature flag (USE_*/HAS_*/IS_*/STORE_*/SAVE_*)")

SKELETON = Skeleton(
    id="constexpr-feature-flags",
    title="constexpr feature flags instead of runtime switches",
    summary="Turn runtime switch arguments the kernel branches on into USE_*/HAS_* constexpr flags that compile out.",
    category=Category.TUNING,
    doc=__doc__,
    present=FEATURE_FLAGS,
    preconditions=[KERNEL_ENTRY, RUNTIME_SWITCH_BRANCH],
    subject=RUNTIME_SWITCH_BRANCH,
    env=Env(),
    helps=("compute", "occupancy"),
)
