"""The mining pipeline: files → facts → techniques present → records in the store.

Order of writes makes an interrupted mine safe and resumable: for each batch of files we
delete the files' old kernel records, add the new ones, and only then record the files'
content hashes. A crash anywhere leaves every file either fully recorded or recorded under
its old hash, so the next run redoes exactly the unfinished files. Mining twice gives the
same store: record ids are derived from (source, file, function).

What is mined comes through one seam, a ``Source`` (skel/miner/sources.py): a folder, an
installed package or a git tree at a revision.
"""

from __future__ import annotations

import gc
import hashlib
import json
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections import Counter
from concurrent.futures import Future
from contextlib import contextmanager
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable, Iterator, Sequence

from skel.embed import Embedder, default_embedder
from skel.errors import UsageError
from skel.kernels import callers
from skel.kernels.extract import extract, hint, language_of
from skel.kernels.guard import TooSlow, refusal, time_limit
from skel.kernels.importers import ImportGraph, apply_backend
from skel.kernels.model import KernelFacts, ParseError
from skel.miner import stamps, walk
from skel.miner.report import MineReport
from skel.miner.sources import Source
from skel.miner.walk import SourceFile, Skipped
from skel.skeletons import registry  # called as registry.X: tests swap the catalog there
from skel.store.faults import slow_extraction
from skel.store.knowledge import KernelRecord, KnowledgeBase, SourceRecord

# (done, total, label): label a file while parsing, "model" (0, 0) while the embedding
# model finishes (it loads and embeds during the parse), "store" while storing
Progress = Callable[[int, int, str], None]
BATCH = 48


# --- facts, cached by content hash -----------------------------------------------------

def _extract(job: tuple) -> tuple[str, list[dict] | str]:
    """Worker: one file's kernels — facts, the techniques each uses and the skeletons that
    would be suggested for it — or an error string. Never raises.

    Tagging happens here, beside the parse, because conditions read the data-flow view
    built from the parsed tree: the file is parsed once, and only plain data crosses the
    process boundary and lands in the cache."""
    # (rel, text, config tables[, (backend, why) from the importers]): older callers pass three
    rel, text, tables = job[:3]
    backend, why = job[3] if len(job) > 3 else ("", "")
    # the data-flow view brings libcst (117 ms to import): loaded by the first parse, in a
    # worker's warm-up; a mine whose files all come from the cache never imports it
    from skel.kernels import flow

    if reason := refusal(text, rel, language_of(rel)):
        return rel, reason
    try:
        out = []
        slow_extraction(rel)  # a test-only hook (skel/store/faults.py); a no-op otherwise
        kernels = extract(text, rel)
        apply_backend(kernels, backend, why)
        for k in kernels:
            k.config_tables = list(tables)
            uses, fits, lines = tag_lines(k)
            out.append({"facts": k.to_dict(), "uses": uses, "fits": fits, "lines": lines})
        return rel, out
    except ParseError as exc:
        return rel, f"syntax error: {exc}"
    except RecursionError:
        return rel, "too deeply nested to parse"
    except MemoryError:
        return rel, "out of memory while parsing"
    except Exception as exc:  # noqa: BLE001 - one bad file never aborts a mine
        return rel, f"extractor failed: {type(exc).__name__}: {exc}"
    finally:
        flow.forget()  # the next file's nodes are new ones: this file's answers are done with


class FactsCache:
    """Each file's extraction and tags by content, on local disk. An entry is keyed by the
    file's digest (which includes the extractor's version) and the catalog's fingerprint,
    since it holds what the skeletons detected too, and the entry format's version."""

    FORMAT = 2  # 2: each kernel's entry holds the lines evidencing its techniques ("lines")

    def __init__(self, root: Path | None) -> None:
        self.root = root / "facts" if root else None
        self.salt = f"{registry.catalog_fingerprint()}:{self.FORMAT}".encode()

    def _path(self, digest: str) -> Path:
        assert self.root is not None
        key = hashlib.sha1(self.salt + b"\0" + digest.encode()).hexdigest()
        return self.root / key[:2] / f"{key}.json"

    def get(self, digest: str) -> list[dict] | str | None:
        if not self.root:
            return None
        p = self._path(digest)
        try:
            return json.loads(p.read_text())
        except (OSError, ValueError):
            return None

    def put(self, digest: str, value: list[dict] | str) -> None:
        if not self.root:
            return
        p = self._path(digest)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp = p.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(value))
            tmp.replace(p)  # atomic: a crash never leaves half a cache entry
        except OSError:
            pass  # the cache is an optimisation only


