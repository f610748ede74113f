"""Suggestions as text (terminal), markdown (agent prompts) or JSON (programs)."""

from __future__ import annotations

import json

from skel.retriever.suggest import WEIGHTS, KernelResult, Suggestion
from skel.retriever.wording import checked_line, evidence_line, split_why, template_diff, verified_line


def _dropped_lines(r: KernelResult) -> list[str]:
    """Skeletons left out because the authors' notes rule them out, with their words,
    because their own runs in the target environment do, because they do not pay at the
    sizes given; then the conditional ones (their payoff waits on a size) and those held
    back for a low probability."""
    return ([f"  dropped: {d['id']} — ruled out by the authors (line {d['line']}): \"{d['quote']}\""
             for d in r.dropped] + [f"  ruled out by evidence: {d['id']} — {d['status']} here: {d['line']}"
                                    for d in r.ruled_out_by_evidence]
            + [f"  does not pay here: {d['id']} — {d['reason']}" for d in r.not_paying]
            + [f"  no-op here: {d['id']} — {d['reason']}" for d in r.no_op]
            + [f"  conditional: {d['id']} — {d['reason']}" + (f"; give {d['needs']}" if d["needs"] else "")
               for d in r.conditional]
            + ([f"  held back (probability of being right under {r.threshold:.2f}; --all lists them): "
                + ", ".join(f"{d['id']} ({d['probability']:.2f})" for d in r.held_back)]
               if r.held_back and r.threshold is not None and not any(s.below_threshold for s in r.suggestions)
               else []))


def machine_line(m: dict) -> str:
    """`--compile`'s facts in one line."""
    occ = m["occupancy"]
    line = (f"{m['registers']} registers, {m['spilled_bytes']} B spilled, {m['shared_bytes']} B shared, "
            f"{m['num_warps']} warps: {occ['fraction']:.0%} occupancy ({occ['limited_by']}); widest load "
            f"{m['widest_load_bytes']} B, store {m['widest_store_bytes']} B; mma {m['mma']}; {m['mufu']} MUFU ops")
    return line + (f" (assumed: {'; '.join(m['assumed'])})" if m["assumed"] else "")


def _likelihood(s: Suggestion) -> str:
    """The suggestion's probability of being right, as the header shows it."""
    if s.probability is None:
        return ""
    return f"; p {s.probability:.2f}" + (" BELOW THRESHOLD" if s.below_threshold else "")


def _why_not_facts(e: dict) -> list[tuple[str, str]]:
    """One `--why-not` entry's conditions on the kernel, labelled, in the order shown."""
    return ([("already uses it", h) for h in e["present"]] + [("holds", h) for h in e["holds"]]
            + [("fails", f) for f in e["fails"]] + [("environment", n) for n in e["environment"]])


def _why_not_lines(r: KernelResult) -> list[str]:
    """`--why-not ID`: each skeleton's verdict, then its conditions on this kernel."""
    out = []
    for e in r.why_not:
        out.append(f"  why not {e['id']}: {e['verdict']}")
        out.extend(f"    {label}: {text}" for label, text in _why_not_facts(e))
    return out


def _why_not_markdown(r: KernelResult) -> list[str]:
    """The same as `_why_not_lines`, as markdown: kept with the kernel's heading when an
    answer is cut to a token budget, since the caller asked for it by name."""
    out = []
    for e in r.why_not:
        out.append(f"**Why not `{e['id']}`**: {e['verdict']}")
        out.extend(f"- {label}: {text}" for label, text in _why_not_facts(e))
        out.append("")
    return out


def applies(r: KernelResult) -> bool:
    """Some skeleton fits on structure (a full match or a refinement): what exit code 0
    means. Near misses and related techniques are shown, labelled, but are not that."""
    return any(s.kind in ("match", "refine") for s in r.suggestions)


def _tag(s: Suggestion) -> str:
    return f"; {s.label.upper()}" if s.label else ""


def _counts(r: KernelResult) -> str:
    kinds = [s.kind for s in r.suggestions]
    parts = [f"{kinds.count(k)} {name}" for k, name in (("match", "match"), ("refine", "refinement"),
                                                         ("near-miss", "near miss"), ("related", "related"))
             if kinds.count(k)]
    return ", ".join(parts)


def _measured(s: Suggestion) -> str:
    """"measured 1.48x on NVIDIA H200" from the runs behind the status, or ""."""
    v = s.verification
    if not v.speedup or v.speedup <= 1.0:
        return ""
    timed = [r for r in v.records if r.speedup and r.measure == "kernel" and r.device]
    best = max(timed, key=lambda r: r.speedup or 0.0) if timed else None
    devices = sorted({r.device for r in timed if r.device})
    # the speedup is the geomean over every GPU the runs come from: name them all, not the best run's alone
    where = f" on {' and '.join(devices)}" if devices else ""
    if s.status == "stale" and best is not None and best.triton:  # measured, but not on the target's Triton
        where += f" with Triton {'.'.join(best.triton.split('.')[:2])}"
    return f"measured {v.speedup:.2f}x{where}"


