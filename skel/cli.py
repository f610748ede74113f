"""skel's command line: a thin adapter over ``skel.api``.

Each command parses its options, calls one service function, renders the typed result and
picks the exit code; the root group turns failures into one line on stderr. Everything
heavy (libcst, chromadb, numpy, sentence-transformers) is imported inside the functions
that need it, so `skel --help` stays instant (a test proves it).
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import NoReturn

import click

from skel import api
from skel.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_NO_SUGGESTION, EXIT_OK, NoKernelError, SkelError, UsageError

STORE_HELP = ("Knowledge base: a directory, or http://HOST:PORT for a shared Chroma server "
              "(`chroma run --path DIR --port N`). Default: $SKEL_HOME/store, else ~/.local/share/skel/store. "
              "A --store given to read from must exist (a typo is an error, not a catalog-only answer); "
              "without --store, nothing mined yet means the built-in catalog answers alone.")


def target_options(f):
    """--backend/--arch/--triton/--gpu: the environment suggestions and statuses are for."""
    f = click.option("--gpu", metavar="NAME",
                     help="Only evidence measured on this GPU (H100, H200); default: any. A part of the "
                          "device name, any case: H100 and H200 are both sm_90, --arch cannot tell them apart.")(f)
    f = click.option("--triton", "triton_version", metavar="X.Y.Z",
                     help="Target Triton version (default: the installed one).")(f)
    f = click.option("--arch", metavar="smNN", help="Target architecture, e.g. sm80, sm90, sm100.")(f)
    f = click.option("--backend", type=click.Choice(["cuda", "rocm"]),
                     help="Target backend (unknown: no filtering, caveats shown).")(f)
    return f


class _Skel(click.Group):
    """The root group: every failure leaves as exactly one line on stderr and exit 2.

    A ``SkelError`` is expected and says what to fix (``skel: error: ...``). Any other
    exception is a bug in skel; it is named in one line too, because exit 1 means "no
    skeleton applies" and a traceback exit would read as that to a script. ``--debug``
    prints the traceback for either. A usage error (a bad option value, a missing
    argument) is one line too, with the command whose --help explains it. A closed
    standard output (``skel mine ... | head``) ends quietly with status 141, as a tool
    killed by SIGPIPE would.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            _usage_line(exc)
        except BrokenPipeError:  # --help or --version into a closed pipe
            if not _stdout_closed():
                raise
            _closed_pipe()

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            _usage_line(exc)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # click's own exits and aborts keep click's handling
        except KeyboardInterrupt:
            # click would print "Aborted!" and exit 1, which means "no skeleton applies" here;
            # `skel mine` says more itself (the store is consistent, run it again)
            click.echo("\nskel: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except SkelError as exc:
            if ctx.params.get("debug"):
                _print_traceback()
            click.echo(f"skel: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - the last line of defence, by design
            if isinstance(exc, BrokenPipeError) and _stdout_closed():
                _closed_pipe()
            if ctx.params.get("debug"):
                _print_traceback()
            else:
                what = ": ".join(filter(None, [type(exc).__name__, " ".join(str(exc).split())]))
                click.echo(f"skel: internal error: {what} (run with --debug for the traceback)", err=True)
            ctx.exit(EXIT_ERROR)


EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader left


def _usage_line(exc: click.UsageError):
    """A usage error as one line on stderr and exit 2 (click would print the usage block);
    ``skel GROUP`` without a subcommand still shows the group's help."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        raise exc
    where = exc.ctx.command_path if exc.ctx else "skel"
    click.echo(f"skel: error: {exc.format_message()} (see `{where} --help`)", err=True)
    raise click.exceptions.Exit(exc.exit_code)


def _stdout_closed() -> bool:
    """Is standard output a pipe whose reader has gone? (A broken pipe to a child process
    is a different failure, reported as such.) poll(2) flags the write end POLLERR."""
    import select  # not loaded by `skel --help`, which must not get slower: only a broken pipe asks
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no real stdout (an embedding program)
        return False


def _closed_pipe():
    """The reader of standard output went away: nothing more can be said there, and saying
    it on stderr would only be noise. Point stdout at /dev/null so the final flush at
    exit cannot fail again, and leave with 141."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (an embedding program): nothing to redirect
        pass
    raise click.exceptions.Exit(EXIT_CLOSED_PIPE)


def _print_traceback() -> None:
    import traceback  # 1 ms to import, on every command's start-up: only --debug prints one

    traceback.print_exc(file=sys.stderr)


@click.group(cls=_Skel, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="skel", prog_name="skel")
@click.option("--debug", is_flag=True, help="On an error, print the Python traceback.")
def cli(debug: bool) -> None:
    """Mine GPU-kernel optimisation techniques from real code, and suggest the ones that fit
    your Triton or CUDA kernel — ranked, explained and backed by real locations.

    \b
    Typical use:
      skel mine --package liger_kernel      # mine an installed package
      skel mine ~/src/flash-linear-attention  # or a checkout
      skel suggest my_kernel.py             # what has worked on kernels like this?
      skel suggest gemm.cu                  # CUDA C++ too (.cu .cuh .cpp .hpp .h)
      skel suggest my_kernel.py --bound memory --arch sm90 --format markdown
      skel suggest my_kernel.py --profile ncu.csv  # rank by the measured bottleneck
      skel suggest my_kernel.py --format prompt --max-tokens 800  # one block for an agent
      skel suggest - --stdin-name k.cu < k.cu  # from an editor; --format sarif for code scanning
      skel skeletons list                   # the catalog

      skel verify original.py candidate.py  # same results? faster? (see `skel verify --help`)

    Exit codes: 0 success (suggestions found), 1 no suggestion, 2 error; `skel verify` adds
    3-8, one per verdict (see its --help).
    """


# --- mine --------------------------------------------------------------------------------

@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=str))
@click.option("--package", "package", metavar="NAME", help="Mine an installed Python package (e.g. liger_kernel, fla).")
@click.option("--source", metavar="NAME",
              help="Name recorded for this source (default: directory or distribution name).")
@click.option("--version", "version", metavar="V", help="Version recorded (default: git HEAD or package version).")
@click.option("--rev", metavar="REV", help="With PATH in a git repository: mine the tree at this commit, branch or tag "
              "(read from git, nothing checked out; version = the commit).")
@click.option("--history", is_flag=True, help="Mine PATH's commit history instead: the techniques each commit "
              "introduced, removed or refined, and drafts for unexplained optimisations (--rev: up to this commit).")