#: a file whose parse takes longer than this (seconds) is skipped, its worker killed
PARSE_SECONDS = float(os.environ.get("SKEL_PARSE_SECONDS", "120"))
_CRASHED = "the parser crashed"
_TIMED_OUT = "parse timed out"


def _transient(value: list[dict] | str) -> bool:
    """A crash or time-out may be the machine's (memory, load), not the file's: not cached,
    so the next mine tries the file again."""
    return isinstance(value, str) and value.startswith((_CRASHED, _TIMED_OUT))


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """SIGINT blocked in this thread while a worker starts: the worker inherits the blocked
    signal (across its exec too) and ignores it before it lets it through (``_serve``), so
    no Ctrl-C can reach it in between. One arriving here waits, and is the parent's once
    the block ends: it is never lost."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _ignore_ctrl_c() -> None:
    """In a worker: a Ctrl-C at a terminal goes to every process of the foreground group,
    workers included. Theirs would be a KeyboardInterrupt traceback each (dozens of lines
    under the parent's one); the parent alone answers it, and ends the workers itself.
    Ignored first, then unblocked: one that came while it was blocked is dropped."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _serve(conn, fn: Callable) -> None:
    """A parser worker: imports what parsing needs, says "ready" (so a file's time limit
    never counts a slow start), then one job in, ``fn(job)`` out, until told to stop."""
    _ignore_ctrl_c()
    try:
        # the imports are the warm-up (libcst, 117 ms; tree-sitter's grammars on first use),
        # done here so that a file's time limit never counts them
        from skel.kernels import cuda, triton  # noqa: F401

        registry.all_skeletons()
    except Exception:  # noqa: BLE001 - the first job reports what is broken, per file
        pass
    # What a job allocates (a tree, its data-flow view, some of it in reference cycles) is
    # garbage once its answer is sent; what the imports made lives on. So the collector
    # never walks the latter again (freeze), stays off during a job, and clears the young
    # generations after each. On fla + liger that spent less time collecting than the
    # default thresholds did, and a job's garbage cycles no longer outlive it (they reached
    # the old generation, which is rarely collected, and piled up there).
    gc.freeze()
    gc.disable()
    try:
        conn.send("ready")
    except OSError:
        return
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            # nothing to flush or save (results went back through the pipe): skip the
            # interpreter's teardown, which frees a worker's heap object by object
            conn.close()
            os._exit(0)
        conn.send(fn(job))
        gc.collect(1)


class _Worker:
    def __init__(self, ctx, fn: Callable) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, fn), daemon=True)
        with _ctrl_c_held():
            self.proc.start()
        child.close()
        self.ready = False  # its warm-up done
        self.job: int | None = None  # index of the job it holds
        self.deadline = 0.0

    def how_it_ended(self) -> str:
        self.proc.join(timeout=5)
        code = self.proc.exitcode
        return f"signal {-code}" if code is not None and code < 0 else f"exit {code}"

    def stop(self, kill: bool = False) -> None:
        self.signal(kill)
        self.reap()

    def signal(self, kill: bool = False) -> None:
        """Tell it to end (or kill it) without waiting for it to."""
        try:
            if kill:
                self.proc.kill()
            else:
                self.conn.send(None)
        except OSError:
            pass

    def reap(self) -> None:
        """Wait for it to end (killing it after 5 s), and close its pipe."""
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def isolated(jobs_in: list[tuple], workers: int,
             seconds: float, fn: Callable = _extract) -> Iterator[tuple[int, tuple[str, list[dict] | str]]]:
    """``_extract`` of each job in worker processes, yielding (job index, result) as each
    ends. A worker that dies (a native parser's stack overflow is a SIGSEGV no Python code
    can catch) or runs past ``seconds`` on one file costs that file only: it becomes a
    skip with the reason, and a fresh worker takes the next job. Each worker holds one
    job at a time, so the file that killed it is always known. ``fn`` (a module-level
    function, for spawn) is ``_extract`` but for tests that need a worker to die."""
    # spawn, not fork: the parent may hold chromadb's threads and sockets
    ctx = multiprocessing.get_context("spawn")
    pending = list(range(len(jobs_in)))[::-1]
    pool: list[_Worker] = []
    failed_starts = 0
    try:
        # inside the try: a Ctrl-C between two starts still ends the workers started
        for _ in range(min(workers, len(jobs_in))):
            pool.append(_Worker(ctx, fn))
        while pending or any(w.job is not None for w in pool):
            for w in pool:
                if w.ready and w.job is None and pending:
                    w.job = pending.pop()
                    w.deadline = time.monotonic() + seconds
                    try:
                        w.conn.send(jobs_in[w.job])
                    except OSError:
                        pass  # died idle: its recv below reports it
            busy = [w for w in pool if w.job is not None]
            waiting = busy + [w for w in pool if not w.ready]
            wait_for = max(0.0, min(w.deadline for w in busy) - time.monotonic()) if busy else None
            ready = wait([w.conn for w in waiting], timeout=wait_for)
            for i, w in enumerate(pool):
                if not w.ready:
                    if w.conn in ready:
                        try:
                            w.ready = w.conn.recv() == "ready"
                        except (EOFError, OSError):
                            failed_starts += 1
                            how = w.how_it_ended()
                            w.stop(kill=True)
                            if failed_starts > 3 * workers:
                                raise RuntimeError(f"parser worker processes die as they start ({how})") from None
                            pool[i] = _Worker(ctx, fn)
                    continue
                if w.job is None:
                    continue
                idx, rel = w.job, jobs_in[w.job][0]
                if w.conn in ready:
                    try:
                        result = w.conn.recv()
                    except (EOFError, OSError):
                        result = (rel, f"{_CRASHED} ({w.how_it_ended()}); the file is skipped")
                        w.stop(kill=True)
                        pool[i] = w = _Worker(ctx, fn)
                    w.job = None
                    yield idx, result
                elif time.monotonic() >= w.deadline:
                    w.stop(kill=True)
                    pool[i] = _Worker(ctx, fn)
                    yield idx, (rel, f"{_TIMED_OUT} (over {seconds:g}s); the file is skipped")
    finally:
        # every worker told first, then waited for: they wind down side by side
        for w in pool:
            w.signal(kill=w.job is not None or not w.ready)
        for w in pool:
            w.reap()