def _share(x: float) -> str:
    return f"{x:.0%}" if x >= 0.005 else "under 1%"


def ranked_by(s: Suggestion, r: KernelResult) -> str:
    """What put the suggestion where it is, in words, for one line under it: the tier and
    measured evidence first (they decide before any score), then the score's weightiest
    components (``skel.retriever.suggest.WEIGHTS``) that say something about this kernel;
    "" when nothing does. ``--explain`` prints the components themselves."""
    basis = s.verification.basis or s.verification.status
    first = []
    if s.kind == "related":
        first.append("only its words match your kernel (no structural fit), ranked by them")
    if s.status == "refuted" or basis.value == "refuted":
        first.append("refuted where it was measured: last of its tier")
    elif basis.value == "no-effect":
        first.append("measured no effect: below the untested ones of its tier")
    c = s.components
    said: list[tuple[float, str]] = []
    if measured := _measured(s):
        said.append((WEIGHTS["evidence"] * c.get("evidence", 0.0), measured))
    if c.get("support", 0.0) >= 0.05:
        said.append((WEIGHTS["support"] * c["support"],
                     f"mined kernels like yours use it ({c['support']:.0%} of the nearest, by similarity)"))
    if c.get("facts", 0.0) >= 0.3:
        said.append((WEIGHTS["facts"] * c["facts"],
                     f"a mined kernel using it shares {c['facts']:.0%} of your kernel's structure"))
    held = round(c.get("specificity", 0.0) * 3)
    if held >= 2:
        said.append((WEIGHTS["specificity"] * c["specificity"],
                     f"{held}{' or more' if held == 3 else ''} of its conditions hold at lines of yours"))
    if r.store_kernels >= 20 and c.get("rarity", 0.0) >= 0.9:  # a share of a handful says nothing
        said.append((WEIGHTS["rarity"] * c["rarity"],
                     f"its conditions single your kernel out (they fit {_share(1.0 - c['rarity'])} of mined kernels)"))
    if c.get("bound") == 1.0:
        bound = (r.profile or {}).get("bound")
        said.append((WEIGHTS["bound"], f"it addresses the {bound}-bound bottleneck" if bound else
                     "it addresses the bottleneck given"))
    if s.kind != "related" and c.get("lexical", 0.0) >= 0.75:
        said.append((WEIGHTS["lexical"] * c["lexical"], "its documentation shares words with your kernel"))
    if s.occurrences and c.get("prevalence", 0.0) >= 0.5:
        said.append((WEIGHTS["prevalence"] * c["prevalence"], f"{s.occurrences} mined kernels use it"))
    said.sort(key=lambda t: -t[0])
    return "; ".join(first + [words for _, words in said[:3]])


def text(results: list[KernelResult], show_template: bool = True, explain: bool = False) -> str:
    """The answer for a terminal. ``explain`` adds each suggestion's ranking components
    (the ``rank:`` line: the numbers its score sums, as JSON always carries them)."""
    out: list[str] = []
    for r in results:
        head = f"{r.kernel}  {r.path}:{r.line_start}-{r.line_end}"
        if not applies(r):
            out.append(f"{head}\n  no skeleton applies ({r.considered} checked)"
                       + (f"; already uses: {', '.join(r.present)}" if r.present else ""))
            out.extend(f"  note: {note}" for note in r.notes)
            out.extend(_dropped_lines(r))
            out.extend(_why_not_lines(r))
            if not r.suggestions:
                out.append("")
                continue
            out.append(f"  below: {_counts(r)} — each says what it lacks")
        else:
            out.append(f"{head}\n  {len(r.suggestions)} suggestion(s) ({_counts(r)}) from {r.considered} skeletons; "
                       f"{r.store_kernels} mined kernels in the knowledge base")
            if r.workload:
                out.append(f"  sizes: {r.workload}")
            if r.machine:
                out.append(f"  machine code: {machine_line(r.machine)}")
            if r.present:
                out.append(f"  already uses: {', '.join(r.present)}")
            for note in r.notes:
                out.append(f"  note: {note}")
            out.extend(_dropped_lines(r))
            out.extend(_why_not_lines(r))
        for i, s in enumerate(r.suggestions, 1):
            out.append("")
            out.append(f"  {i}. {s.id} — {s.title}   [{s.category}; {s.status}{_likelihood(s)}; score "
                       f"{s.score:.2f}{_tag(s)}]")
            out.append(f"     {s.summary}")
            if s.payoff:
                out.append(f"     pays here: {s.payoff['reason']}")
            for w in s.why:
                out.append(f"     why: {w}")
            for c in s.caveats:
                out.append(f"     caveat: {c}")
            out.append(f"     evidence: {evidence_line(s)}")
            for loc in s.evidence:
                sim = f"  similarity {loc.similarity:.2f}" if loc.similarity is not None else ""
                tests = f"  tests: {', '.join(loc.tests)}" if loc.tests else ""
                out.append(f"       - {loc}{sim}{tests}")
            out.append(f"     verified: {verified_line(s)}")
            if s.track_record:
                out.append(f"     hand-checked: {checked_line(s)}")
            if reason := ranked_by(s, r):
                out.append(f"     ranked by: {reason}")
            if explain:
                comps = " ".join(f"{k}={v:.2f}" for k, v in s.components.items())
                out.append(f"     rank: {comps} (score {s.score:.2f}; weights in skel/retriever/suggest.py)")
            if show_template:
                out.append("     template:")
                out.extend("       " + ln for ln in template_diff(s).splitlines())
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def brief(results: list[KernelResult]) -> str:
    """One line per suggestion, as linters print (``path:line: id — title``), for hooks
    and CI logs; the line is the first one the why names, else the kernel's."""
    out = []
    for r in results:
        for s in r.suggestions:
            lines = [n for w in s.why for n in split_why(w)[1]]
            what = f" [{s.label}]" if s.label else ""
            out.append(f"{r.path}:{lines[0] if lines else r.line_start}: {s.id} — {s.title}{what} "
                       f"(kernel {r.kernel}; {s.status})")
    return "".join(line + "\n" for line in out)