@click.option("--since", metavar="DATE", help="With --history: only commits after DATE (first run of a repository).")
@click.option("--until", metavar="DATE", help="With --history: stop at the last first-parent commit committed before "
              "DATE (YYYY-MM-DD is midnight UTC), e.g. a benchmark's cutoff; a later run without it continues after "
              "that commit.")
@click.option("--max-commits", type=click.IntRange(1, None), default=None,
              help="With --history: read the newest N commits (as `git log -n N`); the next run reads the "
              "older ones left (and any new ones).")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Parser processes (default: up to 2).")
@click.option("--exclude", "exclude", metavar="GLOB", multiple=True,
              help="Leave out files whose relative path, a folder above them or their name matches GLOB "
              "(repeatable), e.g. --exclude 'third_party/*' --exclude '*_generated.py'.")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
@click.option("--replace", is_flag=True, help="When the store already has a source of this name mined from other "
              "code (another folder named the same): delete it and mine this one in its place (default: refuse).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--no-progress", is_flag=True, help="No progress bar (automatic when not a terminal).")
def mine(path, package, source, version, rev, history, since, until, max_commits, jobs, exclude, store, replace,
         as_json, no_progress):
    """Mine a repository, folder, file or installed package into the knowledge base
    (a repository at another revision with --rev; its commit history with --history).

    Finds every @triton.jit kernel (all spellings, stacked under autotune/heuristics) with
    libcst, and in C++/CUDA files (.cu .cuh .cpp .hpp .h) every __global__ kernel and every
    function bound to Python (pybind11/nanobind .def) with tree-sitter; records which
    catalog techniques each uses, where (path, function, lines,
    version) and which tests exercise it. Unchanged files are skipped on re-mines; bad
    files are reported and skipped; an interrupted mine resumes where it stopped.

    With --history, PATH is a git repository (bare ones too): every first-parent commit
    that changes a kernel file (.py for Triton; .cu .cuh .cpp .hpp .h for CUDA C++) is
    compared before/after; a re-run reads only new commits. --since/--until bound the
    commits by date (`skel skeletons candidates` then groups the unexplained changes).
    """
    if exclude and history:
        raise click.UsageError("--exclude does not go with --history")
    if history:
        if replace:
            raise click.UsageError("--replace goes with a plain mine, not --history")
        _mine_history(path, package, source, version, rev, since, until, max_commits, jobs, store, as_json,
                      no_progress)
        return
    if since or until or max_commits:
        raise click.UsageError("--since, --until and --max-commits go with --history")
    import time  # built in: costs `skel --help` nothing

    progress = MineProgress(sys.stderr, show=not (no_progress or as_json) and sys.stderr.isatty())
    started = time.perf_counter()
    try:
        report = api.mine(path, package=package, rev=rev, source=source, version=version, jobs=jobs,
                          store=store, progress=progress, replace=replace, exclude=exclude)
    except KeyboardInterrupt:
        progress.close()
        _leave_interrupted("the store is consistent")
    finally:
        progress.close()
    # "in N s" is the whole mine: the walks before the miner starts (is the tree unchanged?) too
    report.seconds = max(report.seconds, time.perf_counter() - started)

    if as_json:
        click.echo(__import__("json").dumps(report.to_dict(), indent=2))
        return
    from skel.tables import table  # 0.4 ms to import, which `skel --help` must not pay

    if report.replaced:
        r = report.replaced
        click.echo(f"replaced source {report.source} mined from {r['origin'] or r['root']}: deleted its "
                   f"{r['kernels']} kernels ({r['files']} files)")
    click.echo(f"mined {report.source} {report.version} from {report.root} in {report.seconds:.1f}s")
    click.echo(table(["files", "kernel files", "kernels", "parsed", "from cache", "unchanged", "removed", "skipped"],
                     [[report.files, report.kernel_files, report.kernels, report.parsed, report.cached,
                       report.unchanged, report.removed, len(report.skipped)]]))
    if report.techniques:
        click.echo("\ntechniques found (kernels using each):")
        click.echo(table(["technique", "kernels"], [[t, n] for t, n in report.to_dict()["techniques"].items()]))
    if report.skipped:
        click.echo("\nskipped files:")
        click.echo(table(["file", "reason"], [[s.rel, s.reason] for s in report.skipped[:50]]))
        if len(report.skipped) > 50:
            click.echo(f"... and {len(report.skipped) - 50} more (see --json)")


def _leave_interrupted(state: str) -> NoReturn:
    """A Ctrl-C during a mine: one line on stderr and exit 130, at once. What was written
    is consistent at every point (skel/miner/mine.py, skel/store/history.py), so there is
    nothing to undo, and the interpreter's teardown is skipped (``os._exit``): it would run
    while other threads are still inside native code (the embedding model's batch), and a
    native runtime's exit handlers then abort the process ("terminate called without an
    active exception", exit 134). The parser workers were ended on the way here. A second
    Ctrl-C meanwhile is ignored."""
    import signal  # only an interrupted mine needs it

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread (an embedding program): nothing to ignore
        pass
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # stdout closed: what it holds is lost either way
        pass
    try:
        # on a terminal the ^C echoed has no line end: start a line of our own
        sys.stderr.write(("\n" if sys.stderr.isatty() else "")
                         + f"skel: interrupted; {state} — run the same command again to finish.\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(EXIT_INTERRUPTED)


class MineProgress:
    """The mine's progress on a terminal: one bar per stage (parsing, storing), each ended
    on its own line before the next begins, so a shorter line never shows the tail of a
    longer one (``48/1077`` for 48/107), and a label while the last kernels embed."""

    STAGES = {"store": "storing", "model": "embedding the kernels"}

    def __init__(self, file, *, show: bool) -> None:
        self.file, self.show = file, show
        self.stage: str | None = None
        self.bar = None

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self.show:
            return
        stage = label if label in self.STAGES else "parse"  # else a file being parsed
        if stage != self.stage:
            self.close()
            self.stage = stage
            if stage == "model":  # no measure of progress: a label on its own line
                click.echo(f"{self.STAGES[stage]} ...", file=self.file)
            elif total > 0:
                self.bar = click.progressbar(length=total, label=self.STAGES.get(stage, "parsing"),
                                             file=self.file, show_pos=True)
                self.bar.__enter__()
        if self.bar is not None:
            self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)  # finishes the line
            self.bar = None


