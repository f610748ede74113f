"""What a generated harness (``skel harness``, :mod:`skel.verifier.harness_gen`) runs.

A generated harness is data (where the kernel's file is, which function to call, how to
build each argument from the sizes, which imports to stub) and a few lines handing it to
:class:`Spec`. The file stays short and editable; the logic lives here, tested once.

- **Imports.** The kernel's file is imported the way its package would import it: the
  package root (the folder above its top ``__init__.py``) goes on ``sys.path``. When that
  fails (the package needs what is not installed: sglang from an unpacked wheel), the
  generator records a plan instead: the kernel's parent packages are made *bare* (their
  ``__init__`` is not run) and the modules its own imports name that cannot be imported are
  replaced by **stubs**. A stub module hands out stub objects: calling one returns another
  stub (passing a function straight through, so a stubbed decorator leaves it alone), a
  stub is false in a test (a stubbed ``is_hip()`` reads as "not HIP"), and every other use
  (arithmetic, indexing, iteration, ``str``) raises :class:`StubUsed` naming the stub.
- **Arguments.** Each entry of ``ARGS`` is a tensor (its dimensions named by sizes of the
  shape), an integer size or stride read from those, a power of two above a size (block
  sizes), or a literal. ``make_inputs`` returns them in order, tensors and plain numbers.
- **Outputs.** The launcher is called on copies of the inputs (so an in-place kernel never
  changes the verifier's inputs); its outputs are every tensor it returns, then every
  tensor argument after the call (what an in-place kernel wrote). Each is copied into a
  float64 destination the verifier poisoned, resized to fit. Tensors the kernel stores to
  (a kernel launched directly) are filled with NaN before the call, so an element it forgets
  to write can never pass.
- **Reference.** The original kernel run on the same inputs in float64 (the verifier hands
  the reference float64 copies); where it cannot run in float64, on the inputs cast back to
  the case's dtype. A candidate must give what the original gives, within ``TOLERANCES``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

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


def bare_packages(root: Path, dotted: str) -> None:
    """The parent packages of ``dotted`` as bare modules (their ``__init__`` not run), unless
    already imported."""
    parts = dotted.split(".")[:-1]
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name in sys.modules:
            continue
        mod = types.ModuleType(name)
        mod.__path__ = [str(root.joinpath(*parts[:i]))]
        mod.__package__ = name
        sys.modules[name] = mod
        if i > 1:
            setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], mod)


def install_stubs(names: list[str] | tuple[str, ...]) -> None:
    """Stub modules for ``names`` (and bare parents for dotted ones), unless already imported."""
    for name in names:
        if name in sys.modules:
            continue
        parts = name.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if parent not in sys.modules:
                sys.modules[parent] = stub_module(parent)
        sys.modules[name] = stub_module(name)
        if len(parts) > 1:
            setattr(sys.modules[".".join(parts[:-1])], parts[-1], sys.modules[name])


def prepare_imports(kernel_file: Path, bare: bool, stubs: list[str] | tuple[str, ...]) -> tuple[Path | None, str]:
    """Make the kernel file importable as its package would import it (see the module
    docstring): the package root on ``sys.path``, bare parents and stubs when planned."""
    root, dotted = package_root(kernel_file)
    _put_on_path(root if root is not None else Path(kernel_file).resolve().parent)
    if root is not None and bare:
        bare_packages(root, dotted)
    install_stubs(stubs)
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

        copies = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        for a, x in zip(self.args, copies):
            if a.get("written") and isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
                x.fill_(float("nan"))
        if self.launcher:
            fn = getattr(module, self.launcher, None)
            if not callable(fn):
                raise InputError(f"{getattr(module, '__file__', module)}: no function {self.launcher!r}")
            pos = [x for a, x in zip(self.args, copies) if not a.get("keyword")]
            kw = {a["name"]: x for a, x in zip(self.args, copies) if a.get("keyword")}
            result = fn(*pos, **kw)
        else:
            kernel = getattr(module, self.kernel, None)
            if kernel is None:
                raise InputError(f"{getattr(module, '__file__', module)}: no kernel {self.kernel!r}")
            by_name = dict(zip((a["name"] for a in self.args), copies))
            sizes = {d: t.shape[i] for a, t in zip(self.args, copies) if a["kind"] == "tensor"
                     for i, d in enumerate(a["dims"]) if isinstance(d, str)}
            grid = tuple(int(sizes[g]) if isinstance(g, str) else int(g) for g in self.grid) or (1,)
            kernel[grid](**by_name)
            result = None
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
