"""A history event's before/after kernels as a file in the verifier's harness format.

The kernels are read back from the repository (the blobs the event names) and renamed
``before_<kernel>`` / ``after_<kernel>``, as docs/harness.md asks. What a commit cannot tell
— the shapes, how to make inputs, the right answer, the launchers — is left for a person:
the file raises at import with a message naming those fields, so ``skel verify FILE FILE``
refuses it (exit 2) until they are written, instead of running half a harness.
"""

from __future__ import annotations

import re
from pathlib import Path

from skel.miner.sources import cat_blobs
from skel.store.history import HistoryEvent, RepoState

TO_FILL = ("SHAPES", "DTYPES", "TOLERANCES", "make_inputs", "make_outputs", "reference", "before", "after")


def _lines(text: str, span: list[int]) -> str:
    return "\n".join(text.splitlines()[span[0] - 1:span[1]])


def _renamed(source: str, kernel: str, prefix: str) -> str:
    """The kernel's text with its ``def`` (and any self-reference) renamed."""
    return re.sub(rf"\b{re.escape(kernel)}\b", f"{prefix}{kernel}", source)


def _imports(text: str) -> list[str]:
    """The module's top-level import statements (one line each; continuation lines kept)."""
    out, keep = [], False
    for line in text.splitlines():
        if re.match(r"(import|from)\s+\S", line):
            out.append(line)
            keep = line.rstrip().endswith(("(", "\\"))
        elif keep:
            out.append(line)
            keep = not line.rstrip().endswith(")")
    return out


def render(event: HistoryEvent, before_text: str, after_text: str) -> str:
    kernel = event.kernel.split("#")[0]
    before = _renamed(_lines(before_text, event.before), kernel, "before_")
    after = _renamed(_lines(after_text, event.after), kernel, "after_")
    fill = ", ".join(TO_FILL)
    changed = "\n".join(f"    {c}" for c in event.changed[:20]) or "    (no tracked fact)"
    imports = "\n".join(f"# {ln}" for ln in _imports(after_text)) or "# (none)"
    return f'''"""History event {event.id}: {event.technique} {event.kind} in {kernel}.

{event.repo}@{event.commit} ({event.date})
{event.message}
file: {event.before_path} lines {event.before[0]}-{event.before[1]} before, \
{event.path} lines {event.after[0]}-{event.after[1]} after
facts that changed:
{changed}

NOT RUNNABLE YET: a commit does not say how to run its kernel. Fill in {fill}
(docs/harness.md), bring in what the kernels need from their module (the helpers they
call, constants, imports: the module's imports are listed below), then delete the
`raise` line. `skel verify THIS_FILE THIS_FILE` refuses the file until then.
"""
import torch
import triton
import triton.language as tl

# imports of {event.path} after the commit (uncomment what the kernels need):
{imports}

# an exported pair is not a harness yet: importing it stops here, naming what is missing
raise RuntimeError("incomplete harness: exported history event {event.id}: fill in {fill} "
                   "(docs/harness.md), then delete this line")

# ---- the harness (to write) ------------------------------------------------------------
# SHAPES = {{"small": dict(...), ...}}
# DTYPES = ("float16",)
# TOLERANCES = {{"float16": (2e-3, 2e-3)}}
# def make_inputs(shape, dtype, seed, device): ...
# def make_outputs(shape, dtype, device): ...
# def reference(*inputs): ...
# def before(*inputs_then_outputs): ...   # launches before_{kernel}
# def after(*inputs_then_outputs): ...    # launches after_{kernel}

# ---- before: {event.before_path} at the commit's parent ----------------------------------
{before}


# ---- after: {event.path} at {event.commit[:8]} -------------------------------------------
{after}
'''


def export(event: HistoryEvent, state: RepoState | None, out_dir: Path) -> Path:
    """Write the event's file into ``out_dir``; returns its path. Raises FileNotFoundError
    when the repository it was mined from is gone or lacks the blobs."""
    if state is None:
        raise FileNotFoundError(f"{event.repo}: no record of where it was mined from")
    root = Path(state.root)
    if not root.exists():
        raise FileNotFoundError(f"{root}: the repository {event.repo} was mined from is gone")
    before, after = cat_blobs(root, [event.before_blob, event.after_blob])
    if before is None or after is None:
        raise FileNotFoundError(f"{root}: the blobs of event {event.id} are not in this repository")
    text = render(event, before.decode("utf-8", errors="replace"), after.decode("utf-8", errors="replace"))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{event.id}_{event.kernel.split('#')[0]}.py"
    path.write_text(text, encoding="utf-8")
    return path
