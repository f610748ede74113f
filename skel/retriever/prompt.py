"""Suggestions as one markdown block sized for an agent's prompt (``--format prompt``).

The full markdown repeats a template for every kernel that gets it: a whole many-kernel
file gives 20-150k characters, sized for nobody's budget. This block is grouped by
skeleton instead, so each template (the change, as a diff) appears once and the other
kernels it fits are listed under it, and it is filled most useful first until the token
budget is spent:

1. the top suggestion: the skeleton, why it fits (the kernel's lines) and the exact
   ``skel verify`` command that checks it — always there, whatever the budget;
2. its change as a diff, one real mined location, its evidence status and summary;
3. the headline (skeleton, why, verify command) of every other skeleton that fits;
4. their diffs, locations, evidence and summaries, in rank order;
5. the other kernels each skeleton fits, with their lines;
6. near misses and related techniques (each says what it lacks), then notes.

Skeletons asked about by name (``--why-not``) head the block whatever the budget: the
caller asked that question, so it is answered first.

A piece that does not fit is left out and smaller ones after it still get their chance;
a closing line says what was left out and how to get everything.

Tokens are *estimated*, without a tokenizer: ``ceil(characters / 3)``. The usual rule of
thumb, four characters per token, holds for English prose; code and diffs (operators,
indentation, short identifiers) tokenize denser, about three to three and a half
characters per token with the BPE vocabularies of current models, so dividing by three
keeps a code-heavy block inside the budget instead of overrunning it by a fifth.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from skel.retriever.suggest import TIERS, KernelResult, Suggestion
from skel.retriever.wording import checked_line, evidence_line, split_why, template_diff, verified_line

CHARS_PER_TOKEN = 3
DEFAULT_MAX_TOKENS = 1500
#: the smallest budget the command line accepts: the header and the top suggestion's id
#: and verify command need about 150 tokens with long paths
MIN_TOKENS = 200
_WHY_MAX = 6  # why-lines shown for a kernel; a skeleton with more is rare and the rest repeat
_LINE_MAX = 240  # characters of one why-line or caveat


def estimate_tokens(text: str) -> int:
    """The token estimate the budget is held to: ceil(len(text) / CHARS_PER_TOKEN)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass
class _Entry:
    """One (kernel, suggestion) pair; ``pos`` is the suggestion's rank for that kernel."""

    r: KernelResult
    s: Suggestion
    pos: int

    def key(self) -> tuple:
        return (TIERS.index(self.s.kind), self.pos, -self.s.score, self.r.line_start)


def groups(results: list[KernelResult]) -> list[list[_Entry]]:
    """The suggestions grouped by skeleton, best group first; in a group, the kernel it
    suits best first. A group ranks by its best entry: tier, then that kernel's own rank,
    then score; a skeleton that fits more kernels breaks ties."""
    by_id: dict[str, list[_Entry]] = {}
    for r in results:
        for pos, s in enumerate(r.suggestions):
            by_id.setdefault(s.id, []).append(_Entry(r, s, pos))
    out = [sorted(es, key=_Entry.key) for es in by_id.values()]
    out.sort(key=lambda es: (es[0].key(), -len(es), es[0].s.id))
    return out


def top_suggestion(results: list[KernelResult]) -> tuple[KernelResult, Suggestion] | None:
    """The (kernel, suggestion) the block leads with, or None when nothing is suggested."""
    gs = groups(results)
    return (gs[0][0].r, gs[0][0].s) if gs else None