def backends_by_importers(files: list[SourceFile]) -> None:
    """Each kernel file imported only under `if _is_hip:` (or only by ROCm files) is
    marked for that backend (skel/kernels/importers.py) before it is parsed: what the
    importers say is part of its digest. One pass over every file's import lines, then a
    lookup per kernel file: 0.6–0.8 s for sglang's 2,450 files, 1.1–1.5 s for vLLM's 3,230
    (`python -m benchmarks.performance.importers`)."""
    graph = ImportGraph(lambda stem: ())
    for f in files:
        if f.rel.endswith(".py"):
            graph.add(f.rel, f.text)
    for f in files:
        if f.rel.endswith(".py") and "jit" in f.text and walk_hint(f.text, f.rel):
            f.with_backend(*graph.backend(f.rel))


def parse_order(files: list[SourceFile]) -> list[SourceFile]:
    """The order files go to the parser workers: largest first, so neither worker is left
    with a big file at the end while the other idles (ties by path, for a fixed order)."""
    return sorted(files, key=lambda f: (-len(f.text), f.rel))


def extract_many(files: list[SourceFile], cache: FactsCache, jobs: int,
                 progress: Progress | None = None, *, by_digest: bool = False,
                 on_result: Callable[[SourceFile, list[dict] | str], None] | None = None,
                 ) -> tuple[dict[str, list[dict] | str], int]:
    """Facts for each file, by rel path (by digest with ``by_digest``: history mining holds
    a path before and after a change); returns (results, how many came from cache).
    ``on_result(file, value)`` is called as each file's facts arrive, while the workers
    go on with the rest (the mine starts embedding there)."""
    results: dict[str, list[dict] | str] = {}
    todo: list[SourceFile] = []
    for f in files:
        hit = cache.get(f.digest)
        if hit is None:
            todo.append(f)
        else:
            results[f.digest if by_digest else f.rel] = hit
            if on_result:
                on_result(f, hit)
    cached = len(results)
    done = cached
    total = len(files)
    if progress:
        progress(done, total, "parse")
    if jobs > 1 and len(todo) > 4:
        order = parse_order(todo)
        jobs_in = [(f.rel, f.text, f.config_tables, f.backend) for f in order]
        for i, (rel, value) in isolated(jobs_in, jobs, PARSE_SECONDS):
            f = order[i]
            results[f.digest if by_digest else rel] = value
            if on_result:
                on_result(f, value)
            if not _transient(value):
                cache.put(f.digest, value)
            done += 1
            if progress:
                progress(done, total, rel)
    else:
        for f in todo:
            try:  # in this process, a slow analysis is stopped by a timer (main thread only)
                with time_limit(PARSE_SECONDS):
                    rel, value = _extract((f.rel, f.text, f.config_tables, f.backend))
            except TooSlow:
                rel, value = f.rel, f"{_TIMED_OUT} (over {PARSE_SECONDS:g}s); the file is skipped"
            results[f.digest if by_digest else rel] = value
            if on_result:
                on_result(f, value)
            if not _transient(value):
                cache.put(f.digest, value)
            done += 1
            if progress:
                progress(done, total, rel)
    return results, cached


