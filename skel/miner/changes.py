"""What changed in one kernel between two versions of a file, in facts people can read.

History mining (skel/miner/history.py) hands this module a kernel's cached extraction
before and after a commit — facts, the techniques the catalog detects (``uses``) and the
lines each detection points at (``lines``) — and gets back:

- techniques introduced or removed (in ``uses`` on one side only);
- techniques *refined*: detected on both sides, but the facts on the lines that evidence
  them changed (an autotune gaining a key or configs, a launch gaining a flag, more
  ``tl.exp2`` calls). Facts are compared without line numbers, so moving code is no change;
- for a change no technique explains, the tracked launch and tile facts that changed
  (num_warps, num_stages, BLOCK sizes, autotune configs, new ``tl.*`` calls; in CUDA C++
  the intrinsics, PTX and library calls), and whether the commit message reads like an
  optimisation. Together they make a draft candidate, unless the message reads as a fix or
  a revert (``fix_not_optimisation``);
- for a draft, the *normalised edit* of its kernel model (``edit``): what the change did in
  words that do not depend on the repository's names or values ("+ call tl.range(num_stages)",
  "fewer call tl.load", "launch num_warps up", "+ constexpr sequence length"), so the same
  technique applied in two repositories reads the same and can be grouped
  (skel/miner/candidates.py).
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
# "rms_norm: fix ...", "[Bugfix] ...", "Bug fix ...", "Hotfix ...", "[kunlunxin]fix-all",
# "[AMD] Fix ..." (bracketed tags first)
_FIX = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*\W*(?:[\w./-]+(?:\([^)]*\))?:\s*)?\[?\s*"
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
    cuda = f.get("language") == "cuda"
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
        if not on(c["line"]) or (lines is None and not (cuda_call(c["name"]) if cuda
                                                         else c["name"].startswith(("tl.", "libdevice.")))):
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


# --- the normalised edit of a kernel model ---------------------------------------------

# CUDA C++ calls that say how a kernel works in any repository (intrinsics, inline PTX,
# library primitives), not the repository's own helpers
_CUDA_CALL = re.compile(r"^(?:__\w+|ptx:|asm$|atomic\w*|cuda[A-Z]\w*|cu[A-Z]\w*|(?:cute|cub|cutlass|cuda|cg|"
                        r"cooperative_groups|wmma|nvcuda|thrust)::)")
# Triton calls that say how a kernel works (tl.*, libdevice, the method casts)
_TRITON_CALL = re.compile(r"^(?:tl\.|triton\.language\.|libdevice\.|tl_math\.|triton\.)")
# calls whose number matters: one load fewer is a fused or cached read, one dot more a split
COUNTED = re.compile(r"^call (?:tl\.(?:load|store|dot|atomic_\w+|exp2?|log2?|sum|max|min|where|cumsum|"
                     r"reduce|associative_scan|make_block_ptr|advance|program_id|debug_barrier)|"
                     r"__syncthreads|__syncwarp|__shfl\w*|atomic\w*|ptx:\S+|cast to \w+)\b|constexpr |"
                     r"shared memory$|vector type$|pragma unroll$|launch$")
# CUDA C++ spellings an edit counts (however formatted), and comments, which it ignores
_CUDA_WORDS = [(re.compile(r"\b__shared__\b"), "shared memory"), (re.compile(r"\b__restrict__\b"), "__restrict__"),
               (re.compile(r"\b__launch_bounds__\b"), "__launch_bounds__"),
               (re.compile(r"#\s*pragma\s+unroll\b"), "pragma unroll")]
_CUDA_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# keyword arguments of a load or store that change what it costs
_MEMORY_KW = {"mask", "other", "boundary_check", "padding_option", "cache_modifier", "eviction_policy",
              "volatile"}
# vector types (`float4`, `half2`, `__nv_bfloat162`): vectorised memory access
_VECTOR_TYPE = re.compile(r"^(?:__nv_)?(?:float|half|bfloat16|double|u?int|u?char|u?short|u?long)[248]$")
_CONSTEXPR_FAMILIES = (
    ("block size", re.compile(r"^(?:BLOCK|TILE|BK|BM|BN|BS|BT|BD|BV|BH|BLK|B_)|BLOCK|_BLOCK|TILE", re.I)),
    ("flag", re.compile(r"^(?:IS|HAS|USE|ENABLE|EVEN|NO|DO|SAVE|STORE|RETURN|APPLY)_|_FLAG$", re.I)),
    ("pipeline depth", re.compile(r"STAGE|PIPE|PREFETCH", re.I)),
    ("warps or groups", re.compile(r"WARP|GROUP|SPLIT|NUM_", re.I)),
    ("sequence length", re.compile(r"^(?:T|S|L|N_CTX|SEQ\w*|\w*_?SEQLEN\w*|\w*LEN\w*|MAX_T|CTX)$", re.I)),
    ("dimension", re.compile(r"^(?:D|K|V|H|HEAD\w*|DIM\w*|\w*_DIM|HD|DK|DV|HV|HK|M|N)$", re.I)),
    ("dtype", re.compile(r"DTYPE|TYPE$", re.I)),
)


def cuda_call(name: str) -> bool:
    """Is this CUDA C++ call one that says how a kernel works anywhere (an intrinsic such
    as ``__shfl_xor_sync``, inline PTX, ``atomicAdd``, a CUDA API, CuTe/CUB/CUTLASS)?"""
    return bool(_CUDA_CALL.match(name))


def _call_name(name: str, language: str) -> str:
    """The call as an edit names it ("" for calls of the repository's own): PTX by its
    instruction's first two parts (``ptx:cp.async``), a namespaced call by namespace and
    name (``cute::copy``)."""
    if language == "cuda":
        if not cuda_call(name):
            return ""
        if name.startswith("ptx:"):
            return "ptx:" + ".".join(name[4:].split(".")[:2])
        parts = name.split("::")
        return f"{parts[0]}::{parts[-1]}" if len(parts) > 2 else name
    if name.startswith("triton.language."):
        name = "tl." + name.removeprefix("triton.language.")
    return name if _TRITON_CALL.match(name) else ""


def _short_value(text: str) -> str:
    """A keyword's value as an edit keeps it: a short string literal or True/False as
    written, anything else (a name, a number, an expression) as "…"."""
    t = _norm(text)
    if re.fullmatch(r"'[\w.\-]{1,24}'|True|False|None", t):
        return t
    return "…"


def _dtype(text: str) -> str:
    """``tl.float32`` -> ``float32``; "" for what is not a dtype name."""
    last = text.strip().split(".")[-1]
    return last if re.fullmatch(r"u?int\d+|float\d+\w*|bfloat16|fp\d+\w*", last) else ""


def constexpr_family(name: str) -> str:
    """What a constexpr/template parameter is for, read from its name: "block size",
    "flag", "pipeline depth", "warps or groups", "sequence length", "dimension", "dtype",
    else "other"."""
    for family, pattern in _CONSTEXPR_FAMILIES:
        if pattern.search(name):
            return family
    return "other"


def model_tokens(f: dict[str, Any]) -> tuple[Counter, dict[str, float]]:
    """(tokens, scalars) of one kernel model: the calls, loops, decorators, parameters,
    launches and value kinds that say how it works, named without the repository's own
    names; and numbers an edit compares (loop depth, launch num_warps ...)."""
    lang = f.get("language", "triton")
    tok: Counter = Counter()
    scalars: dict[str, float] = {}
    for c in f.get("calls", []):
        name = c["name"]
        if lang != "cuda" and name == ".to":
            dt = _dtype(c["args"][0]) if c.get("args") else ""
            if dt:
                tok[f"call cast to {dt}"] += 1
            continue
        call = _call_name(name, lang)
        if not call:
            continue
        tok[f"call {call}"] += 1
        for kw, v in sorted(c.get("kwargs", {}).items()):
            if kw in CALL_KW or (call in ("tl.load", "tl.store") and kw in _MEMORY_KW):
                value = _short_value(v) if kw not in ("mask", "other") else ""
                tok[f"call {call}({kw}{'=' + value if value and value != '…' else ''})"] += 1
    depth = 0
    for lp in f.get("loops", []):
        depth = max(depth, lp.get("depth", 1))
        kind = lp["kind"]
        if kind not in ("range", "for", "range-for", "while", "do"):
            tok[f"loop {kind}"] += 1
        for kw, v in sorted(lp.get("kwargs", {}).items()):
            tok[f"loop {kind}({kw}{'=' + v if kw == 'pragma' else ''})"] += 1
        tok["loop"] += 1
    scalars["loop depth"] = depth
    for d in f.get("decorators", []):
        name = d["name"].removeprefix("triton.")
        if name in ("template", "__global__"):
            continue
        if name != "jit":
            tok[f"decorator {name}"] += 1
        for kw in d.get("kwargs", {}):
            if kw not in ("configs", "key"):
                tok[f"decorator {name}({kw})"] += 1
        if name == "autotune":
            scalars["autotune configs"] = d.get("config_count", 0)
            scalars["autotune keys"] = len(d.get("list_items", []))
    constexprs = 0
    for p in f.get("params", []):
        if not p.get("name"):
            continue
        if p.get("constexpr"):
            constexprs += 1
            tok[f"constexpr {constexpr_family(p['name'])}"] += 1
        tok[f"param {p['name']}"] += 1  # for "became constexpr" (never an edit token itself)
    scalars["constexpr parameters"] = constexprs
    scalars["parameters"] = sum(1 for p in f.get("params", []) if p.get("name"))
    for ln in f.get("launches", []):
        tok["launch"] += 1
        for kw, v in ln.get("kwargs", {}).items():
            if kw in TUNING_KW:
                tok[f"launch {kw}"] += 1
                if re.fullmatch(r"\d+", v.strip()):
                    scalars[f"launch {kw}"] = max(scalars.get(f"launch {kw}", 0), int(v))
        if ln.get("grid_is_callable"):
            tok["launch grid from the meta-parameters"] += 1
        grid = " ".join([ln.get("grid", ""), *ln.get("grid_sources", [])])
        if re.search(r"multi_processor_count|num_sms|NUM_SMS|sm_count|SM_COUNT", grid):
            tok["launch grid sized by the SM count"] += 1
    for kind in f.get("var_dtypes", {}).values():
        tok[f"{kind} values"] += 1
    for t in f.get("var_types", {}).values():
        base = re.sub(r"^(?:const\s+)?|\s*[*&]+$", "", t.strip())
        if _VECTOR_TYPE.match(base):
            tok["vector type"] += 1
    if lang == "cuda":
        src = _CUDA_COMMENT.sub(" ", f.get("source", ""))  # a comment or a reformatting changes nothing
        for pattern, token in _CUDA_WORDS:
            if n := len(pattern.findall(src)):
                tok[token] += n
    scalars["lines"] = f.get("line_end", 0) - f.get("line_start", 0) + 1
    return tok, scalars


# tokens that only feed other edits (a parameter by name) or say too little on their own
_INTERNAL = re.compile(r"^param ")
# scalars compared as "more X" / "fewer X", and the launch values compared as "up" / "down"
_SCALARS = ("loop depth", "autotune configs", "autotune keys", "constexpr parameters", "parameters")


def edit(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The normalised edit of a kernel between two versions (cached extraction entries, as
    ``compare`` takes): "+ X" / "- X" for what appeared or went (a call, a call's keyword,
    a loop kind, a decorator, a constexpr parameter's family, a launch keyword), "more X" /
    "fewer X" for counted calls and kernel-wide numbers, "launch num_warps up/down",
    "+ constexpr <family> (was a runtime parameter)" for a parameter made constexpr (and the
    reverse), "kernel longer/shorter" when it grew or shrank by more than a quarter. Names
    and values of the repository never appear, so two repositories' same change read the same."""
    fb, fa = before["facts"], after["facts"]
    tb, sb = model_tokens(fb)
    ta, sa = model_tokens(fa)
    out: list[str] = []
    for t in sorted(set(ta) - set(tb)):
        if not _INTERNAL.match(t):
            out.append(f"+ {t}")
    for t in sorted(set(tb) - set(ta)):
        if not _INTERNAL.match(t):
            out.append(f"- {t}")
    for t in sorted(set(ta) & set(tb)):
        if COUNTED.match(t) and ta[t] != tb[t]:
            out.append(f"{'more' if ta[t] > tb[t] else 'fewer'} {t}")
    for name in _SCALARS:
        b, a = sb.get(name), sa.get(name)
        if b is not None and a is not None and a != b:
            out.append(f"{'more' if a > b else 'fewer'} {name}")
    for name in sorted(k for k in set(sa) & set(sb) if k.startswith("launch ")):
        if sa[name] != sb[name]:
            out.append(f"{name} {'up' if sa[name] > sb[name] else 'down'}")
    pb = {p["name"]: p.get("constexpr", False) for p in fb.get("params", []) if p.get("name")}
    for p in fa.get("params", []):
        name = p.get("name")
        if name in pb and pb[name] != p.get("constexpr", False):
            family = constexpr_family(name)
            out.append(f"+ constexpr {family} (was a runtime parameter)" if p.get("constexpr")
                       else f"- constexpr {family} (now a runtime parameter)")
    lb, la = sb.get("lines", 0), sa.get("lines", 0)
    if lb and la and abs(la - lb) > lb / 4:
        out.append("kernel longer" if la > lb else "kernel shorter")
    return out