def _mine_history(path, package, source, version, rev, since, until, max_commits, jobs, store, as_json,
                  no_progress):
    if package or version or not path:
        raise click.UsageError("--history takes PATH, a git repository (not --package or --version)")
    show = not (no_progress or as_json) and sys.stderr.isatty()

    def progress(done: int, total: int, label: str) -> None:
        if show:
            click.echo(f"\r{label}: {done}/{total}", err=True, nl=done >= total)

    try:
        report = api.mine_history(path, rev=rev, since=since, until=until, max_commits=max_commits, source=source,
                                  jobs=jobs, store=store, progress=progress)
    except KeyboardInterrupt:
        _leave_interrupted("the history store is consistent")
    if as_json:
        click.echo(__import__("json").dumps(report.to_dict(), indent=2))
        return
    from skel.tables import table  # 0.4 ms to import, which `skel --help` must not pay

    for note in report.notes:
        click.echo(f"note: {note}")
    if report.up_to_date:
        click.echo(f"history of {report.repo} is up to date at {report.last_commit[:8]}: no new commit to read "
                   f"({report.seconds:.1f}s)")
        return
    if report.start:
        span = f"after {report.start[:8]} to {report.last_commit[:8]}"
    elif report.older and report.older == report.commits_read:
        span = f"up to {report.last_commit[:8]}"
    else:
        span = f"from the first commit to {report.last_commit[:8]}"
    if report.older:
        span += f" ({report.older} older commits an earlier --max-commits run left)"
    if report.until:
        span += f" (the last commit before {report.until})"
    click.echo(f"mined the history of {report.repo} {span} in {report.seconds:.1f}s ({report.jobs} jobs)")
    click.echo(table(["commits walked", "read", "touching kernels", "kernel files", "parsed", "from cache",
                      "introduced", "removed", "refined", "drafts", "skipped"],
                     [[report.commits_walked, report.commits_read, report.commits_kernels, report.files_extracted,
                       report.parsed, report.cached, report.events.get("introduced", 0),
                       report.events.get("removed", 0), report.events.get("refined", 0), report.drafts,
                       len(report.skipped)]]))
    if report.more:
        click.echo(f"read the newest {report.commits_read} of {report.listed} commits (--max-commits); "
                   f"{report.left} older ones are left: run again to read them")
    click.echo("events: `skel history list`; drafts to review: `skel skeletons list --drafts`")


# --- suggest -----------------------------------------------------------------------------

@cli.command()
@click.argument("kernel_file", type=click.Path(path_type=str))
@click.option("--stdin-name", metavar="NAME", default="stdin.py", show_default=True,
              help="With KERNEL_FILE `-` (the kernel on standard input): the file it stands for (an editor "
              "passes the buffer's path); its suffix tells the language (.py Triton; .cu .cuh .cpp .hpp .h "
              "CUDA C++) and answers name it. Give its path (sglang/srt/layers/norm.py) for the facts read "
              "off a path to hold: a serving engine's package, a vendor backend folder.")
@click.option("--kernel", metavar="NAME", help="Only this kernel of the file (default: every kernel).")
@click.option("-k", "top", type=click.IntRange(1, 50), default=5, show_default=True, help="Suggestions per kernel.")
@click.option("--bound", type=click.Choice(["memory", "compute", "latency", "occupancy"]),
              help="What the profile says limits the kernel; ranks techniques that address it first.")
@click.option("--profile", metavar="FILE", type=click.Path(path_type=str),
              help="A profile of the kernel (ncu --csv --page raw, a PyTorch chrome trace, or proton's .hatchet): "
              "sets each kernel's bound from its measured bottleneck and says which metric decided it "
              "(--bound wins).")
@target_options
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "prompt", "sarif"]), default="text",
              show_default=True, help="prompt: one markdown block fitted to --max-tokens, for an agent's prompt; "
              "sarif: SARIF 2.1.0 for code scanning.")
@click.option("--max-tokens", type=click.IntRange(200, None), default=1500, show_default=True,
              help="Prompt format: the block's budget, in estimated tokens (characters / 3).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--no-template", is_flag=True, help="Text format: leave out the before → after templates.")
@click.option("--explain", is_flag=True, help="Text format: also print each suggestion's ranking components "
              "(`rank: support=... evidence=...`, the numbers its score sums; JSON always has them). Without it a "
              "`ranked by:` line says in words what put each suggestion where it is.")
@click.option("--why-not", "why_not", metavar="ID", multiple=True,
              help="Explain skeleton ID for each kernel, listed or not: its verdict, then which of its conditions "
              "hold (with lines) and which fail (repeatable; `skel skeletons list` has the ids).")
@click.option("--shape", "shapes", metavar="NAME=VALUE", multiple=True,
              help="A size the kernel runs at (repeatable): a parameter (`n_cols=4096`), a pointer's tensor shape "
              "(`x_ptr=8192x152064`), or rows / cols / programs / elements / sms. Decides whether size-bound "
              "techniques pay (int64 offsets, several rows per program, persistent grids); without sizes they "
              "are listed as conditional.")
@click.option("--workload", metavar="FILE", type=click.Path(path_type=str),
              help="Sizes from a file: JSON {\"NAME\": VALUE}, or a Python file read without running it "
              "(module-level integers and the tensors `get_inputs()` builds, as in a KernelBench problem).")
@click.option("--no-repo-sizes", "no_repo_sizes", is_flag=True,
              help="Do not read sizes from the repository's tests and benchmarks (by default the calls they make to "
              "the kernel's launcher are read without running them, below --shape and --workload).")
@click.option("--all", "show_all", is_flag=True,
              help="Also list the suggestions whose estimated probability of being right is under the threshold, "
              "marked BELOW THRESHOLD (default: only those above it, so zero to -k entries).")
@click.option("--threshold", type=click.FloatRange(0.0, 1.0), metavar="P",
              help="The estimated probability of being right a suggestion needs to be listed (default: the "
              "shipped model's, or $SKEL_THRESHOLD). 0 lists every fitting technique.")
@click.option("--compile", "compile_", is_flag=True,
              help="Compile each Triton kernel for the target on the CPU (Triton's own compiler, no GPU): show "
              "its registers, spills, occupancy, load widths and MMA kind, and drop a suggestion whose `skel apply` "
              "rewrite compiles to the same machine code. About a second or more per kernel, cached.")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