class Embedding:
    """Kernel texts embedded on one background thread while the parser workers run.

    A cold mine's two big costs are the workers' parsing and tagging and the model's
    forward pass per kernel; done one after the other, the embedding waits for the last
    file. Here each file's texts go to the thread as its facts arrive (the inference
    runtimes release the GIL), so the model loads and embeds during the parse. Beside
    the busy workers it runs on one thread that never spins idle when the embedder
    offers one (``sharing_cores``): with every core already parsing, more threads only
    take turns with the workers. When the parse ends the thread is some files behind:
    the store writes the files in the order they were parsed (``parse_order``), so its
    first batches find their vectors ready and are written while the thread embeds the
    last files' kernels; ``get`` takes back only the queued batches a write needs, and
    embeds those with the embedder's full threads. Nothing is written to the store from
    here: vectors are only attached to records in the write loop."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        share = getattr(embedder, "sharing_cores", None)
        self._beside: Embedder = share() if callable(share) else embedder
        self._pending: list = []  # (texts, future)
        self._asked: set[str] = set()  # every text submitted: a text is embedded once
        self._vectors: dict[str, list[float]] = {}
        # a daemon thread, not an executor's: a Ctrl-C must end the mine at once, never
        # wait at exit for a batch the thread is still embedding
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="skel-embed", daemon=True)
        self._thread.start()

    #: the most texts the thread embeds in one call: what has queued up while it was busy
    #: is embedded together, so the model runs batches of similar-length texts rather than
    #: one file's few kernels at a time (see OnnxMiniLM.sharing_cores)
    GATHER = 64

    def _serve(self) -> None:
        stop = False
        while not stop and (job := self._queue.get()) is not None:
            jobs = [job]
            count = len(job[0])
            while count < self.GATHER:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:  # closed: finish what was taken, then end
                    stop = True
                    break
                jobs.append(more)
                count += len(more[0])
            # a batch `get` cancelled while it was queued is `get`'s to embed
            live = [(texts, future) for texts, future in jobs if future.set_running_or_notify_cancel()]
            if not live:
                continue
            try:
                vectors = self._beside.embed([t for texts, _ in live for t in texts])
            except BaseException as exc:  # noqa: BLE001 - handed to `get`, which raises it
                for _, future in live:
                    future.set_exception(exc)
                continue
            start = 0
            for texts, future in live:
                future.set_result(vectors[start:start + len(texts)])
                start += len(texts)

    def submit(self, texts: list[str]) -> None:
        texts = [t for t in dict.fromkeys(texts) if t not in self._asked]
        if texts:
            self._asked.update(texts)
            future: Future = Future()
            self._pending.append((texts, future))
            self._queue.put((texts, future))

    def get(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts``. Only the batches holding them are touched: one the
        thread has not started is taken back and embedded here, with the embedder's full
        threads, with whatever was never submitted; one it is running is waited for. The
        other batches stay queued, so the thread embeds them while the caller writes what
        it has (the store writes batch by batch). An error of the embedder (a missing
        model, say) is raised here, before anything is written."""
        wanted = {t for t in texts if t not in self._vectors}
        needed = [(done, future) for done, future in self._pending if not wanted.isdisjoint(done)]
        # every needed batch taken back before any is waited for: the thread must not start
        # one of them while we wait on another
        taken = [t for done, future in needed if future.cancel() for t in done]
        for done, future in needed:
            if not future.cancelled():
                self._vectors.update(zip(done, future.result()))
        held = {id(future) for _, future in needed}
        self._pending = [(d, f) for d, f in self._pending if id(f) not in held]
        now = list(dict.fromkeys(taken + [t for t in texts if t not in self._vectors]))
        if now:
            self._vectors.update(zip(now, self.embedder.embed(now)))
        return [self._vectors[t] for t in texts]

    def close(self) -> None:
        """Cancel what is queued and let the thread end (without waiting for it)."""
        for _, future in self._pending:
            future.cancel()
        self._queue.put(None)


