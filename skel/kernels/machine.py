"""Machine-code facts of one Triton kernel, compiled offline on the CPU (issue #35, item 2).

Given a file's text, a kernel's name and what is known of its launch (:class:`Launch`),
:func:`machine_facts` compiles the kernel for a CUDA target (sm_90 by default) with Triton's
own compiler and bundled ptxas on a machine with no GPU, and returns :class:`MachineFacts`:
registers per thread, spill stores/loads, shared memory, the occupancy those allow on the
target, global load/store vector widths, the MMA kind, MUFU instructions and a hash of the
normalised PTX. :func:`same_machine_code` says whether two versions of a file compile the
kernel to the same PTX.

How
---
Importing a user's file runs it, so compiling happens outside this process, with a timeout,
``TRITON_INTERPRET`` unset, a fresh private Triton cache per compile, and
:func:`skel.kernels.offline.offline_cuda` standing in for the driver: in a fork of the warm
compile worker (:mod:`skel.kernels.compile_worker`, ``python -m skel.kernels.machine
--worker``: started on the first compile, or by :func:`prestart`, and kept; it imports
torch and what each file imports once, so a second file of the same package costs its
compile only), else in a one-shot child (``python -m skel.kernels.machine``), which the
worker falls back to whenever it cannot answer. Both run the same code
(:func:`_child_run`) and give the same facts. The child builds the signature Triton's JIT
would build at launch, calls ``triton.compile(ASTSource(...), target=GPUTarget("cuda", cc,
32))`` (without Triton's hash of its own installation, which only names a cache entry:
:func:`_no_triton_cache_key`) and reads registers and spills from ptxas's ``-v`` log (the
CUDA driver, which gives ``n_regs`` online, is not there). Results are cached by content
(source text, kernel, launch, target, Triton version, this package's version) under
:func:`cache_dir`, written atomically; a failed compile is cached too (it is deterministic),
a timeout or a crashed child is not.

What a launch does not say is assumed, and each assumption is listed in
``MachineFacts.assumed``:

- a parameter is a pointer when ``Launch.dtypes`` gives it a ``*`` type, or its name ends in
  ``ptr``, or it is the leftmost term of an address given to ``tl.load``/``tl.store``/an
  atomic/``tl.make_block_ptr``/``tl.make_tensor_descriptor`` (through local assignments);
  its element type is :data:`DEFAULT_POINTER` (``*fp16``);
- any other runtime parameter is :data:`DEFAULT_INT` (``i32``), not divisible by 16 unless
  named in ``Launch.divisible``; pointers are 16-byte aligned (as torch allocations are);
- a ``tl.constexpr`` takes ``Launch.constexprs``, else the first autotune config's value,
  else the signature's default; none of these is an error naming the parameter;
- ``num_warps``/``num_stages``: the launch's, else the first autotune config's, else 4 and 3.

What offline compilation cannot know: the launch's real dtypes, values and alignment (each
changes the code: a runtime length divisible by 16 vectorises masked loads), the config an
autotuner would pick, ``@triton.heuristics`` values (they need the real arguments), and
anything about run time (achieved occupancy, memory throughput, bank conflicts).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping

from skel.errors import SkelError
from skel.kernels import compile_worker, extractor_version
from skel.kernels.offline import DEVICE_PROPERTIES, normalise, offline_cuda

DEFAULT_POINTER = "*fp16"
DEFAULT_INT = "i32"
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3
DEFAULT_CC = 90
CHILD_TIMEOUT_S = 120.0
_MARK = "SKEL-MACHINE-RESULT "
#: bump when the facts' shape or meaning changes (the package hash covers code changes too)
FACTS_VERSION = 1


class MachineFactsUnavailable(SkelError):
    """The kernel's machine code cannot be had: no Triton, the file does not import, the
    kernel is missing, a constexpr has no value, or the compiler refused it. The message is
    the reason."""

    kind = "machine"


# ---- what a launch is known to be -----------------------------------------------------------

@dataclass(frozen=True)
class Launch:
    """What is known of one launch. Every field may be left out (see the module docstring for
    what is then assumed).

    ``dtypes``: parameter -> Triton signature type: ``"*fp16"``, ``"*bf16"``, ``"*fp32"``,
    ``"*i64"`` for pointers; ``"i32"``, ``"i64"``, ``"fp32"`` for scalars.
    ``divisible``: integer parameters known to be divisible by 16 (Triton specialises on it).
    """

    constexprs: Mapping[str, Any] = field(default_factory=dict)
    dtypes: Mapping[str, str] = field(default_factory=dict)
    num_warps: int | None = None
    num_stages: int | None = None
    divisible: tuple[str, ...] = ()

    def key(self) -> dict[str, Any]:
        return {"constexprs": {k: _jsonable(v) for k, v in sorted(self.constexprs.items())},
                "dtypes": dict(sorted(self.dtypes.items())), "num_warps": self.num_warps,
                "num_stages": self.num_stages, "divisible": sorted(self.divisible)}


def _jsonable(v: Any) -> Any:
    return v if isinstance(v, (int, float, bool, str, type(None))) else repr(v)


# ---- the facts --------------------------------------------------------------------------------

@dataclass(frozen=True)
class GlobalAccess:
    """Global loads or stores in the PTX, by vector width; ``bytes`` maps bytes per access
    (vector width x element size) to a count."""

    scalar: int = 0
    v2: int = 0
    v4: int = 0
    bytes: dict[int, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.scalar + self.v2 + self.v4

    @property
    def widest(self) -> int:
        """The most bytes one access moves (16 = a 128-bit access); 0 without accesses."""
        return max(self.bytes, default=0)


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps per SM that registers, shared memory and warps allow."""

    blocks_per_sm: int
    warps_per_sm: int
    max_warps: int
    limited_by: str  # "registers" | "shared" | "warps" | "blocks"

    @property
    def fraction(self) -> float:
        return self.warps_per_sm / self.max_warps if self.max_warps else 0.0