def verify_command(path: str, skeleton_id: str, kernel: str | None = None) -> str:
    """The command that checks the change: the original file against a changed copy beside
    it, named after the skeleton so several attempts do not collide. A file that is not a
    harness itself (docs/harness.md) first gets one from `skel harness`, in the working folder."""
    p = Path(path)
    candidate = p.with_name(f"{p.stem}_{skeleton_id.replace('-', '_')}{p.suffix or '.py'}")
    verify = f"skel verify {shlex.quote(path)} {shlex.quote(str(candidate))} --skeleton {skeleton_id}"
    try:
        text = p.read_text(encoding="utf-8", errors="replace") if p.suffix == ".py" else ""
    except OSError:  # a path the caller names but this process cannot read: said as for a kernel file
        text = "\n"
    if not text or ("SHAPES" in text and "def make_inputs" in text) or "def get_inputs" in text:
        return verify  # CUDA C++, a harness or a KernelBench problem: verify reads it as it is
    harness = shlex.quote(f"{p.stem}_harness.py")  # in the working folder: the line stays short
    name = f" --kernel {shlex.quote(kernel)}" if kernel else ""
    return f"skel harness {shlex.quote(path)}{name} -o {harness} && {verify} --harness {harness}{name}"


def _clip(line: str, n: int = _LINE_MAX) -> str:
    line = " ".join(line.split())
    return line if len(line) <= n else line[: n - 1] + "…"


def _why(e: _Entry) -> list[str]:
    lines = [f"- {_clip(w)}" for w in e.s.why[:_WHY_MAX]]
    if len(e.s.why) > _WHY_MAX:
        lines.append(f"- … {len(e.s.why) - _WHY_MAX} more")
    lines += [f"- missing: {_clip(m)}" for m in e.s.missing[:3]]
    return lines


def _kind(s: Suggestion) -> str:
    bits = [s.label] if s.label else []
    if s.probability is not None:  # an agent weighs a suggestion by how often such ones were right
        bits.append(f"p {s.probability:.2f}" + (", below threshold" if s.below_threshold else ""))
    return f" ({'; '.join(bits)})" if bits else ""


def _also(e: _Entry, top: _Entry) -> str:
    """Another kernel the skeleton fits, in one line: a reason already given for the first
    kernel is shown by its line numbers only."""
    known = {split_why(w)[0] for w in top.s.why}
    parts = []
    for w in e.s.why[:3]:
        detail, lines = split_why(w)
        parts.append(f"line {', '.join(map(str, lines))}" if detail in known and lines else w)
    parts += [f"missing: {m}" for m in e.s.missing[:1]]
    return _clip(f"- `{e.r.kernel}` (lines {e.r.line_start}-{e.r.line_end}){_kind(e.s)}: " + "; ".join(parts), 300)


def _names(kernels: list[str], width: int = 300) -> str:
    """"Same change for: `a`, `b` and 9 more", whole names only, within ``width``."""
    if not kernels:
        return ""
    shown: list[str] = []
    for i, k in enumerate(kernels):
        rest = len(kernels) - i - 1
        line = "Same change for: " + ", ".join([*shown, f"`{k}`"]) + (f" and {rest} more" if rest else "")
        if len(line) > width and shown:
            break
        shown.append(f"`{k}`")
    rest = len(kernels) - len(shown)
    return "Same change for: " + ", ".join(shown) + (f" and {rest} more" if rest else "")