def suggest(kernel_file, stdin_name, kernel, top, bound, profile, backend, arch, triton_version, gpu, fmt, max_tokens,
            as_json, no_template, explain, why_not, shapes, workload, no_repo_sizes, show_all, threshold, compile_,
            store):
    """Suggest the skeletons that fit the kernels in KERNEL_FILE: the @triton.jit kernels of a
    .py file, or the __global__ kernels and Python-bound functions of a .cu/.cuh/.cpp/.hpp/.h.

    Skeletons whose preconditions hold, whose environment fits and which the kernel does
    not already use come first, each with why it applies (the kernel's lines), the
    evidence (real mined locations) and its before → after template. Below them, labelled:
    refinements of a technique the kernel uses incompletely and, only when nothing else
    fits, near misses (one literal detail missing, named) and related techniques (close in
    words, no structural match); otherwise a note names those.
    Exit 0 needs a match or a refinement. With no mined knowledge base the built-in
    catalog still answers, without locations. KERNEL_FILE `-` reads the kernel from
    standard input (editor integrations; see --stdin-name).
    """
    target = api.parse_target(backend, arch, triton_version, gpu)
    if compile_ and kernel_file != "-":
        api.prestart_compiler(kernel_file, target)  # first: the compiler gets ready while the rest loads
    from skel.retriever import render  # the ranking stage: 50 ms to import; `skel --help` must not pay it

    if kernel_file == "-":
        results = _suggest_stdin(stdin_name, store=store, kernel=kernel, k=top, bound=bound, target=target,
                                 profile=profile, why_not=why_not, shapes=shapes, workload=workload,
                                 show_all=show_all, threshold=threshold, compile=compile_)
    else:
        results = api.suggest(kernel_file, store=store, kernel=kernel, k=top, bound=bound, target=target,
                              profile=profile, why_not=why_not, shapes=shapes, workload=workload,
                              show_all=show_all, threshold=threshold, compile=compile_,
                              repo_sizes=not no_repo_sizes)
    fmt = "json" if as_json else fmt
    if fmt == "json":
        click.echo(render.as_json(results))
    elif fmt == "prompt":
        click.echo(render.prompt(results, max_tokens), nl=False)
    elif fmt == "sarif":
        click.echo(render.sarif(results))
    elif fmt == "markdown":
        click.echo(render.markdown(results), nl=False)
    else:
        click.echo(render.text(results, show_template=not no_template, explain=explain), nl=False)
    # near misses and related techniques are shown, labelled; only a structural fit is a "yes"
    sys.exit(EXIT_OK if any(render.applies(r) for r in results) else EXIT_NO_SUGGESTION)


@cli.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=str))
@click.option("--strict", is_flag=True, help="Exit 2 when a file cannot be analysed (default: report it, exit 0).")
@click.option("-k", "top", type=click.IntRange(1, 50), default=3, show_default=True, help="Suggestions per kernel.")
@target_options
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
def hook(files, strict, top, backend, arch, triton_version, gpu, store):
    """Report the skeletons that fit the kernels in FILES, one line each, for a pre-commit
    hook (.pre-commit-hooks.yaml: id skel-suggest) or CI: report-only, the exit code is 0
    whatever is suggested. Files without a kernel, or not .py/C++/CUDA, are skipped; a
    file that cannot be analysed (does not parse, unreadable) is reported, and fails the
    run with --strict."""
    # the ranking stage and the analysis layer: 50 ms to import; `skel --help` must not pay it
    from skel.kernels.extract import SUFFIXES
    from skel.retriever import render

    target = api.parse_target(backend, arch, triton_version, gpu)
    errors = 0
    for path in files:
        if not path.lower().endswith(SUFFIXES):  # a hook configured wider than kernel files
            continue
        try:
            results = api.suggest(path, store=store, k=top, target=target)
        except NoKernelError:
            continue
        except SkelError as exc:
            errors += 1
            click.echo(f"{path}: error: {exc}", err=True)
            continue
        click.echo(render.brief(results), nl=False)
    sys.exit(EXIT_ERROR if strict and errors else EXIT_OK)


def _suggest_stdin(name: str, **options):
    """Suggestions for the kernel on standard input, as if it were the file ``name``: the
    analysis reads files, so the text goes to a private temporary file at that path (its
    folders kept, `..` and a leading `/` dropped, so facts read off the path — a serving
    engine's package, a vendor backend folder — hold as for the file itself), and results
    and errors are told with ``name``, never the temporary path."""
    import tempfile  # 3 ms to import, on every command's start-up: only standard input needs it

    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..") and not p.endswith(":")]
    if not parts or name.replace("\\", "/").endswith("/"):
        raise UsageError(f"--stdin-name {name!r}: give a file name such as kernel.py or kernel.cu, or its path "
                         "(sglang/srt/layers/kernel.py)")
    text = sys.stdin.buffer.read()
    with tempfile.TemporaryDirectory(prefix="skel-stdin-") as tmp:
        path = Path(tmp).joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
        try:
            results = api.suggest(str(path), **options)
        except SkelError as exc:
            raise type(exc)(str(exc).replace(str(path), name)) from None
    for r in results:
        r.path = name
        r.notes = [n.replace(str(path), name) for n in r.notes]
    return results


# --- verify ------------------------------------------------------------------------------