# --- techniques and tests ----------------------------------------------------------------

def tag(kernel: KernelFacts) -> tuple[list[str], list[str]]:
    """(techniques the kernel uses, skeletons that would be suggested for it). The second
    list lets the retriever tell a skeleton that fits one kernel in a hundred from one that
    fits every other kernel (see `specificity` in skel/retriever/suggest.py)."""
    uses, fits, _ = tag_lines(kernel)
    return uses, fits


def tag_lines(kernel: KernelFacts) -> tuple[list[str], list[str], dict[str, list[int]]]:
    """``tag`` and, for each technique used, the kernel lines its detection points at:
    history mining compares the facts on those lines before and after a change to tell a
    refined technique from an untouched one."""
    uses, fits, lines = [], [], {}
    for s in registry.all_skeletons():
        present, applies = s.detect(kernel)
        if present is not None:
            uses.append(s.id)
            lines[s.id] = sorted({n for h in present for n in h.lines})
        elif applies and s.ruled_out(kernel) is None:  # as `skel suggest` would drop it
            fits.append(s.id)
    return uses, fits, lines


def test_map(tests: list[SourceFile]) -> list[tuple[str, set[str], set[str]]]:
    out = []
    for t in tests:
        modules, names = walk.imports_of(t.text)
        out.append((t.rel, modules, names))
    return out


def covering_tests(module: str, launchers: set[str], tests) -> list[str]:
    """Tests that import the kernel's module, or a launcher of it from a parent package
    (``callers.covers``: the rule `skel suggest` reads a kernel's sizes from its tests by)."""
    return sorted(rel for rel, modules, names in tests if callers.covers(module, launchers, modules, names))


# --- the pipeline ------------------------------------------------------------------------

