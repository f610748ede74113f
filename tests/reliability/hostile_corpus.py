"""Seeded generators of hostile kernel sources, shared by tests/reliability/test_hostile.py
(the CI run) and benchmarks/reliability/reliability.py (the long run).

``corpus(n, seed)`` returns ``n`` (kind, file name, bytes) triples: real fixture kernels
(skel/skeletons/catalog/*/fixtures*) mutated at random, random token soup, very deep nesting, huge
literals, and every encoding trouble a checkout holds (Latin-1, UTF-16, BOMs, CRLF, lone
CRs, NUL bytes, invalid UTF-8 mid-file). The same (n, seed) always gives the same files,
so a failure reproduces from its seed and index alone. ``hazards(root, rng)`` adds what a
file system holds beside files: FIFOs, symlink loops, links out of the root, dangling
links, unreadable files.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Callable

CATALOG = Path(__file__).resolve().parents[2] / "skel" / "skeletons" / "catalog"
PY_HEAD = "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
CU_HEAD = "#include <cuda_runtime.h>\n__global__ void k(float* x, int n) {\n"

_PY_TOKENS = ["def", "k", "(", ")", ":", "\n", "    ", "x", "tl.load", "tl.store", "tl.dot", "+", "*", "[", "]",
              "{", "}", ",", "=", "for", "in", "range", "if", "else", "lambda", "not", "-", "**", "return",
              "tl.arange", "0", "1.5", "'s'", '"""', "#", "\\", "@triton.jit", "BLOCK", "tl.constexpr",
              "async", "await", "yield", "with", "as", ".", "..", ";", "\t", "mask=", "other=", "None"]
_CU_TOKENS = ["__global__", "__device__", "__shared__", "void", "float", "int", "*", "(", ")", "{", "}", "[", "]",
              ";", "\n", "x", "threadIdx.x", "blockIdx.x", "+", "=", "for", "if", "else", "#define", "#include",
              "template", "<", ">", "::", "return", "__syncthreads()", "asm", "volatile", '"', "'", "/*", "*/",
              "//", "\\", ",", "m.def", "PYBIND11_MODULE", "namespace", "struct", "0", "1.0f"]
_PY_DEEP = {
    "paren": lambda n: "(" * n + "x" + ")" * n,
    "list": lambda n: "[" * n + "]" * n,
    "dict": lambda n: "{1: " * n + "1" + "}" * n,
    "call": lambda n: "f(" * n + ")" * n,
    "unary": lambda n: "-" * n + "x",
    "not": lambda n: "not " * n + "x",
    "plus": lambda n: " + ".join(["x"] * n),
    "pow": lambda n: " ** ".join(["x"] * n),
    "ternary": lambda n: " if x else ".join(["x"] * n),
    "lambda": lambda n: "lambda: " * n + "x",
    "attr": lambda n: "x" + ".a" * n,
    "subscript": lambda n: "x" + "[0]" * n,
    "string": lambda n: " ".join(["'s'"] * n),
    "bslambda": lambda n: "lambda: \\\n" * n + "x",
}
_CU_DEEP = {
    "paren": lambda n: "float y = " + "(" * n + "x[0]" + ")" * n + ";",
    "brace": lambda n: "{" * n + "}" * n,
    "plus": lambda n: "float y = " + " + ".join(["x[0]"] * n) + ";",
    "if": lambda n: "if (n) " * n + "x[0] = 1;",
    "template": lambda n: "A<" * n + "int" + ">" * n + " y;",
    "unary": lambda n: "float y = " + "-" * n + "x[0];",
    "ifdef": lambda n: "#if 1\n" * n + "x[0] = 1;\n" + "#endif\n" * n,
}
KINDS = ("mutated-py", "mutated-cu", "random-py", "random-cu", "deep-py", "deep-cu", "huge-literal",
         "encoding", "line-endings")
# weights: mutated real kernels are the most telling and the slowest to parse
_WEIGHTS = (3, 2, 2, 2, 2, 1, 1, 2, 1)