def markdown(results: list[KernelResult]) -> str:
    out: list[str] = []
    for r in results:
        out.append(f"## `{r.kernel}` ({r.path}:{r.line_start}-{r.line_end})")
        if r.present:
            out.append(f"Already uses: {', '.join(f'`{p}`' for p in r.present)}.")
        for note in r.notes:
            out.append(f"> {note}")
        out.extend(f"> dropped `{d['id']}`: ruled out by the authors (line {d['line']}): \"{d['quote']}\""
                   for d in r.dropped)
        out.extend(f"> ruled out by evidence: `{d['id']}` ({d['status']} here): {d['line']}"
                   for d in r.ruled_out_by_evidence)
        out.extend(f"> does not pay here: `{d['id']}`: {d['reason']}" for d in r.not_paying)
        out.extend(f"> no-op here: `{d['id']}`: {d['reason']}" for d in r.no_op)
        if r.machine:
            out.append(f"> machine code: {machine_line(r.machine)}")
        out.extend(f"> conditional: `{d['id']}`: {d['reason']}" + (f"; give `{d['needs']}`" if d["needs"] else "")
                   for d in r.conditional)
        if r.held_back and r.threshold is not None and not any(s.below_threshold for s in r.suggestions):
            out.append(f"> held back (probability of being right under {r.threshold:.2f}; `--all` lists them): "
                       + ", ".join(f"`{d['id']}` ({d['probability']:.2f})" for d in r.held_back))
        out.extend(_why_not_markdown(r))
        if not applies(r):
            out.append(f"No skeleton applies ({r.considered} checked)."
                       + (f" Below: {_counts(r)}, each saying what it lacks." if r.suggestions else ""))
            out.append("")
            if not r.suggestions:
                continue
        for i, s in enumerate(r.suggestions, 1):
            out.append(f"### {i}. `{s.id}` — {s.title}" + (f" ({s.label})" if s.label else ""))
            out.append(f"{s.summary} *({s.category}; {s.status}{_likelihood(s)}; score {s.score:.2f})*")
            if s.payoff:
                out.append(f"Pays here: {s.payoff['reason']}")
            out.append("")
            out.append("**Why it applies**" if s.kind == "match" else "**What holds, and what is missing**")
            out.extend(f"- {w}" for w in s.why)
            out.extend(f"- caveat: {c}" for c in s.caveats)
            out.append("")
            out.append(f"**Evidence**: {evidence_line(s)}")
            out.extend(f"- `{loc.source}` `{loc.file}:{loc.line}` `{loc.function}`" for loc in s.evidence)
            out.append(f"- verified: {verified_line(s)}")
            if s.track_record:
                out.append(f"- hand-checked: {checked_line(s)}")
            out.append("")
            out.append("```diff")
            out.append(template_diff(s))
            out.append("```")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def as_json(results: list[KernelResult]) -> str:
    return json.dumps({"kernels": [r.to_dict() for r in results]}, indent=2)


def prompt(results: list[KernelResult], max_tokens: int = 1500) -> str:
    """One markdown block fitted to ``max_tokens`` estimated tokens, most useful first
    (``skel.retriever.prompt``: what goes first, how tokens are estimated)."""
    # with the SARIF format: 3 ms to import, which the default (text) `skel suggest` must not pay
    from skel.retriever.prompt import prompt as fitted

    return fitted(results, max_tokens)


def sarif(results: list[KernelResult], base: str | None = None) -> str:
    """SARIF 2.1.0 for code scanning: one result per suggestion (``skel.retriever.sarif``)."""
    from skel.retriever.sarif import sarif_log  # see prompt(): loaded for its format only

    return json.dumps(sarif_log(results, base), indent=2)