def _csv(_ctx, _param, value):
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _tolerance(_ctx, _param, value):
    if not value:
        return None
    try:
        atol, rtol = (float(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter("expected ATOL,RTOL, e.g. 1e-5,1e-5") from None
    return atol, rtol


@cli.command(context_settings={"max_content_width": 100})
@click.argument("original", required=False, type=click.Path(path_type=str))
@click.argument("candidate", required=False, type=click.Path(path_type=str))
@click.option("--example", metavar="ID", help="Verify a skeleton's own example pair (original = before, "
              "candidate = after).")
@click.option("--kernel", metavar="NAME", help="The launcher to call in both files (default: run), and the kernel "
              "named in the record.")
@click.option("--skeleton", metavar="ID", help="The technique the change applies: it must be detected in the "
              "candidate.")
@click.option("--harness", metavar="FILE", type=click.Path(path_type=str),
              help="The harness (docs/harness.md) when it is not in ORIGINAL.")
@click.option("--tests", metavar="PATH", multiple=True, help="pytest files or node ids that cover the kernel: run "
              "with the original, then with the candidate in its place (repeatable).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), help="Default: cuda when torch sees a GPU, else cpu "
              "(Triton's interpreter; no timing).")
@click.option("--shapes", metavar="A,B", callback=_csv, help="Harness shape names (default: the device's shapes).")
@click.option("--dtype", metavar="D", help="One dtype (default: every harness dtype; timing uses the first).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--tolerance", metavar="ATOL,RTOL", callback=_tolerance,
              help="Override the harness's tolerance (KernelBench default: 1e-2,1e-2).")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("-v", "--verbose", is_flag=True, help="Text format: list every case checked.")
@click.option("--record/--no-record", default=False, show_default=True,
              help="Write the Verification record to the knowledge base.")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
@click.option("--report", "report_dir", metavar="DIR", type=click.Path(path_type=str),
              help="Also write the run as a page to read or share: DIR/index.html with its plots and result.json "
              "(DIR new, empty, or an earlier report).")
def verify(original, candidate, example, kernel, skeleton, harness, tests, device, shapes, dtype, seed, tolerance,
           fmt, as_json, verbose, record, store, report_dir):
    """Verify that CANDIDATE computes what ORIGINAL does, and whether it is faster.

    \b
    Stages, in order; the first that decides stops the run:
      applied?      the candidate parses, is not the original (no-op), and with
                    --skeleton shows the technique; on a GPU, not the same machine code
      same results  fresh inputs over several shapes and seeds, perturbed shapes,
                    outputs poisoned, NaN/Inf never pass, inputs unchanged, no
                    aliasing, partitioned vs whole (split), error growth (LENGTH)
      tests         the project's tests (--tests) with the candidate in place
      faster?       GPU only: interleaved timing against the noise floor

    \b
    Formats: a skel harness (docs/harness.md: launcher `run` in each file, or
    before/after in one), KernelBench (Model/get_inputs/get_init_inputs in ORIGINAL,
    ModelNew in CANDIDATE), or only --tests.

    \b
    On the CPU the report lists what it could not check (timing, machine code,
    interpreter limits). It never reports a pass for what it did not look at.

    \b
    Exit codes:
      0  faster, or correct and not timed (CPU)
      2  error (bad input, nothing could be checked)
      3  no effect (inside the noise floor)
      4  slower
      5  wrong results, or a cheat caught
      6  not applied, or a no-op
      7  the project's tests fail with the candidate
      8  the candidate does not compile or run
    """
    from skel.verifier import report  # stages and adapters load with their command (`skel --help` stays 30 ms)

    if report_dir:  # a folder it cannot write is said before a run that may take minutes
        from skel.site import prepare, require  # the site adapter loads with its option

        require()
        prepare(report_dir)
    result = api.verify(original, candidate, example=example, kernel=kernel, skeleton=skeleton, harness=harness,
                        tests=list(tests), device=device, shapes=shapes, dtype=dtype, seed=seed, tolerance=tolerance,
                        record=record, store=store)
    fmt = "json" if as_json else fmt
    if fmt == "json":
        click.echo(report.as_json(result))
    elif fmt == "markdown":
        click.echo(report.markdown(result), nl=False)
    else:
        click.echo(report.text(result, verbose=verbose), nl=False)
    if report_dir:
        from skel.site.report import write_report  # after require(): it needs the site extra

        click.echo(f"report: {write_report(result, report_dir)}", err=True)
    sys.exit(result.exit_code)


# --- apply -------------------------------------------------------------------------------

@cli.command("apply", context_settings={"max_content_width": 100})
@click.argument("skeleton_id", metavar="ID")
@click.argument("file", type=click.Path(path_type=str))
@click.option("--kernel", required=True, metavar="NAME", help="The @triton.jit kernel of FILE to rewrite.")
@click.option("-o", "--output", "out", metavar="OUT", type=click.Path(path_type=str),
              help="Write the candidate to OUT (default: print it). FILE is overwritten only when OUT names it.")
@click.option("--json", "as_json", is_flag=True,
              help="Print {id, kernel, changed_lines, output}: output is OUT, or the candidate's source without -o.")
def apply_cmd(skeleton_id, file, kernel, out, as_json):
    """Apply skeleton ID's mechanical codemod to one kernel of FILE: a candidate to verify.

    Skeletons whose template is a mechanical rewrite ship a codemod (`.to(tl.int64)` on the
    program ids of an int32 `pid * stride` address, `tl.exp` -> `tl.exp2(x * LOG2E)`,
    `acc += tl.dot(a, b)` -> `acc = tl.dot(a, b, acc)` ...). The whole file comes back with
    only that kernel (and what the technique touches) rewritten. The candidate is not
    checked for results: run `skel verify` on it.

    \b
    Example:
      skel apply int64-offsets kernel.py --kernel rmsnorm_fwd -o kernel_int64.py
      skel verify kernel.py kernel_int64.py --skeleton int64-offsets --device cpu

    \b
    Exit codes:
      0   applied (the candidate is printed, or written to OUT)
      2   error (unknown ID, FILE unreadable, not UTF-8 or does not parse)
      9   not applicable: the technique is already present, or nothing to rewrite
      10  the skeleton has no codemod: apply its template by hand
      11  FILE has no Triton kernel named NAME
    """
    result = api.apply_skeleton(skeleton_id, file, kernel, out)
    if as_json:
        import json  # 1 ms; only --json prints JSON

        click.echo(json.dumps({"id": result.skeleton, "kernel": result.kernel, "changed_lines": result.changed_lines,
                               "output": out if out is not None else result.source}, indent=2))
    elif out is None:
        click.echo(result.source, nl=False)
    if out is not None and not as_json:
        click.echo(f"wrote {out}: {result.skeleton} applied to {kernel} ({len(result.changed_lines)} line(s) changed); "
                   f"check it: skel verify {file} {out} --skeleton {result.skeleton}", err=True)
    sys.exit(EXIT_OK)


# --- harness -----------------------------------------------------------------------------

@cli.command("harness", context_settings={"max_content_width": 100})
@click.argument("kernel_file", metavar="KERNEL.py", type=click.Path(path_type=str))
@click.option("--kernel", metavar="NAME", help="The @triton.jit kernel (needed when the file has several).")
@click.option("-o", "--output", "out", required=True, metavar="FILE", type=click.Path(path_type=str),
              help="Where to write the harness.")
@click.option("--shape", "shapes", multiple=True, metavar="NAME=VALUE",
              help="A size (cols=4096) or a parameter's shape (X=8x4096); repeatable. Default: small sizes.")
@click.option("--arg", "args", multiple=True, metavar="NAME=LITERAL",
              help="A value for a parameter that is not a size (casting_mode='llama', eps=1e-5); repeatable.")
@click.option("--launcher", metavar="FUNC", help="The host function to call (default: the one launching NAME).")
@click.option("--direct", is_flag=True, help="Launch the jit kernel from its signature, not through a host function.")
@click.option("--dtype", "dtypes", multiple=True, metavar="D", help="Dtypes to check (default: float32).")
@click.option("--check/--no-check", default=True, show_default=True,
              help="Verify the original against itself through the new harness (CPU).")
@click.option("--json", "as_json", is_flag=True, help="Print what was written and found as JSON.")
def harness_cmd(kernel_file, kernel, out, shapes, args, launcher, direct, dtypes, check, as_json):
    """Write a harness (docs/harness.md) for one Triton kernel, taken from the kernel itself.

    It calls the kernel's host launcher (or, without one, launches the kernel from its
    signature) on inputs of the sizes given, with the original as the reference, and
    stubs what the kernel's module imports but cannot be imported here. Then
    `skel verify KERNEL.py CANDIDATE.py --harness FILE` checks a change.

    \b
    Example:
      skel harness kernel.py --kernel rmsnorm_fwd -o harness.py
      skel verify kernel.py candidate.py --harness harness.py --kernel rmsnorm_fwd --device cpu

    \b
    Exit codes:
      0  written (and, with --check, the original matches itself through it)
      2  error (no such kernel, it cannot be imported or run, or the self-check fails)
    """
    import shlex  # 1 ms; only this command quotes its own command line

    command = "skel harness " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    g = api.harness(kernel_file, out, kernel=kernel, shapes=list(shapes), args=list(args), launcher=launcher,
                    direct=direct, dtypes=list(dtypes) or ["float32"], check=check, command=command)
    if as_json:
        import json  # 1 ms; only --json prints JSON

        click.echo(json.dumps({"output": str(g.path), "kernel": g.kernel, "launcher": g.launcher, "args": g.args,
                               "shapes": g.shapes, "launched": g.launched, "stubs": g.stubs, "notes": g.notes,
                               "check": asdict(g.check) if g.check else None}, indent=2, default=str))
    else:
        how = f"through its launcher {g.launcher}()" if g.launcher else "launched directly from its signature"
        click.echo(f"wrote {g.path}: {g.kernel} {how}; sizes {g.shapes['tiny']}")
        for n in g.notes:
            click.echo(f"  note: {n}")
        if g.check:
            click.echo(f"  self-check: {'passed' if g.check.passed else 'FAILED'}: {g.check.detail}")
        click.echo(f"check a change: skel verify {kernel_file} CANDIDATE.py --harness {out} --kernel {g.kernel}")
    sys.exit(EXIT_OK if g.check is None or g.check.passed else EXIT_ERROR)


# --- site --------------------------------------------------------------------------------

@cli.command()
@click.argument("out", type=click.Path(path_type=str))
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
@target_options
@click.option("--catalog-only", is_flag=True, help="Ignore any store: the catalog and its shipped evidence only "
              "(how the README's table is made).")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def site(out, store, backend, arch, triton_version, gpu, catalog_only, as_json, no_progress):
    """Write the catalog and the store as a static site in OUT, to browse offline.

    \b
    OUT/index.html     every skeleton: category, status, languages, backends,
                       mined kernels and repositories; filter and search in the page;
                       its status on each GPU and Triton the evidence was measured on
    OUT/skeletons/ID   its status per GPU and Triton, its doc, conditions in words,
                       the template as a diff, where it is used (linked to the file
                       at the mined commit when the source is a checkout on
                       GitHub/GitLab), history, verification runs and
                       plots (speedup per shape against the noise floor, error by
                       sequence length, runs by Triton version)
    OUT/sources/NAME   one page per mined source: version, kernels, techniques found
    OUT/history.html   technique changes and draft candidates (skel mine --history)
    OUT/catalog.md     the catalog table (the README's table is this file)

    OUT must be new, empty, or a site skel wrote (it is rebuilt beside it and swapped
    in, so an interrupted build leaves the old site whole). Needs the site extra:
    pip install 'skel[site]'.

    \b
      skel site ./site && xdg-open site/index.html
      skel site ./site --arch sm90 --backend cuda --triton 3.6.0
    """
    from skel.site import build, require  # the site adapter loads with its command

    require()
    if catalog_only and store:
        raise click.UsageError("--catalog-only reads no store: drop --store")
    snap = api.catalog_snapshot(store=store, target=api.parse_target(backend, arch, triton_version, gpu),
                                use_store=not catalog_only)
    show = not (no_progress or as_json) and sys.stderr.isatty()
    bar = click.progressbar(length=len(snap.skeletons), label="writing pages", file=sys.stderr, show_pos=True) \
        if show else None
    if bar is not None:
        bar.__enter__()
    try:
        done = build(snap, out, progress=(lambda d, t, label: bar.update(d - bar.pos)) if bar is not None else None)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if as_json:
        click.echo(__import__("json").dumps(done.to_dict(), indent=2))
        return
    click.echo(f"wrote {done.pages} pages and {done.plots} plots ({done.skeletons} skeletons, {done.sources} sources) "
               f"to {done.out} in {done.seconds:.1f}s: open {Path(done.out) / 'index.html'}")


# --- skeletons ---------------------------------------------------------------------------

@cli.group()
def skeletons() -> None:
    """Browse the skeleton catalog."""


@skeletons.command("list")
@click.option("--category", help="Only this category (substring match).")
@click.option("--drafts", "show_drafts", is_flag=True, help="List the draft candidates found by history mining "
              "instead (changes that look like optimisations no skeleton explains), for review.")
@click.option("--review", type=click.Choice(["pending", "accepted", "rejected"]),
              help="With --drafts: only drafts with this review.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
@target_options
def skeletons_list(category, show_drafts, review, as_json, store, backend, arch, triton_version, gpu):
    """List every skeleton: id, category, status (computed from verification runs in the
    target environment), its hand-checked track record (how often people judged its
    suggestions right on real kernels), summary. The last line counts the statuses and names
    the GPUs and Triton versions whose runs decided them (with --gpu H200, that GPU's runs
    alone). With --drafts: the draft candidates to review."""
    if show_drafts:
        _list_drafts(review, as_json, store)
        return
    items = api.list_skeletons(category, store=store, target=api.parse_target(backend, arch, triton_version, gpu))
    summary = getattr(items, "summary", None)
    if as_json:
        click.echo(__import__("json").dumps({"skeletons": [asdict(s) for s in items],
                                             "summary": summary.to_dict() if summary else None}, indent=2))
        return
    from skel.tables import table  # 0.4 ms to import, which `skel --help` must not pay

    click.echo(table(["id", "lang", "status", "hand-checked", "category", "summary"],
                     [[s.id, "/".join(s.languages), s.status, _checked_cell(s.track_record), s.category, s.summary]
                      for s in items],
                     max_width=140))
    click.echo("hand-checked: its suggestions judged right / judged, on real sglang and vLLM kernels "
               "(`skel skeletons show ID` says more)")
    if summary is not None:
        click.echo(summary.line)


def _checked_cell(record: dict | None) -> str:
    """"43/152 right" for a skeleton people judged, "-" for one never suggested to them."""
    return f"{record['correct']}/{record['judged']} right" if record else "-"


def _list_drafts(review, as_json, store):
    found = api.drafts(store=store, review=review)
    if as_json:
        click.echo(__import__("json").dumps([d.to_dict() | {"listed_as": d.listed_as} for d in found], indent=2))
        return
    if not found:
        click.echo("no draft candidates (mine a repository's history: `skel mine --history REPO`)")
        return
    from skel.tables import table  # 0.4 ms to import, which `skel --help` must not pay

    click.echo(f"{len(found)} draft candidate(s): changes that look like optimisations no skeleton explains. "
               "Drafts are never suggested; review each with `skel skeletons draft accept|reject ID`.")
    rows = [[d.id, d.listed_as, d.date[:10], f"{d.repo}@{d.short}", f"{d.path}:{d.after[0] if d.after else ''}",
             d.kernel, "; ".join(d.changed[:3]) + (" ..." if len(d.changed) > 3 else ""), d.message[:60]]
            for d in found]
    click.echo(table(["id", "status", "date", "commit", "file", "kernel", "what changed", "message"], rows,
                     max_width=160))


@skeletons.command("candidates")
@click.option("--min-repos", type=click.IntRange(1, None), default=2, show_default=True,
              help="Only groups seen in at least N repositories (1: every group, one repository's habits too).")
@click.option("--limit", type=click.IntRange(1, None), default=None, help="Only the best N groups.")
@click.option("--instances", type=click.IntRange(0, None), default=3, show_default=True,
              help="Changes printed under each group (--json has them all).")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON: every group with all its instances.")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
def skeletons_candidates(min_repos, limit, instances, as_json, store):
    """Candidate techniques: the changes history mining could not explain, grouped.

    `skel mine --history REPO` records a draft for every kernel a commit changed in a way
    that looks like an optimisation (tuning facts changed, or the message says faster,
    fuse, ...) but that no skeleton explains. This command groups those drafts by what
    changed in the kernel model, written without the repository's names or values, e.g.

    \b
      + call tl.range(num_stages)          a loop became a pipelined tl.range
      fewer call tl.load                   the kernel reads memory fewer times
      launch num_warps up                  a launch got more warps
      + constexpr sequence length (was a runtime parameter)
      message: vectorize                   (changes left over, by the message's keyword)

    and ranks the groups by spread: score = 2 x repositories + log2(1 + commits) +
    log2(1 + commits whose message claims an optimisation: faster, perf, fuse ...) +
    log2(1 + commits whose message states a number such as "1.3x" or "20% faster").
    Each change is in one group; a group needs two commits. Rejected drafts and changes a
    skeleton explains are left out. Each group lists its changes: repository, commit,
    file:line, kernel, the message's first line, and a link when the repository's remote
    is on GitHub/GitLab.

    \b
    Read a group's changes, then promote it: scaffold the skeleton (`python -m
    skel.skeletons.new ID --lang triton|cuda`), and accept or reject its drafts
    (`skel skeletons draft accept|reject ID`).

    \b
    Examples:
      skel mine --history ~/src/flash-linear-attention --until 2025-07-01
      skel skeletons candidates                    # groups seen in 2+ repositories
      skel skeletons candidates --min-repos 1 --limit 20 --instances 5
      skel skeletons candidates --json | jq '.clusters[0].instances[].link'
    """
    found = api.candidates(store=store, min_repos=min_repos, limit=limit)
    if as_json:
        click.echo(__import__("json").dumps(found.to_dict(), indent=2))
        return
    if not found.drafts:
        click.echo("no draft candidates to group (mine a repository's history: `skel mine --history REPO`)")
        return
    from skel.tables import table  # 0.4 ms to import, which `skel --help` must not pay

    click.echo(f"{found.drafts} drafts; {found.unexplained} unexplained changes grouped into {found.groups} "
               f"candidate techniques ({found.ungrouped} changes in no group; left out: {found.rejected} rejected, "
               f"{found.explained} explained by a skeleton, {found.repeated} the same commit in another "
               f"repository, {found.housekeeping} of commits that only reformat).")
    if found.below:
        click.echo(f"{found.below} groups are in fewer than {min_repos} repositories: --min-repos 1 lists them.")
    if not found.clusters:
        return
    click.echo("score = 2 x repositories + log2(1 + commits) + log2(1 + commits claiming an optimisation) "
               "+ log2(1 + commits stating a number)\n")
    rows = [[n, f"{c.score:.1f}", len(c.repos), c.commits, len(c.instances), c.claimed, c.stated,
             ", ".join(c.numbers[:3]) + (" ..." if len(c.numbers) > 3 else ""), c.describe(2)]
            for n, c in enumerate(found.clusters, 1)]
    click.echo(table(["#", "score", "repos", "commits", "kernels", "claimed", "stated", "numbers", "what changed"],
                     rows, max_width=110))
    if not instances:
        return
    for n, c in enumerate(found.clusters, 1):
        click.echo(f"\n{n}. {c.key}  ({len(c.repos)} repositories, {c.commits} commits, "
                   f"{'/'.join(c.languages)}: {', '.join(c.repos)})")
        if c.shared:
            click.echo("   most also show: " + ", ".join(f"{t} ({s:.0%})" for t, s in c.shared[:6]))
        for i in c.instances[:instances]:
            click.echo(f"   {i.date[:10]} {i.repo}@{i.commit[:8]} {i.path}:{i.line} {i.kernel}: {i.message[:80]}"
                       + (f" [{', '.join(i.numbers[:3])}]" if i.numbers else ""))
            if i.link:
                click.echo(f"     {i.link}")
        if len(c.instances) > instances:
            click.echo(f"   ... and {len(c.instances) - instances} more (--instances N, or --json)")


@skeletons.group("draft")
def skeletons_draft() -> None:
    """Review a draft candidate found by history mining."""


def _review(decision: str):
    @click.argument("draft_id")
    @click.option("--note", default="", metavar="TEXT", help="Why (kept with the review).")
    @click.option("--store", metavar="PATH|URL", help=STORE_HELP)
    def command(draft_id, note, store):
        d = api.review_draft(draft_id, decision, note, store=store)
        click.echo(f"draft {d.id} ({d.kernel}, {d.repo}@{d.short}) {decision}: {d.listed_as}"
                   + (f" — {d.note}" if d.note else ""))
    command.__doc__ = {"accepted": "Accept a draft: it is listed as a skeleton to write (no code is generated).",
                       "rejected": "Reject a draft: not an optimisation worth a skeleton."}[decision]
    return command


skeletons_draft.command("accept")(_review("accepted"))
skeletons_draft.command("reject")(_review("rejected"))


@skeletons.command("show")
@click.argument("skeleton_id")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
@target_options
def skeletons_show(skeleton_id, fmt, as_json, store, backend, arch, triton_version, gpu):
    """Show one skeleton: documentation, conditions, template, and its evidence in the
    knowledge base (mined kernels using it, verification results) when there is one."""
    from skel.skeletons.docs import render_skeleton  # the catalog: 22 ms to import; loads with its command

    s, evidence = api.show(skeleton_id, store=store, target=api.parse_target(backend, arch, triton_version, gpu))
    click.echo(render_skeleton(s, "json" if as_json else fmt, evidence.to_dict()), nl=False)


# --- history -----------------------------------------------------------------------------

@cli.group()
def history() -> None:
    """What history mining recorded (`skel mine --history REPO`)."""


@history.command("list")
@click.option("--repo", metavar="NAME", help="Only this repository.")
@click.option("--technique", metavar="ID", help="Only this skeleton id.")
@click.option("--kind", type=click.Choice(["introduced", "removed", "refined"]), help="Only this kind of event.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
def history_list(repo, technique, kind, as_json, store):
    """The events history mining recorded, latest first."""
    events = api.history_events(store=store, repo=repo, kind=kind)
    if technique is not None:
        # a mistyped id is an error, not "no events": the catalog's ids (and any id the
        # store's events hold, of a skeleton since renamed) are the known ones
        from skel.skeletons.registry import all_skeletons, unknown_id  # only --technique pays the catalog's load

        known = {s.id for s in all_skeletons()} | {e.technique for e in events}
        if technique not in known:
            raise UsageError(f"--technique: {unknown_id(technique, sorted(known))}")
        events = [e for e in events if e.technique == technique]
    if as_json:
        click.echo(__import__("json").dumps([e.to_dict() for e in events], indent=2))
        return
    if not events:
        if technique is not None and api.history_events(store=store):
            where = (f" of kind {kind}" if kind else "") + (f" in {repo}" if repo else "")
            click.echo(f"no events for technique {technique}{where}")
        else:
            click.echo("no history events (run `skel mine --history REPO`)")
        return
    from skel.tables import table  # 0.4 ms to import, which `skel --help` must not pay

    rows = [[e.id, e.date[:10], f"{e.repo}@{e.short}", e.kind, e.technique, e.kernel, ", ".join(e.numbers),
             e.message[:60]] for e in events]
    click.echo(table(["id", "date", "commit", "kind", "technique", "kernel", "numbers", "message"], rows,
                     max_width=160))


@history.command("export")
@click.argument("event_id")
@click.option("--out", "out_dir", required=True, metavar="DIR", type=click.Path(path_type=str),
              help="Folder to write the file into.")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
def history_export(event_id, out_dir, store):
    """Write an event's before/after kernels as a harness file (docs/harness.md) to
    complete: the fields a commit cannot tell are left for you, and `skel verify` refuses
    the file until they are written."""
    path = api.export_event(event_id, out_dir, store=store)
    click.echo(f"wrote {path}: fill in the harness fields it names, then `skel verify {path} {path}`")


# --- serve -------------------------------------------------------------------------------

@cli.command()
@click.option("--http", "http", metavar="HOST:PORT", help="Serve streamable HTTP here instead of stdio "
              "(loopback only unless --allow-remote).")
@click.option("--allow-remote", is_flag=True, help="With --http: allow a host other than loopback.")
@click.option("--root", "roots", metavar="DIR", multiple=True, type=click.Path(path_type=str),
              help="A directory the server may read files under (repeatable; default: the working directory).")
@click.option("--max-bytes", type=click.IntRange(1, None), default=None,
              help="Largest file or inline source the server reads (default 1,000,000).")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
def serve(http, allow_remote, roots, max_bytes, store):
    """Serve skel to AI agents over the Model Context Protocol: stdio by default (what
    Claude Code, Cursor, Codex launch), or streamable HTTP with --http.

    Tools: suggest, show, search, list, verify (run in a child process with a time limit).
    Files are read only under the roots; kernel code never runs in the server process.
    """
    # the MCP server: 0.45 s to import (the mcp SDK); `skel serve --help` must not pay it (tests/test_mcp.py)
    from skel.mcp.roots import MAX_BYTES, Roots
    from skel.mcp.server import parse_http
    from skel.mcp.server import serve as run

    if allow_remote and not http:
        raise click.UsageError("--allow-remote goes with --http")
    where = parse_http(http, allow_remote) if http else None
    run(Roots(list(roots) or [os.getcwd()], max_bytes or MAX_BYTES), store=store, http=where)


# --- store -------------------------------------------------------------------------------

@cli.group()
def store() -> None:
    """Inspect the knowledge base."""


@store.command("info")
@click.option("--store", "location", metavar="PATH|URL", help=STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def store_info(location, as_json):
    """Where the knowledge base is, what it holds, and the state of each mined source."""
    info = api.store_info(location)
    if as_json:
        click.echo(__import__("json").dumps(info.to_dict(), indent=2))
        return
    from skel.tables import table  # 0.4 ms to import, which `skel --help` must not pay

    click.echo(f"store {info.location} (schema v{info.schema}): {info.kernels} kernels")
    if info.note:
        click.echo(f"note: {info.note}")
    rows = [[s.name, s.version[:16], s.state, s.counts.get("kernels", ""), s.counts.get("files", "")]
            for s in info.sources]
    if rows:
        click.echo(table(["source", "version", "state", "kernels", "files"], rows))


# --- sources -----------------------------------------------------------------------------

@cli.group()
def sources() -> None:
    """The sources mined into the knowledge base: list them, remove one."""


@sources.command("list")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def sources_list(store, as_json):
    """Every mined source: its name (what `skel mine --source` sets), version, state,
    counts, and origin (its repository's remote and path, its folder, or package:NAME)."""
    found = api.sources(store)
    if as_json:
        click.echo(__import__("json").dumps([asdict(s) for s in found], indent=2))
        return
    if not found:
        click.echo("no sources mined yet (`skel mine PATH`)")
        return
    from skel.tables import table  # 0.4 ms to import, which `skel --help` must not pay

    click.echo(table(["source", "version", "state", "kernels", "files", "origin"],
                     [[s.name, s.version[:16], s.state, s.counts.get("kernels", ""), s.counts.get("files", ""),
                       s.origin or f"{s.root} (recorded before origins)"] for s in found], max_width=160))


@sources.command("remove")
@click.argument("name")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
def sources_remove(name, store):
    """Delete the source NAME from the knowledge base: its kernels and its record (the
    code itself is not touched; mine it again to bring it back)."""
    record, removed = api.remove_source(name, store=store)
    click.echo(f"removed source {record.name} ({record.origin or record.root}): {removed['kernels']} kernels, "
               f"{removed['files']} files")


def main() -> None:  # console-script entry point
    cli()


if __name__ == "__main__":
    main()
