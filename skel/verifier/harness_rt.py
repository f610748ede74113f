"""What a generated harness (``skel harness``, :mod:`skel.verifier.harness_gen`) runs.

A generated harness is data (where the kernel's file is, which function to call, how to
build each argument from the sizes, which imports to stub) and a few lines handing it to
:class:`Spec`. The file stays short and editable; the logic lives here, tested once.

- **Imports.** The kernel's file is imported the way its package would import it: the
  package root (the folder above its top ``__init__.py``) goes on ``sys.path``. When that
  fails (the package needs what is not installed: sglang from an unpacked wheel), the
  generator records a plan instead: the kernel's parent packages are made *bare* (their
  ``__init__`` is not run; its ``NAME = literal`` lines, ``__version__``, are kept) and the
  modules its own imports name that cannot be imported are replaced by **stubs**, as is any
  uninstalled third-party module (psutil, einops) that an import chain of the package's own
  modules reaches, so those modules run for real. A stub module hands out stub objects:
  calling one returns another stub (passing a function straight through, so a stubbed
  decorator leaves it alone), a stub is false in a test (a stubbed ``is_hip()`` reads as
  "not HIP"), and every other use (arithmetic, indexing, iteration, ``str``) raises
  :class:`StubUsed` naming the stub.
- **Arguments.** Each entry of ``ARGS`` is a tensor (its dimensions named by sizes of the
  shape), an integer size or stride read from those, a power of two above a size (block
  sizes), or a literal. ``make_inputs`` returns them in order, tensors and plain numbers.
- **Outputs.** The launcher is called on copies of the inputs (so an in-place kernel never
  changes the verifier's inputs), each in the middle of a larger buffer whose poisoned bands
  catch a write just past it (the call fails) and make a read just past it NaN. Its outputs
  are every tensor it returns, then every tensor argument after the call (what an in-place
  kernel wrote). Each is copied into a float64 destination the verifier poisoned, resized to
  fit. Tensors the kernel stores to (a kernel launched directly) are filled with NaN before
  the call, so an element it forgets to write can never pass.
- **Reference.** The original kernel run on the same inputs in float64 (the verifier hands
  the reference float64 copies); where it cannot run in float64, on the inputs cast back to
  the case's dtype. A candidate must give what the original gives, within ``TOLERANCES``.
- **The CPU interpreter, made to read kernels as the compiler does** (:func:`interpreter_shims`,
  around every call, only under ``TRITON_INTERPRET=1``). Two gaps of Triton's interpreter
  (3.x) stop real kernels that compile fine: a Python float argument stays a Python float
  (compiled, it is an fp32 scalar: ``eps.to(tl.float32)`` works), and libdevice functions
  (``tanh``, ``rsqrt``, ``erf``... of ``triton.language.extra.libdevice``) return None or raise
  (triton-lang/triton#8825). Under the shims a float argument is an fp32 scalar, and libdevice
  calls dispatch as the CUDA backend's do (the same symbols, the same dtype rules), each
  symbol computed with NumPy. An autotuned kernel takes its first config without timing any
  (timing needs a GPU driver). And every load, store and atomic must fall inside the tensors
  the kernel was given (else it raises): the interpreter does them on raw host pointers, so
  an access past a tensor would read or corrupt the process's own heap. Both the original
  and the candidate run under the shims.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import math
import os
import sys
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from skel.errors import InputError
from skel.verifier.harness import import_file


class StubUsed(RuntimeError):
    """A stubbed import was used for something a stub cannot stand in for."""


class Stub:
    """A stand-in for a name a stubbed module exports (see the module docstring)."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_skel_name", name)

    def _fail(self, what: str) -> StubUsed:
        return StubUsed(f"{self._skel_name} is a stub (`skel harness` could not import it): {what}")

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Stub(f"{self._skel_name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Stub):
            return args[0]  # a stubbed decorator leaves the function as it is
        return Stub(f"{self._skel_name}()")

    def __bool__(self) -> bool:
        return False

    def __mro_entries__(self, bases: tuple) -> tuple:
        return (object,)

    def __repr__(self) -> str:
        return f"<skel stub {self._skel_name}>"

    def __iter__(self) -> Iterator[Any]:
        raise self._fail("iterated")

    def __getitem__(self, key: Any) -> Any:
        raise self._fail("indexed")

    def __str__(self) -> str:
        raise self._fail("read as text")

    def __index__(self) -> int:
        raise self._fail("read as a number")

    def __float__(self) -> float:
        raise self._fail("read as a number")

    def __int__(self) -> int:
        raise self._fail("read as a number")

    def __eq__(self, other: object) -> bool:
        raise self._fail("compared")

    def __hash__(self) -> int:
        return id(self)

    def _op(self, *_: Any) -> Any:
        raise self._fail("used in arithmetic")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _op
    __floordiv__ = __rfloordiv__ = __mod__ = __lt__ = __le__ = __gt__ = __ge__ = __neg__ = _op


def stub_module(name: str) -> types.ModuleType:
    """A module whose every public attribute is a :class:`Stub`."""
    mod = types.ModuleType(name)
    mod.__path__ = []  # a package, so `import NAME.sub` finds a stub too
    mod.__skel_stub__ = True  # type: ignore[attr-defined]

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Stub(f"{name}.{attr}")

    mod.__getattr__ = __getattr__  # type: ignore[method-assign]
    return mod


def package_root(path: Path) -> tuple[Path | None, str]:
    """(the folder above the file's top package, the file's dotted module name) — (None,
    the file's stem) when its folder is not a package."""
    path = Path(path).resolve()
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if len(parts) == 1:
        return None, path.stem
    return folder, ".".join(parts)


def _put_on_path(folder: Path) -> None:
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def _literal_constants(init: Path) -> dict[str, Any]:
    """The top-level ``NAME = literal`` lines of a package's ``__init__`` (``__version__ =
    "0.6.0"``): a bare package keeps them, as modules that read ``from pkg import
    __version__`` need, without running anything."""
    try:
        tree = ast.parse(init.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return {}
    out: dict[str, Any] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if (
            isinstance(node, ast.AnnAssign) and node.value is not None) else []
        value = getattr(node, "value", None)
        if value is None or not all(isinstance(t, ast.Name) for t in targets):
            continue
        try:
            literal = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        for t in targets:
            if isinstance(t, ast.Name) and t.id not in ("__path__", "__all__"):
                out[t.id] = literal
    return out


def _bare_module(root: Path, parts: list[str]) -> types.ModuleType:
    name, init = ".".join(parts), root.joinpath(*parts, "__init__.py")
    mod = types.ModuleType(name)
    mod.__path__ = [str(root.joinpath(*parts))]
    mod.__package__ = name
    # as a real package looks to importlib.util.find_spec (its origin, its folder) and to __file__
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None, origin=str(init) if init.is_file() else None,
                                                  is_package=True)
    mod.__spec__.submodule_search_locations = list(mod.__path__)
    if init.is_file():
        mod.__spec__.has_location = True
        mod.__file__ = str(init)
    for key, value in _literal_constants(init).items():
        setattr(mod, key, value)
    return mod


def _add(name: str, mod: types.ModuleType) -> None:
    sys.modules[name] = mod
    if "." in name:
        parent, _, last = name.rpartition(".")
        setattr(sys.modules[parent], last, mod)


def bare_packages(root: Path, dotted: str) -> None:
    """The parent packages of ``dotted`` as bare modules (their ``__init__`` not run), unless
    already imported."""
    parts = dotted.split(".")[:-1]
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            _add(name, _bare_module(root, parts[:i]))


def install_stubs(names: list[str] | tuple[str, ...], root: Path | None = None) -> None:
    """Stub modules for ``names``, unless already imported. The parents of a dotted one are
    stubs too, except packages of the kernel's own tree under ``root``: those are bare, so a
    stubbed ``pkg.a.b`` leaves the real ``pkg.a.c`` importable."""
    for name in names:
        if name in sys.modules:
            continue
        parts = name.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if parent in sys.modules:
                continue
            real = root is not None and root.joinpath(*parts[:i]).is_dir()  # a namespace package too
            _add(parent, _bare_module(root, parts[:i]) if real and root is not None else stub_module(parent))
        _add(name, stub_module(name))


def prepare_imports(kernel_file: Path, bare: bool, stubs: list[str] | tuple[str, ...]) -> tuple[Path | None, str]:
    """Make the kernel file importable as its package would import it (see the module
    docstring): the package root on ``sys.path``, bare parents and stubs when planned."""
    root, dotted = package_root(kernel_file)
    _put_on_path(root if root is not None else Path(kernel_file).resolve().parent)
    if root is not None and bare:
        bare_packages(root, dotted)
    install_stubs(stubs, root if bare else None)
    return root, dotted


_LOADED: dict[str, types.ModuleType] = {}


def load_kernel_module(kernel_file: Path, bare: bool = False, stubs: tuple[str, ...] | list[str] = ()
                       ) -> types.ModuleType:
    """The kernel's module, imported once per process under its package's dotted name (so
    relative imports work), or as a plain file outside a package."""
    key = str(Path(kernel_file).resolve())
    if key in _LOADED:
        return _LOADED[key]
    root, dotted = prepare_imports(Path(kernel_file), bare, stubs)
    if root is not None:
        try:
            mod = importlib.import_module(dotted)
        except Exception as e:  # the kernel's own package: any failure is said in one line
            raise InputError(f"{kernel_file}: importing it as {dotted} failed: {type(e).__name__}: {e}") from e
        if Path(getattr(mod, "__file__", "") or "").resolve() != Path(key):
            raise InputError(f"{kernel_file}: {dotted} imports another file ({mod.__file__}): an installed copy "
                             "shadows it")
    else:
        mod = import_file(Path(kernel_file))
    _LOADED[key] = mod
    return mod


# ---- what a kernel launches ------------------------------------------------------------------

@contextmanager
def recording_launches() -> Iterator[list[str]]:
    """Names of the Triton kernels launched inside (compiled or interpreted)."""
    from triton.runtime.jit import JITFunction  # triton: optional (the verify extra), 0.1 s to import

    seen: list[str] = []
    classes: list[Any] = [JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction  # triton: optional, as above

        classes.append(InterpretedFunction)
    except ImportError:  # an older Triton without the interpreter class
        pass
    saved = [(c, c.run) for c in classes]

    def wrap(orig: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            fn = getattr(self, "fn", None)
            seen.append(str(getattr(fn, "__name__", None) or getattr(self, "__name__", "?")))
            return orig(self, *args, **kwargs)
        return run

    for c, orig in saved:
        c.run = wrap(orig)
    try:
        yield seen
    finally:
        for c, orig in saved:
            c.run = orig


# ---- the CPU interpreter, read as the compiler reads a kernel -----------------------------------

def _libdevice_numpy() -> dict[str, Callable[..., Any]]:
    import numpy as np  # numpy: comes with torch

    erf = np.vectorize(math.erf, otypes=[float])
    erfc = np.vectorize(math.erfc, otypes=[float])
    lgamma = np.vectorize(math.lgamma, otypes=[float])

    def keep(f: Callable[..., Any]) -> Callable[..., Any]:
        return lambda x: f(x).astype(x.dtype)

    def c_round(x: Any) -> Any:
        return np.sign(x) * np.floor(np.abs(x) + 0.5)

    return {
        "tanh": np.tanh, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "rcp": lambda x: 1 / x,
        "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(x.dtype.type(10), x), "expm1": np.expm1,
        "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos,
        "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
        "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "erf": keep(erf),
        "erfc": keep(erfc), "lgamma": keep(lgamma), "cbrt": np.cbrt, "floor": np.floor, "ceil": np.ceil,
        "trunc": np.trunc, "round": c_round, "rint": np.rint, "nearbyint": np.rint, "abs": np.abs,
        "fabs": np.abs, "saturate": lambda x: np.clip(x, 0, 1), "isnan": np.isnan, "isinf": np.isinf,
        "isfinite": np.isfinite, "signbit": np.signbit, "pow": np.power, "powi": np.power,
        "atan2": np.arctan2, "fmax": np.fmax, "fmin": np.fmin, "max": np.maximum, "min": np.minimum,
        "fmod": np.fmod, "copysign": np.copysign, "hypot": np.hypot, "fdivide": np.divide, "div": np.divide,
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "fma": lambda x, y, z: x * y + z,
    }


def _libdevice_op(symbol: str, table: dict[str, Callable[..., Any]]) -> Callable[..., Any] | None:
    """NumPy for a CUDA libdevice symbol: ``__nv_tanhf`` and ``__nv_tanh`` are ``tanh``,
    ``__nv_fdiv_rn`` is ``div`` (a rounding mode is read as round-to-nearest)."""
    name = symbol.removeprefix("__nv_").removeprefix("fast_")
    if len(name) > 3 and name[-3:] in ("_rn", "_rz", "_rd", "_ru"):
        name = name[:-3]
    for cand in (name, name[:-1] if name.endswith("f") else "", name[1:] if name[:1] in "fd" else "",
                 name[1:-1] if name[:1] in "fd" and name.endswith("f") else ""):
        if cand in table:
            return table[cand]
    return None


def _interpreting() -> bool:
    try:
        from triton import knobs  # triton: optional (the verify extra)

        return bool(knobs.runtime.interpret)
    except (ImportError, AttributeError):
        return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "yes", "on")


@contextmanager
def interpreter_shims(bands: Sequence[tuple[int, int, str]] = ()) -> Iterator[None]:
    """Under ``TRITON_INTERPRET=1``, the interpreter made to read a kernel as the compiler does:
    float arguments are fp32 scalars, libdevice calls run, an autotuner takes its first config,
    and an access outside the kernel's tensors raises (see the module docstring), as does one
    inside ``bands`` (byte ranges [start, end) with what they border: the poisoned bands a
    harness put around its copies, which no kernel owns either). Everything
    patched is put back on the way out; outside the interpreter this does nothing."""
    if not _interpreting():
        yield
        return
    try:
        import numpy as np  # numpy: comes with torch
        import triton.language as tl  # triton: optional (the verify extra)
        from triton.language.extra import libdevice as generic  # triton: optional, interpreter only
        from triton.language.extra.cuda import libdevice as cuda  # triton: as above
        from triton.runtime import interpreter as interp  # triton: as above
    except ImportError:  # an older or other Triton: run as it is
        yield
        return
    table = _libdevice_numpy()
    saved: list[tuple[Any, str, Any]] = []

    def put(obj: Any, name: str, value: Any) -> None:
        saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    def with_semantic(member: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("_semantic", None)
            return member(*args, _semantic=interp.interpreter_semantic, **kwargs)

        call.__skel_shim__ = True  # type: ignore[attr-defined]
        call.__name__ = getattr(member, "__name__", "libdevice")
        return call

    def extern(self: Any, lib_name: str, lib_path: str, symbol: str, args: list, ret: Any, pure: bool) -> Any:
        op = _libdevice_op(symbol, table)
        if op is None:
            raise NotImplementedError(f"libdevice {symbol} has no stand-in in skel's interpreter shims")
        scalar = getattr(ret, "scalar", ret)
        with np.errstate(all="ignore"):
            data = np.asarray(op(*(a.data for a in args)))
        return interp.TensorHandle(data.astype(interp._get_np_dtype(scalar)), scalar)

    shims: dict[int, Callable[..., Any]] = {}  # id(original) -> its stand-in

    def as_compiled(arg: Any) -> Any:
        if isinstance(arg, float):  # compiled, a Python float argument is an fp32 scalar
            return tl.tensor(interp.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return cvt(arg)

    def patch_lang(fn: Any) -> Any:  # each kernel (and jit helper) run: its own libdevice names too
        g = getattr(fn, "__globals__", None)
        if isinstance(g, dict):
            for key, value in list(g.items()):
                if id(value) in shims and not getattr(value, "__skel_shim__", False):
                    saved.append((g, key, value))
                    g[key] = shims[id(value)]
        return lang(fn)

    def no_bench(kernel_call: Any, quantiles: Any = None, **_: Any) -> list[float]:
        return [0.0, 0.0, 0.0]  # every config ties: the autotuner keeps its first

    # every load and store inside the tensors the kernel was given: through the interpreter, an
    # access past them reads or writes the process's own heap (a crash, or worse, later)
    spans: list[Any] = [np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64)]

    def storages(x: Any, out: list[tuple[int, int]]) -> None:
        if isinstance(x, (tuple, list)):
            for v in x:
                storages(v, out)
        elif hasattr(x, "base") and hasattr(x.base, "untyped_storage"):
            storages(x.base, out)  # a TensorWrapper (tl.reinterpret) or a TensorDescriptor
        elif hasattr(x, "untyped_storage"):
            st = x.untyped_storage()
            out.append((st.data_ptr(), st.data_ptr() + st.nbytes()))

    def init_args(self: Any, args_dev: Any, kwargs: Any) -> Any:
        args_hst, kwargs_hst = init(self, args_dev, kwargs)
        found: list[tuple[int, int]] = []
        storages(list(args_hst) + list(kwargs_hst.values()), found)
        found.sort()
        spans[0] = np.array([a for a, _ in found], dtype=np.uint64)
        spans[1] = np.array([b for _, b in found], dtype=np.uint64)
        return args_hst, kwargs_hst

    def inside(ptrs: Any, mask: Any, what: str) -> None:
        p = ptrs.data
        if mask is not None:
            p = p[np.broadcast_to(mask.data, p.shape).astype(bool)]
        p = np.asarray(p, dtype=np.uint64).ravel()
        if p.size == 0:
            return
        width = max(1, int(getattr(ptrs.get_element_ty(), "primitive_bitwidth", 8)) // 8)
        starts, ends = spans
        i = np.searchsorted(starts, p, side="right").astype(np.int64) - 1
        ok = (i >= 0) & (p + np.uint64(width) <= ends[np.clip(i, 0, None)] if len(ends) else np.zeros_like(p, bool))
        if not ok.all():
            raise IndexError(f"{what} outside every tensor the kernel was given ({int((~ok).sum())} element(s)): "
                             "a compiled kernel would read or write memory it does not own")
        for lo, hi, where in bands:
            hit = (p + np.uint64(width) > np.uint64(lo)) & (p < np.uint64(hi))
            if hit.any():
                raise IndexError(f"{what} {where} ({int(hit.sum())} element(s)): the kernel reads or writes "
                                 "memory that is not the tensor's")

    def masked_load(self: Any, ptrs: Any, mask: Any, other: Any, *rest: Any) -> Any:
        inside(ptrs, mask, "a load")
        return load(self, ptrs, mask, other, *rest)

    def masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *rest: Any) -> Any:
        inside(ptrs, mask, "a store")
        return store(self, ptrs, value, mask, *rest)

    def atomic_rmw(self: Any, op: Any, ptr: Any, val: Any, mask: Any, *rest: Any) -> Any:
        inside(ptr, mask, "an atomic")
        return rmw(self, op, ptr, val, mask, *rest)

    def atomic_cas(self: Any, ptr: Any, *rest: Any) -> Any:
        inside(ptr, None, "an atomic")
        return cas(self, ptr, *rest)

    b = interp.InterpreterBuilder
    init, load, store = interp.GridExecutor._init_args_hst, b.create_masked_load, b.create_masked_store
    rmw, cas = b.create_atomic_rmw, b.create_atomic_cas
    cvt, lang = interp._implicit_cvt, interp._patch_lang
    try:
        for name in dir(cuda):
            member = getattr(cuda, name)
            if tl.core.is_builtin(member):
                shims[id(member)] = with_semantic(member)
                put(cuda, name, shims[id(member)])
        for name in dir(generic):
            member = getattr(generic, name)
            if callable(member) and getattr(member, "__module__", "") == generic.__name__ and hasattr(cuda, name):
                shims[id(member)] = getattr(cuda, name)  # the stub, dispatched as the CUDA backend does
                put(generic, name, shims[id(member)])
        try:
            from triton.runtime.autotuner import Autotuner  # triton: optional (the verify extra)

            put(Autotuner, "do_bench", property(lambda self: no_bench))
        except (ImportError, AttributeError):  # an autotuner without a do_bench hook: run as it is
            pass
        put(interp.GridExecutor, "_init_args_hst", init_args)
        put(b, "create_masked_load", masked_load)
        put(b, "create_masked_store", masked_store)
        put(b, "create_atomic_rmw", atomic_rmw)
        put(b, "create_atomic_cas", atomic_cas)
        put(b, "create_extern_elementwise", extern)
        put(interp, "_implicit_cvt", as_compiled)
        put(interp, "_patch_lang", patch_lang)
        yield
    finally:
        for obj, name, value in reversed(saved):
            if isinstance(obj, dict):
                obj[name] = value
            else:
                setattr(obj, name, value)


# ---- the spec a generated harness holds ------------------------------------------------------

def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


class Spec:
    """A generated harness's data, with the functions docs/harness.md asks of a harness."""

    def __init__(self, harness_file: str, kernel_file: str, kernel: str, launcher: str | None,
                 args: list[dict[str, Any]], grid: tuple[str, ...] = (), returned: int = 0,
                 bare: bool = False, stubs: tuple[str, ...] = ()) -> None:
        here = Path(harness_file).resolve().parent
        kf = Path(kernel_file)
        self.kernel_file = kf if kf.is_absolute() else (here / kf).resolve()
        self.kernel, self.launcher, self.args, self.grid = kernel, launcher, args, tuple(grid)
        self.returned, self.bare, self.stubs = returned, bare, tuple(stubs)
        self.dtype: Any = None  # the case's dtype, set by make_inputs (the reference casts back to it)
        self.float64: bool | None = None  # whether the original runs in float64 (None: not tried yet)
        prepare_imports(self.kernel_file, bare, self.stubs)

    # --- inputs ---------------------------------------------------------------------------
    def _dims(self, dims: Any, shape: dict[str, int]) -> tuple[int, ...]:
        return tuple(int(shape[d]) if isinstance(d, str) else int(d) for d in dims)

    def make_inputs(self, shape: dict[str, int], dtype: Any, seed: int, device: str) -> tuple:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        self.dtype = dtype
        g = torch.Generator().manual_seed(seed)
        out: list[Any] = []
        tensors: dict[str, Any] = {}
        for a in self.args:
            kind = a["kind"]
            if kind == "tensor":
                dims = self._dims(a["dims"], shape)
                if a.get("dtype") == "index":
                    high = max(1, int(shape[a["high"]]) if isinstance(a.get("high"), str) else int(a.get("high", 2)))
                    t = torch.randint(0, high, dims, generator=g, dtype=torch.int64)
                elif a.get("dtype") == "bool":
                    t = torch.rand(dims, generator=g) < 0.5
                else:
                    t = torch.randn(dims, generator=g, dtype=torch.float32).to(dtype)
                t = t.to(device)
                tensors[a["name"]] = t
                out.append(t)
            elif kind == "size":
                out.append(int(shape[a["of"]]) if isinstance(a["of"], str) else int(a["of"]))
            elif kind == "stride":
                out.append(int(tensors[a["of"]].stride(a.get("axis", 0))))
            elif kind == "pow2":
                out.append(max(int(a.get("min", 1)), next_power_of_2(int(shape[a["of"]]))))
            else:
                out.append(a.get("value"))
        return tuple(out)

    def make_outputs(self, shape: dict[str, int], dtype: Any, device: str) -> tuple:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        n = self.returned + sum(1 for a in self.args if a["kind"] == "tensor")
        return tuple(torch.empty(0, dtype=torch.float64, device=device) for _ in range(n))

    # --- running ----------------------------------------------------------------------------
    def _call(self, module: types.ModuleType, inputs: tuple) -> list[Any]:
        """Run the module's launcher (or kernel) on copies of ``inputs``; every result tensor."""
        import torch  # torch: 0.8 s to import; only once a kernel runs

        padded = [_padded_copy(x) if isinstance(x, torch.Tensor) else (x, None) for x in inputs]
        copies = [c for c, _ in padded]
        bands = [r for a, (_, band) in zip(self.args, padded) if band is not None for r in band.ranges(a["name"])]
        for a, x in zip(self.args, copies):
            if a.get("written") and isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
                x.fill_(float("nan"))
        if self.launcher:
            fn = getattr(module, self.launcher, None)
            if not callable(fn):
                raise InputError(f"{getattr(module, '__file__', module)}: no function {self.launcher!r}")
            pos = [x for a, x in zip(self.args, copies) if not a.get("keyword")]
            kw = {a["name"]: x for a, x in zip(self.args, copies) if a.get("keyword")}
            with interpreter_shims(bands):
                result = fn(*pos, **kw)
        else:
            kernel = getattr(module, self.kernel, None)
            if kernel is None:
                raise InputError(f"{getattr(module, '__file__', module)}: no kernel {self.kernel!r}")
            by_name = dict(zip((a["name"] for a in self.args), copies))
            sizes = {d: t.shape[i] for a, t in zip(self.args, copies) if a["kind"] == "tensor"
                     for i, d in enumerate(a["dims"]) if isinstance(d, str)}
            grid = tuple(int(sizes[g]) if isinstance(g, str) else int(g) for g in self.grid) or (1,)
            with interpreter_shims(bands):
                kernel[grid](**by_name)
            result = None
        for a, (_, band) in zip(self.args, padded):
            if band is not None and not band.intact():
                raise RuntimeError(f"the launcher wrote outside argument {a['name']!r} (past its "
                                   f"{'start' if not band.intact(0) else 'end'})")
        found: list[Any] = []
        _flatten(result, found)
        if len(found) != self.returned:
            raise RuntimeError(f"the launcher returned {len(found)} tensor(s); the harness expects {self.returned} "
                               "(RETURNED)")
        return found + [x for a, x in zip(self.args, copies) if a["kind"] == "tensor"]

    def launcher_for(self, module: types.ModuleType) -> Callable[..., None]:
        """A launcher in docs/harness.md's form (inputs, then outputs) for one file's kernel."""
        n = len(self.args)

        def launch(*inputs_then_outputs: Any) -> None:
            inputs, outputs = inputs_then_outputs[:n], inputs_then_outputs[n:]
            results = self._call(module, tuple(inputs))
            for dst, src in zip(outputs, results):
                dst.resize_(src.shape)
                dst.copy_(src.detach())

        launch.__name__ = launch.__qualname__ = "launch"
        return launch

    def reference(self, *inputs: Any) -> tuple:
        """The original kernel on the float64 inputs (its own arithmetic, in float64); where
        it cannot run in float64 (a dtype check, an op the backend lacks), on the inputs cast
        back to the case's dtype."""
        import torch  # torch: 0.8 s to import; only once a kernel runs

        mod = load_kernel_module(self.kernel_file, self.bare, self.stubs)
        if self.float64 is not False:
            try:
                out = tuple(r.detach().clone() for r in self._call(mod, inputs))
                self.float64 = True
                return out
            except Exception:  # noqa: BLE001 - not runnable in float64: the case's dtype instead
                self.float64 = False
        dtype = self.dtype or torch.float32
        cast = tuple(x.to(dtype) if isinstance(x, torch.Tensor) and x.dtype == torch.float64 else x for x in inputs)
        return tuple(r.detach().clone() for r in self._call(mod, cast))


class _Bands:
    """The poisoned bands around a tensor copied into a larger buffer (see :func:`_padded_copy`)."""

    def __init__(self, buf: Any, pad: int, n: int) -> None:
        from skel.verifier.guards import fill_poison  # guards imports torch: only once a launcher runs on copies

        self.buf, self.pad, self.n = buf, pad, n
        fill_poison(buf[:pad])
        fill_poison(buf[pad + n:])
        self.ref = buf[:pad].clone()

    def ranges(self, name: str) -> list[tuple[int, int, str]]:
        """The two bands as byte ranges, with what each borders."""
        start, size = self.buf.data_ptr(), self.buf.element_size()
        return [(start, start + self.pad * size, f"before the start of argument {name!r}"),
                (start + (self.pad + self.n) * size, start + (2 * self.pad + self.n) * size,
                 f"past the end of argument {name!r}")]

    def intact(self, side: int | None = None) -> bool:
        import torch  # torch: 0.8 s to import; only once a kernel runs

        bands = [self.buf[:self.pad], self.buf[self.pad + self.n:]]
        return all(torch.equal(bands[i].view(torch.uint8), self.ref.view(torch.uint8))
                   for i in ((0, 1) if side is None else (side,)))


PAD_BYTES = 1 << 16  # per side: a whole row or tile past the end lands in it


def _padded_copy(x: Any) -> tuple[Any, _Bands | None]:
    """A copy of ``x`` in the middle of a buffer with a poisoned band of ``PAD_BYTES`` on each
    side: a write just past it lands in a band, is seen, and the call fails; a read just past
    it reads poison (NaN), which the check sees in the outputs. (Through the interpreter, an
    access further out is refused by :func:`interpreter_shims`.)"""
    import torch  # torch: 0.8 s to import; only once a kernel runs

    n, size = x.numel(), x.element_size()
    if n == 0 or not x.is_contiguous() or x.requires_grad or type(x) is not torch.Tensor:
        return x.clone(), None
    pad = PAD_BYTES // size  # whole 256-byte lines: the copy's alignment is the buffer's
    buf = torch.empty(2 * pad + n, dtype=x.dtype, device=x.device)
    view = buf[pad:pad + n].view(x.shape)
    view.copy_(x)
    return view, _Bands(buf, pad, n)


def _flatten(value: Any, out: list[Any]) -> None:
    import torch  # torch: 0.8 s to import; only once a kernel runs

    if value is None:
        return
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _flatten(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _flatten(v, out)
    # plain numbers (block sizes, warp counts a launcher hands back) are its choices, not results


def module_importable(name: str) -> bool:
    """Whether ``name`` can be found without importing it (its parents are imported)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False
