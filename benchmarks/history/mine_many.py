"""History at scale (issue #38, part 1): ``skel mine --history`` over many public kernel
repositories, Triton and CUDA C++, before the clean commit benchmark's cutoff only.

    python -m benchmarks.history.mine_many                       # the whole run, into ~/.cache/skel-history
    python -m benchmarks.history.mine_many --fresh --log benchmarks/results/history-at-scale-2026-12-07.txt
    python -m benchmarks.history.mine_many --repos fla-org/flash-linear-attention --max-commits 50
    skel skeletons candidates --store ~/.cache/skel-history/store   # then: the drafts grouped

For each repository in ``REPOS`` (owner/name on GitHub, and the languages its kernels are
written in):

1. its bare mirror (``$SKEL_BENCH_MIRRORS/<owner>+<name>/repo``, else a bare clone made once
   under ``~/.cache/skel-bench``: ``benchmarks.retrieval.repos.ensure``) is cloned with
   ``git clone --bare --shared`` (no object copied) into ``<home>/repos/<owner>+<name>.git``
   with its GitHub URL as ``origin``: the history store then labels it ``owner/name`` and
   ``skel skeletons candidates`` links each instance to its commit on GitHub. The mirror is
   never written to;
2. ``skel mine --history`` (``skel.api.mine_history``) reads its first-parent commits up to the
   last one committed before ``--until`` (the clean commit benchmark's cutoff,
   ``benchmarks.retrieval.clean.CUTOFF``), all of them unless ``--max-commits`` N caps it
   (the newest N before the cutoff: a cost bound; the whole run takes minutes on 2 cores),
   with ``--jobs`` parser processes, into ``<home>/store``; the facts cache is the run's own
   (``<home>/skel-home``), so ``--fresh`` makes a cold run.

A line per repository is printed as it finishes (revision and its date, commits read of those
before the cutoff, events, drafts, seconds), then a table and the totals. The run is
incremental: run it again and every repository is up to date (``--fresh`` starts over; the
facts cache, ``~/.cache/skel``, keeps parsed files across runs, so a fresh run parses less).
``--budget`` stops starting new repositories after that many seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a file too, not only with -m
    sys.path.insert(0, str(ROOT))

from benchmarks.retrieval import repos  # noqa: E402  (after the path is set)
from benchmarks.retrieval.clean import CUTOFF  # noqa: E402

HOME = Path(os.environ.get("SKEL_HISTORY_HOME", Path.home() / ".cache" / "skel-history"))

#: (owner/name, languages of its kernels): the nine clean-benchmark repositories first, then
#: kernel repositories of both languages
REPOS: list[tuple[str, str]] = [
    ("fla-org/flash-linear-attention", "Triton"),
    ("linkedin/Liger-Kernel", "Triton"),
    ("ROCm/aiter", "Triton, CUDA/HIP C++"),
    ("pytorch/ao", "Triton, CUDA C++"),
    ("InternLM/lmdeploy", "Triton, CUDA C++"),
    ("FlagOpen/FlagGems", "Triton"),
    ("mobiusml/gemlite", "Triton"),
    ("unslothai/unsloth", "Triton"),
    ("meta-pytorch/tritonbench", "Triton"),
    ("Dao-AILab/flash-attention", "CUDA C++, Triton"),
    ("flashinfer-ai/flashinfer", "CUDA C++"),
    ("ModelTC/lightllm", "Triton"),
    ("deepseek-ai/DeepGEMM", "CUDA C++"),
    ("facebookresearch/xformers", "Triton, CUDA C++"),
    ("bitsandbytes-foundation/bitsandbytes", "CUDA C++, Triton"),
    ("hpcaitech/ColossalAI", "Triton, CUDA C++"),
    ("thu-ml/SageAttention", "Triton, CUDA C++"),
    ("apple/ml-cross-entropy", "Triton"),
    ("state-spaces/mamba", "Triton, CUDA C++"),
    ("turboderp/exllamav2", "CUDA C++"),
    ("HazyResearch/ThunderKittens", "CUDA C++"),
    ("BobMcDear/attorch", "Triton"),
    ("pytorch-labs/applied-ai", "Triton, CUDA C++"),
    ("mit-han-lab/llm-awq", "CUDA C++"),
    ("IST-DASLab/marlin", "CUDA C++"),
    ("triton-lang/kernels", "Triton"),
]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), *args], check=True, capture_output=True, text=True,
                          errors="replace", timeout=600).stdout.strip()


def linked_clone(name: str, home: Path) -> Path:
    """A bare clone of ``name``'s mirror sharing its objects, with the GitHub URL as origin."""
    dest = home / "repos" / f"{name.replace('/', '+')}.git"
    if not (dest / "HEAD").is_file():
        mirror = repos.ensure(name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--quiet", "--bare", "--shared", str(mirror), str(dest)], check=True,
                       timeout=600)
        git(dest, "remote", "set-url", "origin", f"https://github.com/{name}.git")
    return dest


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the parser workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, default=HOME, help=f"where the clones and the store go (default {HOME})")
    ap.add_argument("--until", default=CUTOFF, help=f"read commits before this date only (default: the clean "
                    f"commit benchmark's cutoff, {CUTOFF})")
    ap.add_argument("--max-commits", type=int, default=0,
                    help="per repository: the newest N commits before --until that change kernel-language files "
                    "(default 0: all of them; the whole run takes minutes on 2 cores)")
    ap.add_argument("--jobs", type=int, default=2, help="parser processes (default 2)")
    ap.add_argument("--repos", nargs="*", metavar="OWNER/NAME", help="only these (default: all of REPOS)")
    ap.add_argument("--budget", type=float, default=3300.0,
                    help="seconds; no repository is started after this much wall time (default 3300)")
    ap.add_argument("--fresh", action="store_true",
                    help="delete the history store and the run's facts cache first (not the clones): a cold run")
    ap.add_argument("--facts-cache", type=Path, default=None,
                    help="skel's facts cache for this run (SKEL_HOME; default <home>/skel-home, so the run neither "
                    "reads nor fills ~/.cache/skel)")
    ap.add_argument("--log", type=Path, help="also write everything printed to this file")
    args = ap.parse_args(argv)

    log = open(args.log, "w", encoding="utf-8") if args.log else None  # noqa: SIM115 - closed at the end

    def say(line: str = "") -> None:
        print(line, flush=True)
        if log:
            log.write(line + "\n")
            log.flush()

    store = args.home / "store"
    skel_home = args.facts_cache or args.home / "skel-home"
    for path in (store, skel_home / "cache") if args.fresh else ():
        if path.exists():
            shutil.rmtree(path)
    os.environ["SKEL_HOME"] = str(skel_home)  # skel's facts cache: <skel_home>/cache (the store is given)

    from skel import api  # here: the path above is set first
    from skel.tables import table

    chosen = [(n, lang) for n, lang in REPOS if not args.repos or n in args.repos]
    unknown = set(args.repos or []) - {n for n, _ in REPOS}
    chosen += [(n, "?") for n in sorted(unknown)]
    cap = args.max_commits or None
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    say(f"# skel mine --history over {len(chosen)} repositories (issue #38), "
        f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    say(f"skel checkout {head.stdout.strip()}{'+dirty' if dirty else ''}; python {sys.version.split()[0]}; "
        f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f} at the start")
    say(f"cutoff (--until): {args.until} (benchmarks/retrieval/clean.py CUTOFF): only first-parent commits committed "
        "before it are read")
    say(f"cost bound: --max-commits {cap or 'none (every commit before the cutoff)'} per repository"
        + (" (the newest commits before the cutoff that change .py or CUDA C++ files; older ones are left unread)"
           if cap else "") + f", --jobs {args.jobs}, budget {args.budget:.0f} s of wall time")
    say(f"store: {store}; facts cache: {skel_home / 'cache'}"
        + (" (emptied first: a cold run)" if args.fresh else " (kept from earlier runs)"))
    say()
    rows = []
    t_all, cpu0 = time.perf_counter(), cpu_seconds()
    for i, (name, lang) in enumerate(chosen, 1):
        elapsed = time.perf_counter() - t_all
        if elapsed > args.budget:
            say(f"[{i}/{len(chosen)}] {name}: not started, the budget ({args.budget:.0f} s) is spent")
            continue
        try:
            clone = linked_clone(name, args.home)
            rev, when = repos.last_commit_before(clone, args.until)
        except (subprocess.SubprocessError, RuntimeError, OSError) as exc:
            say(f"[{i}/{len(chosen)}] {name}: skipped ({exc})")
            continue
        t0 = time.perf_counter()
        report = api.mine_history(str(clone), until=args.until, max_commits=cap, jobs=args.jobs, store=str(store))
        seconds = time.perf_counter() - t0
        events = sum(report.events.values())
        listed = report.listed if not report.up_to_date else 0
        say(f"[{i}/{len(chosen)}] {report.repo} ({lang}) @ {rev[:10]} ({when[:10]}): "
            + ("up to date" if report.up_to_date else
               f"{report.commits_read} of {listed} commits read ({report.commits_kernels} touching kernels, "
               f"{report.parsed} files parsed, {report.cached} from cache), {events} events "
               f"({', '.join(f'{k} {v}' for k, v in sorted(report.events.items()))}), {report.drafts} drafts")
            + f", {seconds:.1f} s" + (f"; {report.left} older left unread" if report.left else ""))
        for note in report.notes:
            say(f"    note: {note}")
        rows.append([report.repo, lang, rev[:10], when[:10], report.commits_read, listed, report.commits_kernels,
                     events, report.drafts, len(report.skipped), f"{seconds:.1f}"])
    wall, cpu = time.perf_counter() - t_all, cpu_seconds() - cpu0
    say()
    say(table(["repo", "languages", "revision", "its date", "commits read", "before cutoff", "touching kernels",
               "events", "drafts", "files skipped", "seconds"], rows, max_width=200))
    hs_events = api.history_events(store=str(store))
    hs_drafts = api.drafts(store=str(store))
    say()
    say(f"total: {len(rows)} repositories, {sum(r[4] for r in rows)} commits read "
        f"({sum(r[6] for r in rows)} touching kernels), {sum(r[7] for r in rows)} events, "
        f"{sum(r[8] for r in rows)} drafts, {wall:.0f} s wall ({wall / 60:.1f} min), {cpu:.0f} s CPU")
    langs: dict[str, int] = {}
    for d in hs_drafts:
        langs[d.language] = langs.get(d.language, 0) + 1
    say(f"store now: {len(hs_events)} events, {len(hs_drafts)} drafts "
        f"({', '.join(f'{k} {v}' for k, v in sorted(langs.items()))}), "
        f"load average {os.getloadavg()[0]:.2f} at the end")
    capped = [r for r in rows if r[5] > r[4]]
    if capped:
        say(f"--max-commits left older commits unread in {len(capped)} repositories: "
            + ", ".join(f"{r[0]} ({r[5] - r[4]})" for r in capped) + " (a re-run with a larger cap reads them)")
    if log:
        log.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
