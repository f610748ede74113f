"""skel — a knowledge base of GPU-kernel optimisation skeletons.

Everything heavy (libcst, chromadb, numpy, sentence-transformers) is imported inside the
command that needs it, so `skel --help` stays instant (a test proves it).
"""

from __future__ import annotations

import sys

import click

EXIT_OK, EXIT_NONE, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130

STORE_HELP = ("Knowledge base: a directory, or http://HOST:PORT for a shared Chroma server "
              "(`chroma run --path DIR --port N`). Default: $SKEL_HOME/store, else ~/.local/share/skel/store.")


def _fail(msg: str, code: int = EXIT_ERROR) -> None:
    click.echo(f"skel: error: {msg}", err=True)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="skel", prog_name="skel")
def cli() -> None:
    """Mine GPU-kernel optimisation techniques from real code, and suggest the ones that fit
    your Triton kernel — ranked, explained and backed by real locations.

    \b
    Typical use:
      skel mine --package liger_kernel      # mine an installed package
      skel mine ~/src/flash-linear-attention  # or a checkout
      skel suggest my_kernel.py             # what has worked on kernels like this?
      skel suggest my_kernel.py --bound memory --arch sm90 --format markdown
      skel skeletons list                   # the catalog

    Exit codes: 0 success (suggestions found), 1 no suggestion, 2 error.
    """


# --- mine --------------------------------------------------------------------------------

@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=str))
@click.option("--package", "package", metavar="NAME", help="Mine an installed Python package (e.g. liger_kernel, fla).")
@click.option("--source", metavar="NAME", help="Name recorded for this source (default: directory or distribution name).")
@click.option("--version", "version", metavar="V", help="Version recorded (default: git HEAD or package version).")
@click.option("--rev", metavar="REV", help="With PATH in a git repository: mine the tree at this commit, branch or tag "
              "(read from git, nothing checked out; version = the commit).")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Parser processes (default: up to 2).")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--no-progress", is_flag=True, help="No progress bar (automatic when not a terminal).")
def mine(path, package, source, version, rev, jobs, store, as_json, no_progress):
    """Mine a repository, folder, file or installed package into the knowledge base
    (a repository at another revision with --rev).

    Finds every @triton.jit kernel (all spellings, stacked under autotune/heuristics) with
    libcst, records which catalog techniques each uses, where (path, function, lines,
    version) and which tests exercise it. Unchanged files are skipped on re-mines; bad
    files are reported and skipped; an interrupted mine resumes where it stopped.
    """
    from skel.miner.mine import mine as run_mine
    from skel.miner.sources import DirectorySource, GitSource, PackageSource
    from skel.store.knowledge import StoreError, KnowledgeBase, cache_dir

    if bool(path) == bool(package):
        _fail("give exactly one of PATH or --package NAME")
    if rev and package:
        _fail("--rev needs PATH, a git repository (not --package)")
    try:
        if package:
            src = PackageSource(package, name=source, version=version)
        elif rev:
            src = GitSource(path, rev, name=source, version=version)
        else:
            src = DirectorySource(path, name=source, version=version)
    except FileNotFoundError as exc:
        _fail(str(exc))
    try:
        kb = KnowledgeBase.open(store)
    except StoreError as exc:
        _fail(str(exc))

    show = not (no_progress or as_json) and sys.stderr.isatty()
    bars: dict[str, object] = {}

    def progress(done: int, total: int, label: str) -> None:
        if not show:
            return
        stage = "store" if label == "store" else "parse"
        bar = bars.get(stage)
        if bar is None:
            bar = click.progressbar(length=max(total, 1), label=f"{'parsing' if stage == 'parse' else 'storing'}",
                                    file=sys.stderr, show_pos=True)
            bar.__enter__()
            bars[stage] = bar
        bar.update(done - bar.pos)

    try:
        report = run_mine(src, kb, jobs=jobs, cache_root=cache_dir(store), progress=progress)
    except KeyboardInterrupt:
        click.echo("\nskel: interrupted; the store is consistent — run the same command again to finish.",
                   err=True)
        sys.exit(EXIT_INTERRUPTED)
    except (StoreError, FileNotFoundError) as exc:
        _fail(str(exc))
    finally:
        for bar in bars.values():
            bar.__exit__(None, None, None)

    if as_json:
        click.echo(__import__("json").dumps(report.to_dict(), indent=2))
        return
    from skel.tables import table

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


# --- suggest -----------------------------------------------------------------------------

@cli.command()
@click.argument("kernel_file", type=click.Path(path_type=str))
@click.option("--kernel", metavar="NAME", help="Only this kernel of the file (default: every kernel).")
@click.option("-k", "top", type=click.IntRange(1, 50), default=5, show_default=True, help="Suggestions per kernel.")
@click.option("--bound", type=click.Choice(["memory", "compute", "latency", "occupancy"]),
              help="What the profile says limits the kernel; ranks techniques that address it first.")
