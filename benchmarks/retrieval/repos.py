"""Where the commit benchmark's code comes from: bare git repositories, read with git plumbing.

A case names a GitHub repository and two commits. ``ensure(repo)`` returns a bare clone:
``$SKEL_BENCH_MIRRORS/<owner>+<name>/repo`` when that exists (the workplace's mirrors), else
a bare clone made once under the cache (``git clone --bare``: network at benchmark time only,
never in skel itself). Files are read with ``git show REV:PATH``; nothing is checked out.
"""

from __future__ import annotations

import os
import re
import subprocess
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

DEFAULT_CACHE = Path(os.environ.get("SKEL_BENCH_CACHE", Path.home() / ".cache" / "skel-bench"))
MIRRORS = Path(os.environ.get("SKEL_BENCH_MIRRORS", "/work/.mirror"))


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True,
                         errors="replace", timeout=300)
    if out.returncode:
        raise RuntimeError(f"git {' '.join(args[:3])} in {repo}: {out.stderr.strip().splitlines()[-1:]}")
    return out.stdout


def ensure(repo: str, cache: Path = DEFAULT_CACHE) -> Path:
    """A bare repository holding ``repo``'s history ("owner/name")."""
    slug = repo.replace("/", "+")
    mirror = MIRRORS / slug / "repo"
    if (mirror / "HEAD").is_file():
        return mirror
    dest = cache / "repos" / f"{slug}.git"
    if not (dest / "HEAD").is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        print(f"  cloning {repo} (bare) into {dest}", flush=True)
        subprocess.run(["git", "clone", "--quiet", "--bare", f"https://github.com/{repo}.git", str(dest)],
                       check=True, timeout=3600)
    return dest


@lru_cache(maxsize=4096)
def show(repo: Path, rev: str, path: str) -> str:
    """The text of ``path`` at ``rev``."""
    return git(repo, "show", f"{rev}:{path}")


def mentioning(repo: Path, rev: str, stem: str) -> list[tuple[str, str]]:
    """(path, text) at ``rev`` of every Python file whose text holds ``stem`` (``git grep``):
    what ``skel suggest`` reads of a checkout to see who imports a kernel's module."""
    out = subprocess.run(["git", "--git-dir", str(repo), "grep", "-l", "-F", "-e", stem, rev, "--", "*.py"],
                         capture_output=True, text=True, errors="replace", timeout=300)
    paths = [line.partition(":")[2] for line in out.stdout.splitlines() if ":" in line]
    if not paths:
        return []
    batch = subprocess.run(["git", "--git-dir", str(repo), "cat-file", "--batch"],
                           input="".join(f"{rev}:{p}\n" for p in paths).encode(), capture_output=True, timeout=300)
    data, files, at = batch.stdout, [], 0
    for p in paths:  # each answer: "<sha> blob <size>\n<content>\n", or "<name> missing\n"
        header_end = data.index(b"\n", at)
        header = data[at:header_end].split()
        at = header_end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        files.append((p, data[at:at + size].decode("utf-8", "replace")))
        at += size + 1
    return files


def backend_by_importers(repo: Path, rev: str, path: str) -> tuple[str, str]:
    """What ``skel suggest`` concludes from the importers of ``path`` in a checkout of
    ``rev`` (skel/kernels/importers.py), read from the bare repository. The whole tree is
    read, not only the file's top-level package: an importer outside it (an example, a
    benchmark) can only make the answer more cautious. Common names are not narrowed to the
    files that could import them first, as ``skel suggest`` does: a name in more than
    ``MAX_MENTIONS`` files concludes nothing here (more cautious again)."""
    from skel.kernels.importers import ImportGraph

    return ImportGraph(lambda stem: mentioning(repo, rev, stem)).backend(path)


def settle_backends(repo: Path, rev: str, path: str, kernels: list) -> None:
    """``skel.kernels.importers.settle_backends`` in a checkout of ``rev``, read from the bare
    repository as ``backend_by_importers`` reads it: the importers of ``path``, then the
    mentions of the functions launching each kernel."""
    from skel.kernels.importers import ImportGraph
    from skel.kernels.importers import settle_backends as settle

    settle(ImportGraph(lambda stem: mentioning(repo, rev, stem)), path, kernels)


def _utc(timestamp: str) -> str:
    return datetime.fromtimestamp(int(timestamp), timezone.utc).isoformat()


def last_commit_before(repo: Path, date: str) -> tuple[str, str]:
    """(sha, UTC committer date) of the newest first-parent commit of HEAD committed before ``date``.

    A bare ``YYYY-MM-DD`` means midnight UTC: git alone reads it as that day at the current
    time of day, which let commits made on the cutoff day itself through.
    """
    bound = f"{date} 00:00:00 +0000" if re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) else date
    line = git(repo, "log", "--first-parent", "-1", f"--before={bound}", "--format=%H %ct", "HEAD").strip()
    if not line:
        raise RuntimeError(f"{repo}: no commit before {date}")
    sha, when = line.split()
    return sha, _utc(when)


def commit_date(repo: Path, rev: str) -> str:
    """The committer date in UTC (``%cI`` keeps the committer's zone: 2025-07-01T01:20+08:00 is June 30)."""
    return _utc(git(repo, "show", "-s", "--format=%ct", rev).strip())


def tag_dates(repo: Path) -> dict[str, str]:
    """Every tag's commit date (``v0.2.2`` -> ``2025-06-05T...``)."""
    out = git(repo, "for-each-ref", "--format=%(refname:short) %(*committerdate:iso-strict)"
              "%(committerdate:iso-strict)", "refs/tags")
    return {t: d for t, d in (line.split(" ", 1) for line in out.splitlines() if " " in line)}