class _Block:
    """The pieces of one skeleton group, rendered in a fixed order; which are included is
    decided by the budget."""

    ORDER = ("heading", "summary", "why", "also", "diff", "location", "evidence", "check")  # "others": in "also"

    def __init__(self, n: int, es: list[_Entry]):
        top = es[0]
        s, r = top.s, top.r
        self.id = s.id
        self.kernels = len(es)
        shared = f" — one template for {len(es)} kernels here" if len(es) > 1 else ""
        self.pieces: dict[str, str] = {
            "heading": f"\n## {n}. `{s.id}` — {s.title}{_kind(s)}{shared}",
            "summary": _clip(s.summary, 400),
            "why": "\n".join([f"Fits `{r.kernel}` (lines {r.line_start}-{r.line_end}) because:", *_why(top)]),
            "diff": "```diff\n" + template_diff(s) + "\n```" if s.before or s.after else "",
            "location": (f"Seen in: {s.evidence[0].source} `{s.evidence[0].file}:{s.evidence[0].line}` "
                         f"({s.evidence[0].function})") if s.evidence else "",
            "evidence": _clip(f"Evidence: {verified_line(s)}; "
                              + (f"hand-checked: {checked_line(s)}; " if s.track_record else "")
                              + evidence_line(s)
                              + "".join(f"; {c}" for c in s.caveats if not c.startswith("missing: ")), 500),
            "check": f"Check: `{verify_command(r.path, s.id)}`",
        }
        # the other kernels it fits: same template, their own lines ("refer to it from the others")
        self.also = [_also(e, top) for e in es[1:]]
        # the same, by name only: cheap enough to go with the headline; the lines above replace it
        self.pieces["others"] = _names([e.r.kernel for e in es[1:]])
        # what a piece shrinks to when the whole does not fit: the why, down to its first line
        self.short = {"why": "\n".join([f"Fits `{r.kernel}` (lines {r.line_start}-{r.line_end}) because:",
                                        *_why(top)[:1], *(["- …"] if len(_why(top)) > 1 else [])])}
        self.included: set[str] = set()
        self.also_shown = 0

    def render(self) -> list[str]:
        out = []
        for name in self.ORDER:
            if name == "also":
                if self.also_shown:
                    out.append("Same change for:")
                    out.extend(self.also[: self.also_shown])
                    if self.also_shown < len(self.also):
                        out.append(f"- … and {len(self.also) - self.also_shown} more kernels")
                elif "others" in self.included and self.pieces["others"]:
                    out.append(self.pieces["others"])
            elif name in self.included and self.pieces[name]:
                out.append(self.pieces[name])
        return out