def mine(source: Source, kb: KnowledgeBase, *, jobs: int | None = None, embedder: Embedder | None = None,
         cache_root: Path | None = None, progress: Progress | None = None, replace: bool = False,
         exclude: Sequence[str] = ()) -> MineReport:
    """Mine ``source`` into ``kb``: its name and version go on every record written, its
    items are the files considered (files gone from it since the last mine are removed).
    A file matching a glob of ``exclude`` (see ``walk.excluded``) is left out, reported as
    skipped: one file no parser survives must not block the rest of a tree.

    A name already in the store for code from another origin (another folder named
    ``ops``) raises ``UsageError`` before anything is written, unless ``replace``: then
    that source is deleted first (``report.replaced`` says what went)."""
    if isinstance(source, (str, os.PathLike)):
        raise TypeError("mine() takes a Source, e.g. DirectorySource(path), PackageSource(name) "
                        "or GitSource(repo, rev) from skel.miner.sources")
    t0 = time.perf_counter()
    name, version = source.name, source.version
    # the stamps know nothing of --exclude: a mine with it neither answers from them nor
    # leaves them (a later plain mine would be answered with this one's excluded files)
    unchanged = stamps.unchanged_report(kb.location, source) if not exclude else None
    if unchanged is not None:  # nothing on disk changed since the last complete mine
        return unchanged
    stamps.forget(kb.location, name)
    jobs = jobs or min(2, os.cpu_count() or 1)
    report = MineReport(source=name, version=version, root=source.root)
    report.replaced = claim_name(kb, source, replace=replace)

    files: list[SourceFile] = []
    # a folder --exclude matches is left out by the walk itself, never listed (one skip
    # entry, "dir/"): an excluded vendored tree costs nothing, however large
    with walk.excluding(exclude, getattr(source, "prefix", "")):
        for item in source.items():
            if exclude and (pattern := walk.excluded(item.rel, exclude)):
                report.skipped.append(Skipped(item.rel, f"excluded (--exclude {pattern})"))
            elif isinstance(item, Skipped):
                report.skipped.append(item)
            else:
                files.append(item)
    report.files = len(files) + sum(1 for s in report.skipped if s.rel.endswith(".py"))
    walk_skipped = list(report.skipped)
    backends_by_importers(files)

    # before any write: a mine with another model than the store's changes nothing (the
    # embedder is only constructed here; its model loads on first use, on the embedding
    # thread while the files are parsed)
    embedder = embedder or default_embedder(bulk=True)
    kb.check_embedder(embedder.name)
    started = SourceRecord(name=name, version=version, root=source.root, state="mining", started=time.time(),
                           origin=source.origin)
    kb.put_source(started)

    # A file is up to date in the store when neither its content nor the catalog changed:
    # a new or edited skeleton must re-tag every mined kernel (facts still come from the
    # content-keyed cache, so this costs detection and embedding, not parsing).
    catalog = registry.catalog_fingerprint()
    stamp = {f.rel: hashlib.sha1(f"{f.digest}:{catalog}".encode()).hexdigest() for f in files}
    known = kb.file_hashes(name)
    changed = [f for f in files if known.get(f.rel) != stamp[f.rel]]
    report.unchanged = len(files) - len(changed)
    removed = sorted(set(known) - set(stamp))
    report.removed = len(removed)

    candidates = [f for f in changed if walk_hint(f.text, f.rel)]
    kernels_of: dict[str, list[tuple[KernelFacts, list[str], list[str]]]] = {}
    embedding = Embedding(embedder)

    def arrived(f: SourceFile, value: list[dict] | str) -> None:
        if isinstance(value, list):
            kernels_of[f.rel] = [(KernelFacts.from_dict(d["facts"]), d["uses"], d["fits"]) for d in value]
            embedding.submit([k.text() for k, _, _ in kernels_of[f.rel]])

    try:
        t1 = time.perf_counter()
        facts, report.cached = extract_many(candidates, FactsCache(cache_root), jobs, progress, on_result=arrived)
        report.parse_seconds = time.perf_counter() - t1
        report.parsed = len(candidates) - report.cached
        _store(kb, source, report, changed, facts, kernels_of, embedding, stamp, files, removed, progress)
    finally:
        embedding.close()
    started.state = "complete"
    started.finished = time.time()
    started.counts = {"files": report.files, "kernels": report.kernels, "skipped": len(report.skipped)}
    kb.put_source(started)
    if not exclude:
        stamps.record(kb.location, source, report, len(files), walk_skipped)
    # everything above counts, the stamps' walk of the tree included (it is as long as the
    # mine's own walk); the saved report's seconds are its own
    report.seconds = time.perf_counter() - t0
    return report


