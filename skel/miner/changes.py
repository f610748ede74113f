"""What changed in one kernel between two versions of a file, in facts people can read.

History mining (skel/miner/history.py) hands this module a kernel's cached extraction
before and after a commit — facts, the techniques the catalog detects (``uses``) and the
lines each detection points at (``lines``) — and gets back:

- techniques introduced or removed (in ``uses`` on one side only);
- techniques *refined*: detected on both sides, but the facts on the lines that evidence
  them changed (an autotune gaining a key or configs, a launch gaining a flag, more
  ``tl.exp2`` calls). Facts are compared without line numbers, so moving code is no change;
- for a change no technique explains, the tracked launch and tile facts that changed
  (num_warps, num_stages, BLOCK sizes, autotune configs, new ``tl.*`` calls), and whether
  the commit message reads like an optimisation. Together they make a draft candidate,
  unless the message reads as a fix or a revert (``fix_not_optimisation``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

# launch keywords that tune a kernel rather than pass its data
TUNING_KW = {"num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim", "kpack",
             "launch_pdl", "enable_fp_fusion"}
# call keywords that change how a tl.* call is compiled, not what it reads
# (masks, boundary checks and atomics' semantics change what a call means: not tracked)
CALL_KW = {"eviction_policy", "cache_modifier", "input_precision", "allow_tf32", "out_dtype", "num_stages",
           "loop_unroll_factor", "flatten", "warp_specialize", "disallow_acc_multi_buffer", "max_ops",
           "fp_downcast_rounding"}
# whole words only: `fused_recurrent` (a module name) or `perf_counter` is not a claim
OPTIMISATION_WORDS = re.compile(
    r"\b(speed(?:s|up|ups|-up)?|faster|fast|optimi[sz](?:e|ed|es|ing|ation|ations)|perf(?:ormance)?|"
    r"fus(?:e|ed|es|ing|ion|ions)|throughput|latency|memory|accelerat(?:e|ed|es|ion)|efficien(?:t|cy)|"
    r"bandwidth|occupancy|autotun(?:e|ed|es|ing)|tuning|tuned?)\b", re.I)
_NUMBER = re.compile(
    r"(?<![\w.])([-+~]?\d+(?:\.\d+)?)(?:([x×])(?![\w])|\s*(%|ms|us|µs|μs|ns|sec|s|tflops|gflops|tb/s|gb/s)(?![\w/]))"
    r"(?:\s+(less memory|memory|faster|slower|speed-?up|throughput|latency|reduction|improvement))?", re.I)


# a test runner's or progress bar's output pasted in a message: its percentages and times
# are progress, not claims ("tests/x.py::t PASSED  [ 12%]", "[ 6%] Building", " 45%|####  |",
# "==== 16 passed in 3.21s ====")
_PROGRESS_MARK = re.compile(r"\[\s*\d{1,3}(?:\.\d+)?\s*%\s*\]")
_PROGRESS_LINE = re.compile(
    r"\.py::|\d\s*%\s*\||^\s*=+.*\b(?:passed|failed|errors?|skipped|deselected|warnings?)\b.*=+\s*$|"
    r"^\s*(?:collected|collecting)\s+\d+\s+items?\b", re.I)
# pytest's own spelling, case and all: "PASSED", "tests/test_x.py ..F.s"
_OUTCOME = re.compile(r"\b(?:PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b|\.py\s+(?=[sFExX]*\.)[.sFExX]{2,}(?:\s|$)")


def _claims_text(message: str) -> str:
    """The message without the lines of a test run or progress bar pasted in it (one that
    starts or ends with a bracketed percentage ``[ 6%]``, a pytest result, a ``45%|###`` bar)
    and without bracketed percentages wherever else they are."""
    kept = []
    for line in message.splitlines():
        marks = list(_PROGRESS_MARK.finditer(line))
        at_edge = marks and (not line[:marks[0].start()].strip() or not line[marks[-1].end():].strip())
        if not (at_edge or _PROGRESS_LINE.search(line) or _OUTCOME.search(line)):
            kept.append(_PROGRESS_MARK.sub(" ", line))
    return "\n".join(kept)


def numbers(message: str) -> list[str]:
    """The measurements a commit message states: "1.5x", "30%", "2.1 ms", "-20% memory".
    Numbers in a pasted test run or progress bar (``tests/x.py::t PASSED [ 12%]``,
    ``[ 6%] ...``, ``45%|###``, ``== 16 passed in 3.21s ==``) are progress, not claims."""
    out = []
    for m in _NUMBER.finditer(_claims_text(message)):
        value, times, unit, what = m.groups()
        text = f"{value}{times}" if times else f"{value}{'' if unit == '%' else ' '}{unit}"
        out.append(f"{text} {what}" if what else text)
    return list(dict.fromkeys(out))


def optimisation_words(message: str) -> list[str]:
    return list(dict.fromkeys(m.group(0).lower() for m in OPTIMISATION_WORDS.finditer(message)))


# a subject that says the commit repairs something: "Fix ...", "fix: ...", "fix(rope): ...",
# "rms_norm: fix ...", "[Bugfix] ...", "Bug fix ...", "Hotfix ..."
_FIX = re.compile(r"^\W*(?:[\w./-]+(?:\([^)]*\))?:\s*)?\[?\s*"
                  r"(?:bug\s*-?\s*fix|hot\s*-?\s*fix|fix)(?:e[sd]|ing)?\b", re.I)
_REVERT = re.compile(r"^\W*revert\b", re.I)
_SPEEDUP_WORDS = re.compile(r"\b(?:speed-?ups?|speeds?\s+up|faster)\b", re.I)


def states_speedup(message: str) -> bool:
    """Does the message claim a speed-up: "1.5x", "30% faster", "speedup", "faster"?"""
    claims = numbers(message)
    return bool(_SPEEDUP_WORDS.search(_claims_text(message))) or any(
        c.split()[0][-1] in "x×" or c.endswith(("faster", "speedup", "speed-up", "throughput")) for c in claims)


def fix_not_optimisation(message: str) -> str:
    """Why a commit reads as a fix, not an optimisation ("" when it does not): a revert
    always; a subject saying fix/bugfix/hotfix unless the message also claims a speed-up."""
    subject = message.strip().splitlines()[0] if message.strip() else ""
    if _REVERT.search(subject):
        return "a revert"
    if _FIX.search(subject) and not states_speedup(message):
        return "a fix"
    return ""


def _norm(text: str) -> str:
    return " ".join(text.replace('"', "'").split())


def _configs(text: str) -> list[str]:
    """Each ``Config(...)`` of an autotune's ``configs=`` text (whitespace-normalised), and
    each ``for X in [...]`` a generated list ranges over."""
    out, i = [], 0
    while (i := text.find("Config(", i)) >= 0:
        depth, j = 0, i + len("Config")
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        out.append("".join(text[i + len("Config("):j].split()).replace('"', "'"))
        i = j
    out += [f"{var} in {''.join(vals.split())}" for var, vals in re.findall(r"for\s+(\w+)\s+in\s+(\[[^\]]*\])", text)]
    return out


def facts(f: dict[str, Any], lines: set[int] | None = None, *, whole: bool = False) -> Counter:
    """Tracked facts of a kernel as readable strings (a multiset, no line numbers).

    ``lines`` keeps the facts on those lines (a technique's evidence); None keeps every
    tracked fact of the kernel. ``whole`` adds what a launch/tile change shows kernel-wide:
    the constexpr parameters and the set of ``tl.*`` calls."""
    def on(n: int) -> bool:
        return lines is None or n in lines

    out: Counter = Counter()
    for d in f.get("decorators", []):
        if d["name"] == "triton.jit" or not on(d["line"]):
            continue
        name = d["name"].removeprefix("triton.")
        for item in d.get("list_items", []):
            out[f"{name} key {item.strip(chr(39) + chr(34))}"] += 1
        for kw, v in d.get("kwargs", {}).items():
            if kw == "configs":
                out.update(f"{name} config {c}" for c in _configs(v))
            elif kw != "key":
                out[f"{name}({kw}={_norm(v)[:60]})"] += 1
    for c in f.get("calls", []):
        if not on(c["line"]) or (lines is None and not c["name"].startswith(("tl.", "libdevice."))):
            continue
        kws = ", ".join(f"{k}={_norm(v)}" for k, v in sorted(c["kwargs"].items()) if k in CALL_KW)
        key = f"{c['name']}({kws})"
        if lines is None:
            out[key] = 1  # kernel-wide: which calls, not how many (an edit adds a tl.load)
        else:
            out[key] += 1
    for lp in f.get("loops", []):
        if on(lp["line"]) and (lines is not None or lp["kind"] != "range" or lp["kwargs"]):
            kws = ", ".join(f"{k}={_norm(v)}" for k, v in sorted(lp["kwargs"].items()))
            out[f"loop {lp['kind']}({kws})"] += 1
    for ln in f.get("launches", []):
        if lines is not None and not on(ln["line"]):
            continue
        for kw, v in ln["kwargs"].items():
            if kw in TUNING_KW or kw.isupper():
                out[f"launch {kw}={_norm(v)}"] += 1
        if ln.get("grid_is_callable"):
            out["launch grid is a function of the meta-parameters"] += 1
    if whole or (lines is not None and f["line_start"] in lines):
        for p in f.get("params", []):
            if p["constexpr"]:
                out[f"constexpr {p['name']}" + (f"={p['default']}" if p.get("default") else "")] += 1
    return out


def diff(before: Counter, after: Counter) -> list[str]:
    """"+ fact" for what appeared (or grew), "- fact" for what went, sorted."""
    added = after - before
    gone = before - after
    return sorted(f"+ {k}" + (f" (x{n})" if n > 1 else "") for k, n in added.items()) + \
        sorted(f"- {k}" + (f" (x{n})" if n > 1 else "") for k, n in gone.items())


def evidence(entry: dict[str, Any], technique: str) -> Counter:
    """The facts on the lines a technique's detection points at ("lines" of the entry)."""
    lines = entry.get("lines", {}).get(technique)
    return facts(entry["facts"], set(lines)) if lines else Counter()


def launch_facts(entry: dict[str, Any]) -> Counter:
    """The kernel's launches as tracked facts: a launcher edit changes the kernel's story
    even when the kernel's own source is untouched."""
    return facts({"launches": entry["facts"].get("launches", []), "line_start": -1})


def compare(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[tuple[str, str, list[str]]], list[str]] | None:
    """(techniques changed as (technique, kind, facts changed), kernel-wide tracked facts
    changed), or None when neither the kernel's source nor its launches changed."""
    fb, fa = before["facts"], after["facts"]
    if fb["source"] == fa["source"] and launch_facts(before) == launch_facts(after):
        return None
    ub, ua = set(before.get("uses", [])), set(after.get("uses", []))
    changes: list[tuple[str, str, list[str]]] = []
    for t in sorted(ua - ub):
        changes.append((t, "introduced", diff(evidence(before, t), evidence(after, t))))
    for t in sorted(ub - ua):
        changes.append((t, "removed", diff(evidence(before, t), evidence(after, t))))
    for t in sorted(ua & ub):
        changed = diff(evidence(before, t), evidence(after, t))
        if changed:
            changes.append((t, "refined", changed))
    tracked = diff(facts(fb, whole=True), facts(fa, whole=True))
    return changes, tracked