@dataclass(frozen=True)
class MachineFacts:
    kernel: str
    arch: str  # "sm_90"
    triton: str
    num_warps: int
    num_stages: int
    registers: int  # per thread
    spill_stores: int  # bytes
    spill_loads: int  # bytes
    shared_bytes: int  # per block: Triton's dynamic shared memory plus any static
    occupancy: Occupancy
    loads: GlobalAccess
    stores: GlobalAccess
    mma: str  # "none" | "mma.sync" | "wgmma"
    mma_count: int
    mufu: dict[str, int]  # "ex2", "lg2", "rsqrt", "rcp", "sqrt", "sin", "cos", "tanh", "div.full"
    other: dict[str, int]  # "cp.async", "cp.async.bulk.tensor", "atom.global", "red.global"
    ptx_hash: str  # sha256 of the PTX, kernel names and debug info stripped
    signature: dict[str, str]  # the signature compiled: parameter -> type or "constexpr=VALUE"
    assumed: list[str]  # what the launch did not say and was assumed
    #: seconds the caller waited for it: a one-shot child's whole run (start-up included), or
    #: a compile worker's answer (its preload and fork included)
    compile_s: float = 0.0
    #: the child's parts: "import" (running the user's file), "compile" (triton.compile + ptxas);
    #: from the compile worker also "preload" (importing the file's imports, once per package)
    timings: dict[str, float] = field(default_factory=dict)
    cached: bool = False

    @property
    def spilled_bytes(self) -> int:
        return self.spill_stores + self.spill_loads

    @property
    def mufu_total(self) -> int:
        return sum(self.mufu.values())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MachineFacts:
        d = dict(d)
        d["occupancy"] = Occupancy(**d["occupancy"])
        for k in ("loads", "stores"):
            acc = dict(d[k])
            acc["bytes"] = {int(b): int(n) for b, n in acc["bytes"].items()}
            d[k] = GlobalAccess(**acc)
        return cls(**d)


# ---- occupancy ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ArchLimits:
    name: str
    gpus: str
    regs_per_sm: int
    smem_per_sm: int  # bytes a SM can give to blocks
    smem_per_block: int  # the most one block may use
    max_warps: int
    max_blocks: int
    smem_reserved: int = 1024  # per block, by the CUDA runtime (sm_80 and later)
    reg_unit: int = 256  # registers are allocated per warp in units of this
    max_regs: int = 255


#: Per-architecture limits (CUDA programming guide, compute capabilities table).
ARCHS: dict[int, ArchLimits] = {
    80: ArchLimits("sm_80", "A100", 65536, 164 * 1024, 163 * 1024, 64, 32),
    86: ArchLimits("sm_86", "RTX 30xx, A10", 65536, 100 * 1024, 99 * 1024, 48, 16),
    89: ArchLimits("sm_89", "L4, L40, RTX 40xx", 65536, 100 * 1024, 99 * 1024, 48, 24),
    90: ArchLimits("sm_90", "H100, H200", 65536, 228 * 1024, 227 * 1024, 64, 32),
    100: ArchLimits("sm_100", "B200", 65536, 228 * 1024, 227 * 1024, 64, 32),
}