def prompt(results: list[KernelResult], max_tokens: int = DEFAULT_MAX_TOKENS) -> str:
    """The suggestions for a file as one markdown block of at most ``max_tokens``
    estimated tokens (``estimate_tokens``), most useful first (see the module docstring).
    The top suggestion's id and verify command are always included, even when a budget
    below ``MIN_TOKENS`` cannot hold them. The file's path appears up to four times (title,
    the check command twice, the closing line): with a long absolute path a 300-token budget
    may hold little more than those."""
    budget = max_tokens * CHARS_PER_TOKEN
    gs = groups(results)
    paths = sorted({r.path for r in results})
    fitting = [r for r in results if any(s.kind in ("match", "refine") for s in r.suggestions)]
    none = [r.kernel for r in results if r not in fitting]
    where = ", ".join(f"`{p}`" for p in paths[:3]) or "(no file)"
    head = [f"# skel suggestions: {where} — {len(results)} kernel{'s' if len(results) != 1 else ''}, "
            f"{len(fitting)} with a fitting skeleton"]
    if none:
        head.append(_clip(f"No skeleton fits: {', '.join(f'`{k}`' for k in none)}.", 300))
    head.extend(_why_not(results))
    if not gs:
        checked = max((r.considered for r in results), default=0)
        head.append(f"No skeleton applies ({checked} checked per kernel), and none comes close.")
    blocks = [_Block(n, es) for n, es in enumerate(gs, 1)]
    fits = [b for b, es in zip(blocks, gs) if es[0].s.kind in ("match", "refine")]
    rest = [b for b, es in zip(blocks, gs) if es[0].s.kind not in ("match", "refine")]
    notes = sorted({n for r in results for n in r.notes} | {
        f"ruled out by evidence: `{d['id']}` ({d['status']} here): {d['line']}"
        for r in results for d in r.ruled_out_by_evidence} | {
        f"conditional for `{r.kernel}`: `{d['id']}` {d['reason']}" + (f"; give `{d['needs']}`" if d["needs"] else "")
        for r in results for d in r.conditional})
    note_text = "\n".join(_clip(f"> {n}", 300) for n in notes)

    # the closing line's worst case is reserved up front so it always fits
    full = f"`skel suggest {shlex.quote(paths[0]) if paths else 'FILE'} --format markdown`"
    reserve = len(f"\n_Left out for the {max_tokens}-token budget: 9999 pieces. Everything: {full}._") + 1
    used = sum(len(h) + 1 for h in head) + reserve

    def take(block: _Block, *names: str, force: bool = False) -> bool:
        nonlocal used
        texts = [block.pieces[n] for n in names if n not in block.included and block.pieces[n]]
        cost = sum(len(t) + 1 for t in texts)
        if not force and used + cost > budget:
            shrink = [n for n in names if n in block.short and n not in block.included]
            if not shrink:
                return False
            for n in shrink:  # the short form for good: a later retry must not count the long one
                block.pieces[n] = block.short.pop(n)
            return take(block, *names)
        used += cost
        block.included.update(names)
        return True

    def take_also(block: _Block) -> None:
        nonlocal used
        for line in block.also[block.also_shown:]:
            extra = len(line) + 1 + (len("Same change for:") + 1 if not block.also_shown else 0)
            # "- … and N more kernels" is reserved whenever a line is left out after this one
            tail = len("- … and 999 more kernels") + 1 if block.also_shown + 1 < len(block.also) else 0
            if used + extra + tail > budget:
                break
            used += extra
            block.also_shown += 1
        if block.also_shown < len(block.also) and block.also_shown:
            used += len(f"- … and {len(block.also) - block.also_shown} more kernels") + 1

    # 1-2: the top suggestion, whole
    if blocks:
        take(blocks[0], "heading", "check", force=True)
        for name in ("why", "others", "diff", "location", "evidence", "summary"):
            take(blocks[0], name)
    # 3: every other fitting skeleton's headline; 4: their details
    for b in fits[1:]:
        if take(b, "heading", "why", "check"):
            take(b, "others")
    for b in fits[1:]:
        if "heading" in b.included:
            for name in ("diff", "location", "evidence", "summary"):
                take(b, name)
    # 5: the other kernels each fitting skeleton fits
    for b in fits:
        if "heading" in b.included:
            take_also(b)
    # 6: near misses and related, then the notes
    for b in rest:
        if b is blocks[0] or take(b, "heading", "why", "check"):
            for name in ("others", "evidence", "summary", "location", "diff"):
                take(b, name)
            take_also(b)
    notes_in = bool(note_text) and used + len(note_text) + 1 <= budget
    if notes_in:
        used += len(note_text) + 1

    out = list(head)
    if notes_in:
        out.append(note_text)
    for b in blocks:
        if "heading" in b.included:
            out.extend(b.render())
    left = _left_out(blocks) + (1 if note_text and not notes_in else 0)
    if left:
        out.append(f"\n_Left out for the {max_tokens}-token budget: {left} piece{'s' if left != 1 else ''}. "
                   f"Everything: {full}._")
    return "\n".join(out).strip("\n") + "\n"


def _why_not(results: list[KernelResult]) -> list[str]:
    """The skeletons the caller asked about by name (``--why-not``), always included: the
    verdict for each kernel and the first conditions that fail, each line clipped."""
    out = []
    for r in results:
        for e in r.why_not:
            out.append(_clip(f"Why not `{e['id']}` for `{r.kernel}`: {e['verdict']}", 300))
            out.extend(f"- fails: {_clip(f)}" for f in e["fails"][:3])
            if len(e["fails"]) > 3:
                out.append(f"- … {len(e['fails']) - 3} more conditions fail")
    return out


def _left_out(blocks: list[_Block]) -> int:
    n = 0
    for b in blocks:
        n += sum(1 for name, text in b.pieces.items()
                 if text and name not in b.included and not (name == "others" and b.also_shown))
        n += len(b.also) - b.also_shown
    return n