def fixtures() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    py, cu = [], []
    # named as the flat fixtures folder named them (`launch_pdl_training_ops.py`), in that
    # order: the seeded corpus stays the one it always was
    named = {p.parent.name + p.name[len("fixtures"):]: p for p in CATALOG.glob("*/fixtures*")}
    for name, p in sorted(named.items()):
        if p.suffix == ".py":
            py.append((name, p.read_text()))
        elif p.suffix in (".cu", ".cuh", ".cpp"):
            cu.append((name, p.read_text()))
    return py, cu


def mutate(text: str, rng: random.Random, tokens: list[str]) -> str:
    """1-6 random edits: delete, duplicate or move a span, insert tokens or junk, cut."""
    for _ in range(rng.randint(1, 6)):
        n = len(text)
        i, j = sorted(rng.randrange(n + 1) for _ in range(2))
        op = rng.randrange(7)
        if op == 0:
            text = text[:i] + text[j:]
        elif op == 1:
            text = text[:j] + text[i:j] + text[j:]
        elif op == 2:
            text = text[:i] + "".join(rng.choice(tokens) + rng.choice(["", " "]) for _ in range(rng.randint(1, 12))) \
                + text[i:]
        elif op == 3:
            text = text[:i] + "".join(chr(rng.randrange(32, 0x3000)) for _ in range(rng.randint(1, 8))) + text[i:]
        elif op == 4:
            text = text[:i]
        elif op == 5:
            lines = text.splitlines(keepends=True)
            rng.shuffle(lines)
            text = "".join(lines)
        else:
            c = rng.choice("([{)]}")
            text = text[:i] + c * rng.randint(1, 300) + text[i:]
    return text


def _soup(rng: random.Random, tokens: list[str], head: str) -> str:
    return head + "".join(rng.choice(tokens) + rng.choice(["", " ", " "]) for _ in range(rng.randint(5, 400)))