def occupancy(registers: int, shared_bytes: int, num_warps: int, cc: int = DEFAULT_CC) -> Occupancy:
    """Blocks and warps per SM on ``cc`` (the occupancy calculator's arithmetic: registers
    per warp rounded up to the allocation unit and shared among four SM sub-partitions,
    shared memory plus the runtime's reserve per block)."""
    lim = ARCHS.get(cc) or ARCHS[max((c for c in ARCHS if c <= cc), default=min(ARCHS))]
    warps = max(num_warps, 1)
    per_warp = math.ceil(max(registers, 1) * 32 / lim.reg_unit) * lim.reg_unit
    by_regs = (4 * ((lim.regs_per_sm // 4) // per_warp)) // warps if registers <= lim.max_regs else 0
    if shared_bytes > lim.smem_per_block:
        by_smem = 0
    else:
        by_smem = lim.smem_per_sm // (shared_bytes + lim.smem_reserved)
    limits = {"registers": by_regs, "shared": by_smem, "warps": lim.max_warps // warps, "blocks": lim.max_blocks}
    limited_by = min(limits, key=lambda k: limits[k])
    blocks = limits[limited_by]
    return Occupancy(blocks, blocks * warps, lim.max_warps, limited_by)


# ---- reading PTX and the ptxas log ---------------------------------------------------------------

_OPCODE = re.compile(r"^\s*(?:@!?%\w+\s+)?((?:ld|st)\.global[\w.:]*)\s")
_MUFU = re.compile(r"\b(ex2|lg2|rsqrt|rcp|sqrt|sin|cos|tanh)\.approx\b|\b(div\.full)\.f32\b")
_OTHER = {"cp.async.bulk.tensor": re.compile(r"\bcp\.async\.bulk\.tensor\b"),
          "cp.async": re.compile(r"\bcp\.async\.(?:ca|cg)\b"),
          "atom.global": re.compile(r"\batom\.global\b"), "red.global": re.compile(r"\bred\.global\b")}
_BITS = re.compile(r"^[bfsu](8|16|32|64|128)$")


def _access(op: str) -> tuple[str, int, int]:
    """("ld"|"st", vector width, bits per element) of a ld/st.global opcode."""
    parts = op.split(".")
    vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
    bits = next((int(m.group(1)) for p in reversed(parts) if (m := _BITS.match(p))), 0)
    return parts[0], vec, bits


def ptx_facts(ptx: str) -> dict[str, Any]:
    """Global accesses by width, MMA kind, MUFU and other instruction counts of a PTX text."""
    acc: dict[str, dict[str, Any]] = {k: {"scalar": 0, "v2": 0, "v4": 0, "bytes": {}} for k in ("ld", "st")}
    mufu: dict[str, int] = {}
    for line in ptx.splitlines():
        m = _OPCODE.match(line)
        if m:
            kind, vec, bits = _access(m.group(1))
            a = acc[kind]
            a["scalar" if vec == 1 else f"v{min(vec, 4)}" if vec in (2, 4) else "v4"] += 1
            nbytes = vec * bits // 8
            a["bytes"][nbytes] = a["bytes"].get(nbytes, 0) + 1
        for mm in _MUFU.finditer(line):
            op = mm.group(1) or mm.group(2)
            mufu[op] = mufu.get(op, 0) + 1
    wgmma = len(re.findall(r"\bwgmma\.mma_async\b", ptx))
    mma_sync = len(re.findall(r"\bmma\.sync\b", ptx))
    mma = "wgmma" if wgmma else "mma.sync" if mma_sync else "none"
    return {"loads": acc["ld"], "stores": acc["st"], "mma": mma, "mma_count": wgmma or mma_sync,
            "mufu": dict(sorted(mufu.items())),
            "other": {k: n for k, rx in _OTHER.items() if (n := len(rx.findall(ptx)))}}


def ptxas_log_facts(log: str, name: str) -> dict[str, int] | None:
    """Registers, spill stores/loads and static shared bytes of ``name`` from ``ptxas -v``."""
    start = log.find(f"Compiling entry function '{name}'")
    if start < 0:
        return None
    part = log[start:]
    nxt = part.find("Compiling entry function", 1)
    part = part if nxt < 0 else part[:nxt]
    regs = re.search(r"Used (\d+) registers", part)
    if not regs:
        return None
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", part)
    smem = re.search(r"(\d+) bytes smem", part)
    return {"registers": int(regs.group(1)), "spill_stores": int(spill.group(1)) if spill else 0,
            "spill_loads": int(spill.group(2)) if spill else 0, "static_smem": int(smem.group(1)) if smem else 0}


# ---- which parameters are pointers ------------------------------------------------------------

_ADDRESS_CALLS = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
                  "atomic_and", "atomic_or", "atomic_xor", "make_block_ptr", "make_tensor_descriptor"}
_ADDRESS_KEYWORDS = ("pointer", "base", "ptr", "desc")


def pointer_params(func_source: str) -> set[str]:
    """Parameters of a ``@triton.jit`` function that are pointers, read from its code: named
    ``*ptr``, or the leftmost term of an address (through local assignments)."""
    tree = ast.parse(textwrap.dedent(func_source))
    fn = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fn is None:
        return set()
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    found = {p for p in params if p.lower().endswith("ptr")}
    values: dict[str, list[ast.expr]] = {}
    addresses: list[ast.expr] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    values.setdefault(t.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            values.setdefault(node.target.id, []).append(ast.BinOp(ast.Name(node.target.id), node.op, node.value))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            values.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in _ADDRESS_CALLS:
                if node.args:
                    addresses.append(node.args[0])
                addresses += [k.value for k in node.keywords if k.arg in _ADDRESS_KEYWORDS]

    def leftmost(e: ast.expr) -> list[str]:
        while True:
            if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
                e = e.left
            elif isinstance(e, ast.Subscript):
                e = e.value
            elif isinstance(e, ast.IfExp):
                return leftmost(e.body) + leftmost(e.orelse)
            elif isinstance(e, ast.Name):
                return [e.id]
            else:
                return []

    seen: set[str] = set()
    todo = [n for a in addresses for n in leftmost(a)]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in params:
            found.add(n)
        for v in values.get(n, []):
            todo += leftmost(v)
    return found


# ---- the cache --------------------------------------------------------------------------------

def cache_dir() -> Path:
    """Where machine facts are cached: ``$SKEL_CACHE_DIR/machine``, else the local cache the
    rest of skel uses (``$SKEL_HOME/cache``, else ``$XDG_CACHE_HOME/skel`` or ``~/.cache/skel``)
    plus ``/machine``. Always safe to delete."""
    if os.environ.get("SKEL_CACHE_DIR"):
        return Path(os.environ["SKEL_CACHE_DIR"]) / "machine"
    if os.environ.get("SKEL_HOME"):
        return Path(os.environ["SKEL_HOME"]) / "cache" / "machine"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skel" / "machine"


def triton_version() -> str | None:
    """The installed Triton's version without importing it (a cached lookup stays cheap)."""
    import importlib.util  # stdlib, a fraction of a millisecond; only here

    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    site = Path(spec.origin).resolve().parent.parent
    for d in site.glob("triton-*.dist-info"):
        return d.name[len("triton-"):-len(".dist-info")]
    import importlib.metadata  # 12 ms; only where the dist-info folder is not beside the package

    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def cache_key(source: str, kernel: str, launch: Launch, cc: int, triton: str) -> str:
    blob = json.dumps({"v": FACTS_VERSION, "code": extractor_version(), "source": hashlib.sha256(
        source.encode()).hexdigest(), "kernel": kernel, "launch": launch.key(), "cc": cc, "triton": triton},
        sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _read_cache(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and ("error" in data or "facts" in data):
            if "facts" in data:
                MachineFacts.from_json(data["facts"])  # a corrupt entry raises here: recompute
            return data
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pass
    return None


def _write_cache(path: Path, data: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


# ---- the parent's side --------------------------------------------------------------------------

def _child_env() -> dict[str, str]:
    """The environment a compiling child gets: this one, Triton's interpreter off, this
    checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _worker_args(cc: int) -> tuple[tuple[Any, ...], list[str], dict[str, str]]:
    """The compile worker for ``cc`` here: its key (what must match for it to be reused:
    the target, the interpreter, the working directory, the environment), command, environment."""
    env = _child_env()
    key = (cc, sys.executable, os.getcwd(), compile_worker.env_key(env))
    return key, [sys.executable, "-m", "skel.kernels.machine", "--worker", str(cc)], env


def _seen_mark(source: str, cc: int, triton: str) -> Path:
    """A file in the cache saying some kernel of this exact text was compiled for ``cc`` (so
    a repeat run will likely find its facts cached and need no compiler)."""
    blob = json.dumps({"code": extractor_version(), "cc": cc, "triton": triton}, sort_keys=True) + source
    return cache_dir() / f"seen-{hashlib.sha256(blob.encode()).hexdigest()}"


def prestart(source: str, cc: int = DEFAULT_CC) -> bool:
    """Start the compile worker for ``cc`` now and have it import what ``source`` imports
    (torch, its package), without waiting: a caller that will ask for this file's facts
    soon (``skel suggest --compile``) overlaps that with its own work. False when the
    worker is off, cannot start, or Triton is not installed, and when this very text has
    been compiled before (its facts are likely cached: a worker getting ready for nothing
    would only take the processor from the caller; a miss starts it at the compile)."""
    version = triton_version()
    if version is None or _seen_mark(source, cc, version).exists():
        return False
    key, argv, env = _worker_args(cc)
    return compile_worker.prestart(key, argv, env, {"op": "preload", "source": source})


def _compile(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Compile ``spec`` in the warm worker (:mod:`skel.kernels.compile_worker`), else in a
    one-shot child (:func:`_compile_once`): ``{"facts": ...}``, ``{"error": reason}`` (a
    compile that failed: cacheable) or ``{"crash": reason}`` (a timeout or a dead child:
    not cached)."""
    if compile_worker.enabled():
        key, argv, env = _worker_args(int(spec["cc"]))
        t0 = time.perf_counter()
        data = compile_worker.request(key, argv, env, {"op": "compile", "spec": spec}, timeout,
                                      f"compiling {spec['kernel']}")
        if data is not None:
            if "facts" in data:
                data["facts"]["compile_s"] = round(time.perf_counter() - t0, 4)
            return data
    return _compile_once(spec, timeout)


def _compile_once(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run a one-shot child (``python -m skel.kernels.machine``) on ``spec``; answers as
    :func:`_compile`."""
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="skel-machine-") as d:  # here: removed even if the child is killed
            proc = subprocess.run([sys.executable, "-m", "skel.kernels.machine", d], input=json.dumps(spec),
                                  capture_output=True, text=True, env=_child_env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"crash": f"compiling {spec['kernel']} took longer than {timeout:.0f} s"}
    except OSError as e:
        return {"crash": f"could not start the compiler process: {e}"}
    elapsed = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(_MARK)]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}, no output"])[-1]
        return {"crash": f"the compiler process died: {tail}"}
    data: dict[str, Any] = json.loads(lines[-1][len(_MARK):])
    if "facts" in data:
        data["facts"]["compile_s"] = round(elapsed, 4)
    return data


def machine_facts(source: str, kernel: str, launch: Launch | None = None, *, cc: int = DEFAULT_CC,
                  use_cache: bool = True, timeout: float = CHILD_TIMEOUT_S) -> MachineFacts:
    """The machine-code facts of ``kernel`` in the Triton file whose text is ``source``,
    compiled for CUDA compute capability ``cc`` (90: H100/H200) without a GPU.

    Raises :class:`MachineFactsUnavailable` with the reason when it cannot be compiled."""
    launch = launch or Launch()
    version = triton_version()
    if version is None:
        raise MachineFactsUnavailable("Triton is not installed (pip install triton), so nothing can be compiled")
    path = cache_dir() / f"{cache_key(source, kernel, launch, cc, version)}.json"
    data = _read_cache(path) if use_cache else None
    cached = data is not None
    if data is None:
        spec = {"source": source, "kernel": kernel, "launch": launch.key(), "cc": cc}
        data = _compile(spec, timeout)
        if "crash" in data:
            raise MachineFactsUnavailable(data["crash"])
        if use_cache:
            _write_cache(path, data)
            with contextlib.suppress(OSError):
                _seen_mark(source, cc, version).touch()
    if "error" in data:
        raise MachineFactsUnavailable(data["error"])
    facts = MachineFacts.from_json(data["facts"])
    if cached:
        facts = MachineFacts.from_json({**facts.to_json(), "cached": True})
    return facts


def same_machine_code(source_a: str, source_b: str, kernel: str, launch: Launch | None = None, *,
                      cc: int = DEFAULT_CC) -> bool | None:
    """Whether two versions of a file compile ``kernel`` to the same PTX (names and debug
    information stripped) for the same launch; None when either does not compile."""
    try:
        a = machine_facts(source_a, kernel, launch, cc=cc)
        b = machine_facts(source_b, kernel, launch, cc=cc)
    except MachineFactsUnavailable:
        return None
    return a.ptx_hash == b.ptx_hash and a.num_warps == b.num_warps and a.shared_bytes == b.shared_bytes


# ---- the child's side ---------------------------------------------------------------------------

def _unwrap(obj: Any) -> tuple[Any, list[Any]]:
    """The JITFunction under autotune/heuristics wrappers, and the autotune configs met."""
    from triton.runtime.jit import JITFunction  # triton: optional; the child imports it anyway

    configs: list[Any] = []
    for _ in range(8):
        if isinstance(obj, JITFunction):
            return obj, configs
        configs = configs or list(getattr(obj, "configs", []) or [])
        obj = getattr(obj, "fn", None)
        if obj is None:
            break
    raise MachineFactsUnavailable("not a @triton.jit kernel")


def _resolve(jit: Any, launch: dict[str, Any], configs: list[Any]) -> tuple[dict[str, str], dict[str, Any],
                                                                          dict[Any, Any], dict[str, int], list[str]]:
    """The signature, constexprs, attributes and options the JIT would compile with."""
    import inspect  # stdlib; only the child reads a function's source

    assumed: list[str] = []
    first = configs[0] if configs else None
    from_config = dict(first.kwargs) if first is not None else {}
    try:
        pointers = pointer_params(inspect.getsource(jit.fn))
    except (OSError, SyntaxError, TypeError):
        pointers = set()
    given_c: dict[str, Any] = launch["constexprs"]
    given_t: dict[str, str] = launch["dtypes"]
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    attrs: dict[Any, Any] = {}
    for i, p in enumerate(jit.params):
        name = p.name
        if p.is_constexpr or name in given_c:
            if name in given_c:
                value = given_c[name]
            elif name in from_config:
                value = from_config[name]
                assumed.append(f"{name}={value!r} from the first autotune config")
            elif p.has_default:
                value = p.default
                assumed.append(f"{name}={value!r} from the signature's default")
            else:
                raise MachineFactsUnavailable(
                    f"constexpr {name!r} of {jit.__name__} has no value: give it in Launch.constexprs"
                    + (" (it may come from @triton.heuristics, which needs the real arguments)" if not configs else ""))
            signature[name] = "constexpr"
            constexprs[name] = value
            continue
        ty = given_t.get(name) or p.annotation_type
        if not ty:
            ty = DEFAULT_POINTER if name in pointers else DEFAULT_INT
            assumed.append(f"{name}: {ty}")
        signature[name] = ty
        if ty.startswith("*") or name in launch["divisible"]:
            attrs[(i,)] = [["tt.divisibility", 16]]
    num_warps = launch["num_warps"] or (first.num_warps if first is not None else None)
    num_stages = launch["num_stages"] or (first.num_stages if first is not None else None)
    if launch["num_warps"] is None:
        assumed.append(f"num_warps={num_warps or DEFAULT_NUM_WARPS}" + (" from the first autotune config"
                                                                     if num_warps else ""))
    if launch["num_stages"] is None:
        assumed.append(f"num_stages={num_stages or DEFAULT_NUM_STAGES}" + (" from the first autotune config"
                                                                        if num_stages else ""))
    options = {"num_warps": int(num_warps or DEFAULT_NUM_WARPS), "num_stages": int(num_stages or DEFAULT_NUM_STAGES)}
    return signature, constexprs, attrs, options, assumed


def _ptxas_fallback(ptx: str, cc: int) -> str:
    """``ptxas -v`` run on the PTX here, where Triton's compile did not print its log."""
    import triton  # triton: optional; the child imports it anyway

    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    arch = f"sm_{cc}a" if cc >= 90 else f"sm_{cc}"
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx, encoding="utf-8")
        proc = subprocess.run([str(ptxas), "-v", f"--gpu-name={arch}", str(src), "-o", str(Path(d) / "k.o")],
                              capture_output=True, text=True, timeout=120)
    return proc.stderr + proc.stdout


def _child_compile(spec: dict[str, Any], workdir: Path) -> dict[str, Any]:
    import importlib.util  # stdlib; only the child imports the user's file

    try:
        import triton  # triton: optional; its absence is the answer
        from triton.backends.compiler import GPUTarget  # triton: as above
        from triton.compiler import ASTSource  # triton: as above
    except ImportError as e:
        return {"error": f"Triton is not installed or does not import: {e}"}
    cc = int(spec["cc"])
    kernel = spec["kernel"]
    path = workdir / "kernel_source.py"
    path.write_text(spec["source"], encoding="utf-8")
    captured = io.StringIO()
    with offline_cuda(cc, properties=True), contextlib.redirect_stdout(captured):
        t0 = time.perf_counter()
        modname = f"_skel_machine_{hashlib.sha1(spec['source'].encode()).hexdigest()[:12]}"
        mspec = importlib.util.spec_from_file_location(modname, path)
        if mspec is None or mspec.loader is None:
            return {"error": "the file cannot be imported"}
        if _imports_beyond_triton(spec["source"]) and importlib.util.find_spec("torch") is not None:
            # a package that asks torch.cuda about the device at import (fla does) is told
            # the target's answers: torch first, its device queries stood in for
            import torch  # noqa: F401  torch: 0.8 s; only where the file imports more than Triton

            _torch_cuda_standin(cc)
        module = importlib.util.module_from_spec(mspec)
        sys.modules[modname] = module
        try:
            mspec.loader.exec_module(module)
        except BaseException as e:  # the user's module: anything may escape, SystemExit included
            return {"error": f"importing the file failed: {type(e).__name__}: {_first_line(e)}"}
        t1 = time.perf_counter()
        obj = getattr(module, kernel, None)
        if obj is None:
            return {"error": f"no kernel named {kernel!r} in the file"}
        try:
            jit, configs = _unwrap(obj)
            signature, constexprs, attrs, options, assumed = _resolve(jit, spec["launch"], configs)
        except MachineFactsUnavailable as e:
            return {"error": str(e)}
        with contextlib.suppress(Exception):
            triton.knobs.nvidia.dump_ptxas_log = True
        target = GPUTarget("cuda", cc, 32)
        try:
            compiled = triton.compile(ASTSource(jit, signature, constexprs, attrs), target=target, options=options)
        except BaseException as e:  # the compiler's errors have no common base
            return {"error": f"{kernel} does not compile for sm_{cc}: {type(e).__name__}: {_first_line(e)}"}
        t2 = time.perf_counter()
    ptx = compiled.asm["ptx"]
    name = compiled.metadata.name
    log = ptxas_log_facts(captured.getvalue(), name) or ptxas_log_facts(_ptxas_fallback(ptx, cc), name)
    if log is None:
        return {"error": f"ptxas reported no register count for {name}"}
    md = compiled.metadata
    shared = int(getattr(md, "shared", 0) or 0) + log["static_smem"]
    num_warps = int(md.num_warps)
    occ = occupancy(log["registers"], shared, num_warps, cc)
    pf = ptx_facts(ptx)
    norm = normalise(ptx, "ptx", [kernel, jit.__name__, name])
    sig = {k: (f"constexpr={constexprs[k]!r}" if v == "constexpr" else v) for k, v in signature.items()}
    facts = MachineFacts(
        kernel=kernel, arch=f"sm_{cc}", triton=triton.__version__, num_warps=num_warps,
        num_stages=int(getattr(md, "num_stages", options["num_stages"])), registers=log["registers"],
        spill_stores=log["spill_stores"], spill_loads=log["spill_loads"], shared_bytes=shared, occupancy=occ,
        loads=GlobalAccess(**pf["loads"]), stores=GlobalAccess(**pf["stores"]), mma=pf["mma"],
        mma_count=pf["mma_count"], mufu=pf["mufu"], other=pf["other"],
        ptx_hash=hashlib.sha256(norm.encode()).hexdigest(), signature=sig, assumed=assumed,
        timings={"import": round(t1 - t0, 4), "compile": round(t2 - t1, 4)})
    return {"facts": facts.to_json()}


def _imports_beyond_triton(source: str) -> bool:
    """Whether the file imports anything but the standard library and Triton."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return bool(names - set(sys.stdlib_module_names) - {"triton"})


def _torch_cuda_standin(cc: int) -> bool:
    """Make torch.cuda's device queries answer for the target (a CPU build of torch raises on
    them): name, capability, properties, count, current device. Never ``is_available``, so
    nothing believes it can allocate. False when torch is not there or there is a real GPU."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    props = DEVICE_PROPERTIES.get(cc)
    if cuda is None or props is None:
        return False
    try:
        if cuda.is_available():
            return False
    except Exception:  # a broken CUDA install answers like none
        pass
    major, minor = divmod(cc, 10)
    info = SimpleNamespace(name=props["name"], major=major, minor=minor, total_memory=80 * 2**30,
                           multi_processor_count=props["multiprocessor_count"], warp_size=props["warpSize"],
                           shared_memory_per_block_optin=props["max_shared_mem"],
                           shared_memory_per_multiprocessor=ARCHS[cc].smem_per_sm if cc in ARCHS else 0,
                           regs_per_multiprocessor=props["max_num_regs"], L2_cache_size=50 * 2**20)
    cuda.get_device_name = lambda device=None: props["name"]
    cuda.get_device_capability = lambda device=None: (major, minor)
    cuda.get_device_properties = lambda device=None: info
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    return True


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Triton's CompilationError puts the source excerpt first and the reason last
    return (lines[-1] if lines else "").strip()[:300]


def _no_triton_cache_key() -> None:
    """Triton names each compile's entry in its on-disk cache by a hash of its own sources
    and of libtriton (``triton.runtime.cache.triton_key``: 0.3 s, once per process, and it
    imports every backend module to find them). Every compile here writes to a fresh,
    private cache, where that name tells nothing apart, so Triton's version stands in for
    it. What is compiled, and how, is unchanged."""
    try:
        import triton  # triton: optional; the child imports it anyway
        from triton.runtime import cache  # triton: as above
    except ImportError:
        return
    if callable(getattr(cache, "triton_key", None)):
        key = f"{triton.__version__}-skel-offline-private-cache"
        cache.triton_key = lambda: key


def _child_run(spec: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """One compile in this process, in ``workdir`` (a one-shot child's, or a worker's fork's)."""
    os.environ["TRITON_CACHE_DIR"] = str(workdir / "triton-cache")  # fresh: ptxas runs and logs
    os.environ.pop("TRITON_INTERPRET", None)
    _no_triton_cache_key()
    try:
        return _child_compile(spec, workdir)
    except Exception as e:  # a bug here must still answer with a reason
        return {"error": f"internal error while compiling: {type(e).__name__}: {_first_line(e)}"}


def _child_main(workdir: Path | None = None) -> None:
    """The one-shot child: a spec on stdin, the answer on stdout; in ``workdir`` (the
    parent's, which removes it) or a temporary folder of its own."""
    spec = json.loads(sys.stdin.read())
    with contextlib.ExitStack() as stack:
        d = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="skel-machine-")))
        out = _child_run(spec, d)
    sys.stdout.write(_MARK + json.dumps(out) + "\n")
    sys.stdout.flush()


# ---- the warm worker's side (skel.kernels.compile_worker) ---------------------------------------

def _module_imports(source: str) -> list[tuple[str, tuple[str, ...], tuple[int, ...]]]:
    """The absolute imports a file makes whatever happens when it runs, in order: at module
    level and inside ``try`` and ``with`` bodies (not under an ``if``, in an ``except``, or
    inside a function or class). Each is (module, names taken from it, the ``try`` bodies
    it sits in: a failed import ends the innermost one, or the file at module level)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out: list[tuple[str, tuple[str, ...], tuple[int, ...]]] = []
    tries = iter(range(1, 1 << 30))

    def visit(nodes: list[ast.stmt], scope: tuple[int, ...]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                out.extend((a.name, (), scope) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                out.append((node.module, tuple(a.name for a in node.names if a.name != "*"), scope))
            elif isinstance(node, ast.Try):
                visit(node.body, scope + (next(tries),))
            elif isinstance(node, ast.With):
                visit(node.body, scope)

    visit(tree.body, ())
    return out


def _preload(cc: int, source: str) -> None:
    """In the worker, before it forks for ``source``: import what the file imports whatever
    happens (:func:`_module_imports`) as its one-shot child would (torch first, its device
    queries stood in; each import under the offline driver), so the fork and every later
    one find it loaded. The fork runs the whole file itself and reports what fails."""
    import importlib.util  # stdlib; only the worker preloads

    if not _imports_beyond_triton(source):
        return
    if importlib.util.find_spec("torch") is not None:
        import torch  # torch: 0.8 s; only where a file imports more than Triton

        # a fork of a process whose torch thread pool has started hangs in its first
        # parallel op: on one thread, the worker never starts one (a fork may start its own)
        torch.set_num_threads(1)
        _torch_cuda_standin(cc)
    failed: set[tuple[int, ...]] = set()
    with offline_cuda(cc, properties=True), contextlib.redirect_stdout(io.StringIO()):
        for name, attrs, scope in _module_imports(source):
            if any(scope[:i] in failed for i in range(len(scope) + 1)):
                continue
            try:
                module = importlib.import_module(name)
                for attr in attrs:
                    if not hasattr(module, attr):
                        importlib.import_module(f"{name}.{attr}")  # `from pkg import submodule`
            except BaseException:  # the fork meets it again and says why
                failed.add(scope)


def _worker_main(cc: int, idle_s: float, folder: Path) -> None:
    """``python -m skel.kernels.machine --worker CC IDLE_S FOLDER``: Triton and its
    compiler's modules loaded once, then :func:`skel.kernels.compile_worker.serve`."""
    import importlib  # stdlib; only the worker warms up

    _no_triton_cache_key()
    for name in ("triton.compiler.compiler", "triton.compiler.code_generator", "triton.backends.nvidia.compiler"):
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    with contextlib.suppress(Exception):  # `ptxas --version`, asked once per process: here, not in every fork
        importlib.import_module("triton.backends.nvidia.compiler").get_ptxas_version(cc)
    def setup(private: Path) -> None:  # a compile a package makes on import stays out of the user's cache
        os.environ["TRITON_CACHE_DIR"] = str(private / "triton-cache")
        os.environ.pop("TRITON_INTERPRET", None)

    compile_worker.serve(_child_run, lambda source: _preload(cc, source), folder, idle_s, setup)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        _worker_main(int(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4]))
    else:
        _child_main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