@click.option("--backend", type=click.Choice(["cuda", "rocm"]), help="Target backend (unknown: no filtering, caveats shown).")
@click.option("--arch", metavar="smNN", help="Target architecture, e.g. sm80, sm90, sm100.")
@click.option("--triton", "triton_version", metavar="X.Y.Z", help="Target Triton version (default: the installed one).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--no-template", is_flag=True, help="Text format: leave out the before → after templates.")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
def suggest(kernel_file, kernel, top, bound, backend, arch, triton_version, fmt, as_json, no_template, store):
    """Suggest the skeletons that fit the Triton kernels in KERNEL_FILE.

    Only skeletons whose preconditions hold, whose environment fits and which the kernel
    does not already use are shown, each with why it applies (the kernel's lines), the
    evidence (real mined locations) and its before → after template. With no mined
    knowledge base the built-in catalog still answers, without locations.
    """
    import re
    from pathlib import Path

    from skel.retriever import render
    from skel.retriever.suggest import SuggestError
    from skel.retriever.suggest import suggest as run_suggest
    from skel.skeletons.base import Target
    from skel.store.knowledge import StoreError, KnowledgeBase, default_location

    cc = None
    if arch:
        m = re.fullmatch(r"(?:sm_?)?(\d{2,3})a?", arch.strip().lower())
        if not m:
            _fail(f"--arch {arch!r}: expected e.g. sm80, sm90, sm100")
        cc = int(m.group(1))
    if triton_version is None:
        triton_version = _installed_triton()
    target = Target(backend=backend, cc=cc, triton=triton_version)

    kb = None
    location = store or default_location()
    if store or Path(location).exists():
        try:
            kb = KnowledgeBase.open(location, create=False)
        except StoreError as exc:
            _fail(str(exc))
    try:
        results = run_suggest(kernel_file, kb, kernel=kernel, k=top, bound=bound, target=target)
    except SuggestError as exc:
        _fail(str(exc))
    except StoreError as exc:
        _fail(str(exc))
    fmt = "json" if as_json else fmt
    if fmt == "json":
        click.echo(render.as_json(results))
    elif fmt == "markdown":
        click.echo(render.markdown(results), nl=False)
    else:
        click.echo(render.text(results, show_template=not no_template), nl=False)
    sys.exit(EXIT_OK if any(r.suggestions for r in results) else EXIT_NONE)


def _installed_triton() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("triton")
    except PackageNotFoundError:
        return None


# --- skeletons ---------------------------------------------------------------------------

@cli.group()
def skeletons() -> None:
    """Browse the skeleton catalog."""


@skeletons.command("list")
@click.option("--category", help="Only this category (substring match).")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def skeletons_list(category, as_json):
    """List every skeleton: id — summary."""
    from skel.skeletons.registry import all_skeletons

    items = [s for s in all_skeletons() if not category or category.lower() in s.category.value]
    if as_json:
        click.echo(__import__("json").dumps(
            [{"id": s.id, "title": s.title, "summary": s.summary, "category": s.category.value,
              "status": s.status.value} for s in items], indent=2))
        return
    from skel.tables import table

    click.echo(table(["id", "category", "summary"], [[s.id, s.category.value, s.summary] for s in items],
                     max_width=120))


@skeletons.command("show")
@click.argument("skeleton_id")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--store", metavar="PATH|URL", help=STORE_HELP)
def skeletons_show(skeleton_id, fmt, as_json, store):
    """Show one skeleton: documentation, conditions, template, and its evidence in the
    knowledge base (mined kernels using it, verification results) when there is one."""
    from pathlib import Path

    from skel.skeletons.docs import render_skeleton
    from skel.skeletons.registry import get
    from skel.store.knowledge import StoreError, KnowledgeBase, default_location

    try:
        s = get(skeleton_id)
    except KeyError as exc:
        _fail(exc.args[0])
    evidence = None
    location = store or default_location()
    if store or Path(location).exists():
        try:
            kb = KnowledgeBase.open(location, create=False)
            stats = kb.stats().get(s.id, {"kernels": 0, "sources": []})
            evidence = {"kernels": stats["kernels"], "sources": stats["sources"],
                        "examples": [r.location for r in kb.using(s.id, limit=5)],
                        "verified": kb.evidence(s.id)}
        except StoreError as exc:
            _fail(str(exc))
    click.echo(render_skeleton(s, "json" if as_json else fmt, evidence), nl=False)


# --- store -------------------------------------------------------------------------------

@cli.group()
def store() -> None:
    """Inspect the knowledge base."""


@store.command("info")
@click.option("--store", "location", metavar="PATH|URL", help=STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def store_info(location, as_json):
    """Where the knowledge base is, what it holds, and the state of each mined source."""
    from skel.store.knowledge import StoreError, KnowledgeBase

    try:
        kb = KnowledgeBase.open(location, create=False)
        info = kb.info()
    except StoreError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(__import__("json").dumps(info, indent=2))
        return
    from skel.tables import table

    click.echo(f"store {info['location']} (schema v{info['schema']}): {info['kernels']} kernels")
    rows = [[s["name"], s["version"][:16], s["state"], s["counts"].get("kernels", ""), s["counts"].get("files", "")]
            for s in info["sources"]]
    if rows:
        click.echo(table(["source", "version", "state", "kernels", "files"], rows))


def main() -> None:  # console-script entry point
    cli()


if __name__ == "__main__":
    main()