def _store(kb: KnowledgeBase, source: Source, report: MineReport, changed: list[SourceFile],
           facts: dict[str, list[dict] | str], kernels_of: dict[str, list], embedding: Embedding,
           stamp: dict[str, str], files: list[SourceFile], removed: list[str],
           progress: Progress | None) -> None:
    """Write the changed files' kernels, batch by batch, in the order that keeps an
    interrupted mine resumable (see the module's docstring)."""
    name, version = source.name, source.version
    tests = test_map([f for f in files if f.is_test])
    writes: list[tuple[SourceFile, list]] = []
    for f in changed:
        value = facts.get(f.rel, [])
        if isinstance(value, str):
            report.skipped.append(Skipped(f.rel, value))
    # written in the order they were parsed, so the kernels embedded first (as their facts
    # arrived) are written first; any order is as safe (see the module's docstring), and a
    # fixed one keeps two mines of the same code alike
    for f in parse_order(changed):
        writes.append((f, kernels_of.get(f.rel, [])))

    if removed:
        kb.delete_kernels({"$and": [{"source": name}, {"file": {"$in": removed}}]})
        kb.forget_files(name, removed)

    if progress and any(kernels for _, kernels in writes):
        # what the embedding thread has left (the model's load, on a small mine) takes
        # seconds after the last file is parsed: say so rather than sit still
        progress(0, 0, "model")
    if progress and writes:
        progress(0, len(writes), "store")
    for i in range(0, len(writes), BATCH):
        batch = writes[i:i + BATCH]
        records: list[KernelRecord] = []
        for f, kernels in batch:
            module = walk.module_name(f.rel)
            launchers = {ln.host_function for k, _, _ in kernels for ln in k.launches if ln.host_function}
            seen: Counter = Counter()
            for k, uses, fits in kernels:
                seen[k.name] += 1
                rid = hashlib.sha1(f"{name}\0{f.rel}\0{k.name}\0{seen[k.name]}".encode()).hexdigest()
                records.append(KernelRecord(
                    id=rid, source=name, version=version, file=f.rel, function=k.name,
                    line_start=k.line_start, line_end=k.line_end, content_hash=f.digest,
                    techniques=uses, applicable=fits, tests=covering_tests(module, launchers, tests),
                    tokens=k.tokens(), text=k.text(),
                ))
        if records:
            vectors = embedding.get([r.text for r in records])
            kb.bind_embedder(embedding.embedder.name)
            for r, v in zip(records, vectors):
                r.embedding = v
        # also files never marked: an interrupted run may have added their kernels already.
        # Those it wrote exactly as this run would are kept, not deleted and added again: a
        # record deleted and re-added under its id can become unreachable by query() in
        # chroma 1.5.9's vector index (chroma-core/chroma#7758), and a resume need not churn.
        batch_files = [f.rel for f, _ in batch]
        where = {"$and": [{"source": name}, {"file": {"$in": batch_files}}]}
        held = kb.held_kernels(where) if batch_files else {}
        new = {r.id: r for r in records}
        keep = {i for i, (md, doc) in held.items() if i in new and md == new[i].metadata() and doc == new[i].text}
        if keep:
            kb.delete_kernel_ids(sorted(set(held) - keep))
        elif batch_files:
            kb.delete_kernels(where)
        kb.add_many([r for r in records if r.id not in keep])
        kb.mark_files(name, {f.rel: stamp[f.rel] for f, _ in batch})  # the commit marker
        report.kernels_written += len(records)
        if progress:
            progress(min(i + BATCH, len(writes)), len(writes), "store")

    mined = kb.kernels(where={"source": name})
    report.kernels = len(mined)
    report.kernel_files = len({r.file for r in mined})
    for r in mined:
        report.techniques.update(r.techniques)
    kb.recompute_stats()


def claim_name(kb: KnowledgeBase, source: Source, *, replace: bool) -> dict | None:
    """Make sure mining ``source`` under its name deletes nothing it was not asked to: the
    name is free, or it already stands for the same origin (a re-mine), or ``replace``
    deletes the other source first (what was deleted comes back). Otherwise UsageError."""
    prior = kb.source(source.name)
    if prior is None or same_origin(prior.origin, prior.root, source):
        return None
    was = prior.origin or prior.root
    if not replace:
        held = prior.counts.get("kernels")
        raise UsageError(
            f"the store already has a source named {source.name!r}, mined from {was}"
            + (f" ({held} kernels)" if held is not None else "")
            + f"; this one comes from {source.origin}. Mine it under its own name (--source NAME), "
            f"or delete the stored one and mine this in its place (--replace)")
    removed = kb.remove_source(source.name)
    return {"origin": prior.origin, "root": prior.root, **removed}


def same_origin(origin: str, root: str, source: Source) -> bool:
    """Is a stored source (its ``origin``, ``root``) the code ``source`` reads? Records
    written before origins existed have none: their root — the path given then — is
    compared with this source's, resolved when it is absolute (a relative root can only
    be compared as written)."""
    if origin:
        return origin == source.origin
    if root == source.root:
        return True
    here = source.local_path
    if here is None:
        return False
    # a git source's root is "PATH@REV": the same repository at another revision matches
    for candidate in {root, root.rpartition("@")[0]} - {""}:
        p = Path(candidate)
        if p.is_absolute() and p.resolve() == here.resolve():
            return True
    return False


def walk_hint(text: str, rel: str) -> bool:
    """Can this file hold a unit of its language (a Triton kernel, a CUDA kernel or binding)?"""
    return hint(text, rel)
