"""What the host code in a kernel's own file does around its launches.

The extractor records, for every ``kernel[grid](...)`` launch, the launching function's
calls before it and after it in source order (``Launch.calls_before`` /
``Launch.calls_after``). Fusion and upcast skeletons turn on them: an epilogue is what the
host does to the kernel's *output* after the launch, a prologue what it does to the
*inputs* before. When the file does not launch the kernel (a library kernel launched
elsewhere), static code cannot see the caller, and these predicates say so by holding
without lines instead of hiding a suggestion.
"""

from __future__ import annotations

import re

from skel.kernels.model import KernelFacts, Launch

#: Elementwise work on a kernel's output that an epilogue could do in registers.
ELEMENTWISE_OUTPUT_OP = re.compile(
    r"(?:^|\.)(relu\w*|gelu\w*|silu|sigmoid|tanh|softplus|mish|add_?|mul_?|sub_?|div_?|clamp\w*|"
    r"to|half|bfloat16|float16)$")


def own_launches(k: KernelFacts) -> list[Launch]:
    """This kernel's launches in its own file."""
    return [ln for ln in k.launches if ln.kernel == k.name]


def launched_here(k: KernelFacts) -> bool:
    """The kernel's own file launches it (so its caller is in sight)."""
    return bool(own_launches(k))


def calls_after_launch(k: KernelFacts, pattern: re.Pattern[str]) -> list[str]:
    """Host calls matching ``pattern`` after one of this kernel's launches, in its function."""
    return [c for ln in own_launches(k) for c in ln.calls_after if pattern.search(c)]


def calls_before_launch(k: KernelFacts, pattern: re.Pattern[str]) -> list[str]:
    """Host calls matching ``pattern`` before one of this kernel's launches, in its function."""
    return [c for ln in own_launches(k) for c in ln.calls_before if pattern.search(c)]


def host_fp32_copies(k: KernelFacts) -> bool:
    """The file makes fp32 copies on the host (``x.float()``)."""
    return any(n.endswith(".float") for n in k.module_calls)


def launch_lines(k: KernelFacts) -> list[int]:
    """Lines of this kernel's launches in its file (for explanations)."""
    return [ln.line for ln in own_launches(k) if ln.line]


_INT = re.compile(r"\d+")
_CONDITION = re.compile(r"^(.*) \[if (.*)\]$", re.S)


def assigned_values(ln: Launch, kw: str) -> list[tuple[str, str]]:
    """What the launching function assigned to the name passed as ``kw`` (``num_warps=num_warps``):
    ``(value, the `if` tests around it)`` pairs; empty when ``kw`` is not passed as such a name."""
    out = []
    for text in ln.kwarg_sources.get(kw, []):
        if re.match(r"[A-Za-z_]\w* = ", text):  # a name the value reads, not the parameter itself
            continue
        m = _CONDITION.match(text)
        out.append((m.group(1), m.group(2)) if m else (text, ""))
    return out


def literal_argument(ln: Launch, kw: str) -> bool:
    """The launch passes ``kw`` a fixed integer: written at the launch (``num_warps=4``), or through
    a local that is only ever assigned integers (``num_warps = 4``) under no test. A value picked
    under an ``if`` (by head size, by GPU) is a choice, not a literal; a module constant
    (``SPLIT_K=_SPLIT_K``) is not followed."""
    if _INT.fullmatch(ln.kwargs.get(kw, "").strip()):
        return True
    values = assigned_values(ln, kw)
    return bool(values) and all(_INT.fullmatch(v.strip()) and not cond for v, cond in values)