def one(kind: str, i: int, rng: random.Random, py: list, cu: list, *, max_deep: int = 6000,
        max_literal: int = 400_000) -> tuple[str, bytes]:
    """File ``i`` of ``kind``: its name and bytes."""
    if kind == "mutated-py":
        name, text = rng.choice(py)
        return f"m{i}_{name}", mutate(text, rng, _PY_TOKENS).encode("utf-8", "surrogatepass")
    if kind == "mutated-cu":
        name, text = rng.choice(cu)
        return f"m{i}_{name}", mutate(text, rng, _CU_TOKENS).encode("utf-8", "surrogatepass")
    if kind == "random-py":
        return f"r{i}.py", _soup(rng, _PY_TOKENS, PY_HEAD if rng.random() < 0.7 else "").encode()
    if kind == "random-cu":
        return f"r{i}.cu", _soup(rng, _CU_TOKENS, CU_HEAD if rng.random() < 0.7 else "").encode()
    n = int(10 ** rng.uniform(1, 1 + (len(str(max_deep)) - 1) * rng.random()))  # log-uniform up to max_deep
    n = min(n, max_deep)
    if kind == "deep-py":
        shape = rng.choice(sorted(_PY_DEEP))
        return f"d{i}_{shape}_{n}.py", (PY_HEAD + f"def k(x):\n    y = {_PY_DEEP[shape](n)}\n").encode()
    if kind == "deep-cu":
        shape = rng.choice(sorted(_CU_DEEP))
        return f"d{i}_{shape}_{n}.cu", (CU_HEAD + _CU_DEEP[shape](n) + "\n}\n").encode()
    if kind == "huge-literal":
        size = int(10 ** rng.uniform(2, len(str(max_literal)) - 1))
        what = rng.randrange(4)
        if what == 0:
            lit = '"' + "a" * size + '"'
        elif what == 1:
            lit = "1" * size
        elif what == 2:
            lit = "[" + ", ".join(["1"] * (size // 3)) + "]"
        else:
            lit = '"""' + "\n".join(["line"] * (size // 5)) + '"""'
        if rng.random() < 0.5:
            return f"h{i}.py", (PY_HEAD + f"def k(x_ptr):\n    y = {lit}\n    tl.store(x_ptr, y)\n").encode()
        return f"h{i}.cu", (CU_HEAD + f"  const char* s = {lit.replace(chr(10), ' ')};\n}}\n").encode()
    name, text = rng.choice(py + cu)
    suffix = name[name.rindex("."):]
    if kind == "encoding":
        how = rng.randrange(8)
        if how == 0:
            data = text.encode("utf-8", "surrogatepass").replace(b"x", "\u00e9".encode("latin-1"))  # Latin-1
        elif how == 1:
            data = text.encode("utf-16")  # with a BOM, NULs everywhere
        elif how == 2:
            data = b"\xef\xbb\xbf" + text.encode()  # UTF-8 BOM
        elif how == 3:
            cut = rng.randrange(len(text) + 1)
            data = text[:cut].encode() + bytes([rng.randrange(0x80, 0x100)]) + text[cut:].encode()
        elif how == 4:
            cut = rng.randrange(len(text) + 1)
            data = text[:cut].encode() + b"\0" + text[cut:].encode()
        elif how == 5:
            data = text.encode() + "\u00e9".encode("cp1252") + "\u4e2d".encode("gb2312")  # mixed
        elif how == 6:
            data = "# -*- coding: latin-1 -*-\n".encode() + text.encode("latin-1", "replace")
        else:
            data = ("# \u00e9\u4e2d\U0001f600\u202e\n" + text).encode()  # valid non-ASCII, bidi control
        return f"e{i}_{how}{suffix}", data
    how = rng.randrange(4)  # line-endings
    if how == 0:
        data = text.replace("\n", "\r\n").encode()
    elif how == 1:
        data = text.replace("\n", "\r").encode()
    elif how == 2:
        data = "".join(line + rng.choice(["\n", "\r\n", "\r"]) for line in text.split("\n")).encode()
    else:
        data = text.replace("\n", "\n\f\v ").encode()
    return f"l{i}_{how}{suffix}", data


def corpus(n: int, seed: int, **limits) -> list[tuple[str, str, bytes]]:
    """``n`` generated files (kind, name, bytes), the same for the same (n, seed)."""
    rng = random.Random(seed)
    py, cu = fixtures()
    kinds = rng.choices(KINDS, weights=_WEIGHTS, k=n)
    out = []
    for i, kind in enumerate(kinds):
        name, data = one(kind, i, random.Random(f"{seed}:{i}"), py, cu, **limits)
        out.append((kind, name, data))
    return out


def hazards(root: Path) -> dict[str, str]:
    """Put the file system's own hazards under ``root``; returns {rel: what it is}."""
    root.mkdir(parents=True, exist_ok=True)
    made = {}
    os.mkfifo(root / "pipe.py")
    made["pipe.py"] = "fifo"
    os.mkfifo(root / "pipe.cu")
    made["pipe.cu"] = "fifo"
    (root / "loops").mkdir()
    os.symlink("..", root / "loops" / "up")
    made["loops/up"] = "dir loop"
    os.symlink("self.py", root / "loops" / "self.py")
    made["loops/self.py"] = "file loop"
    os.symlink("a.py", root / "loops" / "b.py")
    os.symlink("b.py", root / "loops" / "a.py")
    made["loops/a.py"] = made["loops/b.py"] = "mutual loop"
    os.symlink("/etc", root / "etc")
    made["etc"] = "dir out of root"
    outside = root.parent / f"{root.name}-outside.py"
    outside.write_text(PY_HEAD + "def k(x):\n    tl.store(x, 1)\n")
    os.symlink(outside, root / "out.py")
    made["out.py"] = "file out of root"
    os.symlink("missing.py", root / "dangling.py")
    made["dangling.py"] = "dangling"
    locked = root / "locked.py"
    locked.write_text(PY_HEAD + "def k(x):\n    tl.store(x, 1)\n")
    locked.chmod(0)
    made["locked.py"] = "unreadable"
    (root / "closed").mkdir()
    (root / "closed" / "k.py").write_text(PY_HEAD + "def k(x):\n    tl.store(x, 1)\n")
    (root / "closed").chmod(0)
    made["closed"] = "unreadable dir"
    if hasattr(os, "mknod"):
        try:
            os.mknod(root / "null.py", 0o600 | 0o020000, os.makedev(1, 3))  # a character device
            made["null.py"] = "device"
        except (PermissionError, OSError):
            pass  # only root may create device files
    return made


def reads_blocked() -> bool:
    """Does chmod 000 stop this process reading? Not for root (CAP_DAC_OVERRIDE)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x"
        p.write_text("x")
        p.chmod(0)
        try:
            p.read_text()
            return False
        except PermissionError:
            return True
        finally:
            p.chmod(0o600)


# --- running the extractors over a corpus, as the miner does --------------------------------

def reason_kind(reason: str) -> str:
    """A skip reason without its particulars, for counting: 'syntax error', 'too large'..."""
    head = reason.split(":")[0].split("(")[0].strip()
    return head or reason


HANG_GRACE = 60.0  # seconds past the per-file limit before a silence counts as a hang


def run_extract(files: list[tuple[str, str, bytes]], *, jobs: int = 2, seconds: float = 30.0,
                tick: Callable[[], None] | None = None) -> dict:
    """Decode each file as the miner does, then extract it in the miner's isolated workers
    (a crash or a time-out costs that file only and is counted). Returns the figures and,
    for each crash, hang, time-out or error, the file's index.

    A file stopped at the per-file limit (``timed_out``) is contained: its worker is killed,
    the file skipped with the reason, the run goes on. A hang is the limit failing: no file
    finishing for ``seconds + HANG_GRACE`` while workers are busy (the file that ends such a
    silence is named). A hang that never ends is the caller's to catch (``tick`` is called
    at each result: benchmarks/reliability/reliability_fuzz.py re-arms a watchdog with it)."""
    import time
    from collections import Counter

    from skel.miner.mine import _CRASHED, _TIMED_OUT, isolated
    from skel.miner.walk import Skipped, decode

    t0 = time.perf_counter()
    out: dict = {"files": len(files), "by_kind": Counter(k for k, _, _ in files), "kernels": 0,
                 "with_kernels": 0, "skipped": Counter(), "crashes": [], "hangs": [], "timed_out": [],
                 "errors": [], "longest_silence": 0.0}
    jobs_in, index = [], []
    for i, (_, name, data) in enumerate(files):
        item = decode(name, data)
        if isinstance(item, Skipped):
            out["skipped"][reason_kind(item.reason)] += 1
        else:
            jobs_in.append((name, item.text, []))
            index.append(i)
    last = time.monotonic()
    for j, (_rel, value) in isolated(jobs_in, jobs, seconds):
        i = index[j]
        now = time.monotonic()
        silence, last = now - last, now
        out["longest_silence"] = max(out["longest_silence"], silence)
        if silence > seconds + HANG_GRACE:
            out["hangs"].append((i, f"no file finished for {silence:.0f}s (limit {seconds:g}s)"))
        if tick:
            tick()
        if isinstance(value, list):
            out["kernels"] += len(value)
            out["with_kernels"] += bool(value)
        elif value.startswith(_CRASHED):
            out["crashes"].append((i, value))
        elif value.startswith(_TIMED_OUT):
            out["timed_out"].append((i, value))
            out["skipped"][reason_kind(value)] += 1
        elif value.startswith("extractor failed"):
            out["errors"].append((i, value))
        else:
            out["skipped"][reason_kind(value)] += 1
    out["seconds"] = time.perf_counter() - t0
    return out


def dying_extract(job: tuple[str, str, list[str]]):
    """``_extract`` but for files named to misbehave: ``*crash*`` kills its worker with
    SIGSEGV (what libcst's stack overflow does), ``*hang*`` never returns. For tests of the
    miner's worker isolation; module-level so a spawned worker can import it."""
    import signal
    import time

    from skel.miner.mine import _extract

    if "crash" in job[0]:
        os.kill(os.getpid(), signal.SIGSEGV)
    if "hang" in job[0]:
        time.sleep(3600)
    return _extract(job)
