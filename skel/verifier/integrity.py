"""What the candidate does in the verifier's process: the checker's integrity, and whether the
candidate launches a kernel at all.

The candidate is imported into the verifier's own process (Triton kernels must live in real
modules), so code it runs, at import or inside its launcher, can reach the functions that
judge it: replace ``skel.verifier.correctness.compare`` with one that reports every output
exact, swap a function's ``__code__``, raise ``RATIO``, patch ``torch.isfinite``. A
:class:`Snapshot`, taken after the original is imported and before the candidate is, holds
every function and class of the ``skel`` modules loaded then (with the stages the run imports
later, loaded first), the settings of ``skel.verifier``'s modules, and the functions of torch's
namespace, its Tensor classes, ``builtins``, ``math`` and ``json``: each object with its code,
defaults and (for a property) accessors. The run compares it after the candidate's import,
after every call of the candidate's launcher (or ``forward``) in the same-results stage, and at
the end; anything replaced or removed is a cheat, said in one line that names it. Only
replacements count: a module the candidate adds, or an attribute torch creates lazily, is new,
not changed.

Kernel launches (:class:`Watch`): every Triton launch (``JITFunction.run``, the interpreter's
``InterpretedFunction.run``, a ``CompiledKernel`` launched directly) during the same-results
stage is counted for the side whose launcher is running. A candidate that launches none where
the original launches some (a launcher that calls ``torch.softmax`` and copies) is not the
kernel, however right its results; a KernelBench candidate that launches none has no kernel of
its own (its ``Model`` is PyTorch). Either way only where the candidate loaded no compiled
extension built outside the installed packages (``load_inline``, ``torch.ops.load_library``):
code of its own that a Triton count cannot see. Torch glue beside a kernel is fine: only zero
launches count.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
import sysconfig
from types import ModuleType
from typing import Any, Callable

#: the stages the run imports lazily: loaded into the snapshot so a candidate that imports one
#: first (to patch it before the run looks it up) is seen
_LATER = ("skel.verifier.timing", "skel.verifier.launch", "skel.verifier.gpu", "skel.verifier.report",
          "skel.verifier.tests_stage", "skel.verifier.sanitizer")
#: outside skel: the namespaces the comparison and the reference call into (functions and classes only)
_EXTERNAL = ("builtins", "math", "json", "torch", "torch.nn.functional", "torch.testing")


class Tampered(BaseException):
    """The candidate replaced part of the checker. A BaseException: the verifier's ``except
    Exception`` around the code under test (which turns a raise into "failed") lets it through."""


def _parts(v: Any) -> tuple[Any, ...]:
    """The object and what a patch can swap inside it while keeping its identity."""
    f = v.__func__ if isinstance(v, (staticmethod, classmethod)) else v
    if isinstance(f, property):
        return (v, f.fget, f.fset, f.fdel, *(getattr(a, "__code__", None) for a in (f.fget, f.fset)))
    return (v, getattr(f, "__code__", None), getattr(f, "__defaults__", None), getattr(f, "__kwdefaults__", None))


def _watched(v: Any) -> bool:
    return callable(v) or isinstance(v, (staticmethod, classmethod, property))


def _setting(v: Any) -> bool:
    """A function, class, or an immutable value (``RATIO``, ``GUARD_BYTES``): what a module of
    the verifier never reassigns itself. (Its mutable caches it may.)"""
    return _watched(v) or v is None or isinstance(v, (bool, int, float, str, bytes, tuple, frozenset))


class Snapshot:
    """The checker as it was (see the module docstring). ``changed()``: what differs now."""

    def __init__(self) -> None:
        # (module or class, key, parts, label, the package folder whose own wrappers may replace it or "")
        self.entries: list[tuple[Any, str, tuple[Any, ...], str, str]] = []
        self.modules = set(sys.modules)
        self.libraries = _loaded_libraries()
        for name in _LATER:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - not installed here (a GPU-only stage): nothing to watch
                pass
        mods = [m for n, m in list(sys.modules.items()) if isinstance(m, ModuleType) and
                (n == "skel" or n.startswith("skel."))]
        for m in mods:  # skel.verifier's modules: settings too (RATIO); the rest: functions and classes
            keep = _setting if m.__name__.startswith("skel.verifier.") else _watched
            self._namespace(m, m.__name__, keep, classes=m.__name__)
        for name in _EXTERNAL:
            ext = sys.modules.get(name)
            if ext is not None:
                self._namespace(ext, name, _watched, own=_package_dir(ext))
        torch = sys.modules.get("torch")
        if torch is not None:
            for cls in (torch.Tensor, *torch.Tensor.__mro__[1:-1]):
                self._class(cls, f"torch.{cls.__name__}", _package_dir(torch))

    def _namespace(self, m: ModuleType, label: str, keep: Callable[[Any], bool], classes: str = "",
                   own: str = "") -> None:
        for k, v in list(vars(m).items()):
            if k.startswith("__") and k.endswith("__") or not keep(v):
                continue
            self.entries.append((m, k, _parts(v), f"{label}.{k}", own))
            if classes and isinstance(v, type) and v.__module__ == classes:
                self._class(v, f"{label}.{k}")

    def _class(self, cls: type, label: str, own: str = "") -> None:
        for k, v in list(cls.__dict__.items()):
            if _watched(v):
                self.entries.append((cls, k, _parts(v), f"{label}.{k}", own))

    def changed(self) -> list[str]:
        """Names replaced or removed since the snapshot, in the order they were recorded."""
        return [label + ("" if k in vars(owner) else " (removed)") for owner, k, parts, label, own in self._changed()]

    def _changed(self) -> list[tuple[Any, str, tuple[Any, ...], str, str]]:
        out = []
        for e in self.entries:
            owner, k, parts, label, own = e
            ns = vars(owner)
            if k not in ns:
                out.append(e)
                continue
            now = ns[k]
            if any(a is not b for a, b in zip(_parts(now), parts)) and not (own and _wraps(now, parts[0], own)):
                out.append(e)
        return out

    def restore(self) -> None:
        """Put back what was replaced (the object, its code and defaults), so that the rest of
        this process (an API caller, the MCP server) runs the real checker again."""
        for owner, k, parts, _label, _own in self._changed():
            v = parts[0]
            f = v.__func__ if isinstance(v, (staticmethod, classmethod)) else v
            if not isinstance(f, property) and getattr(f, "__code__", None) is not None:
                try:
                    f.__code__, f.__defaults__, f.__kwdefaults__ = parts[1], parts[2], parts[3]
                except (AttributeError, TypeError, ValueError):
                    pass
            try:
                setattr(owner, k, v)
            except (AttributeError, TypeError):  # an immutable type: nothing could have changed it
                pass

    def check(self, when: str) -> None:
        """Raise :class:`Tampered`, in one line, where anything changed."""
        why = tampered(self, when)
        if why:
            raise Tampered(why)

    def new_extensions(self) -> list[str]:
        """Compiled extension modules (and torch libraries) loaded since the snapshot: code of
        the candidate's own that a Triton launch count cannot see (``load_inline``)."""
        suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
        out = [n for n in set(sys.modules) - self.modules
               if (f := str(getattr(sys.modules.get(n), "__file__", "") or "")).endswith(suffixes) and _user_built(f)]
        return sorted(out) + sorted(_loaded_libraries() - self.libraries)


def _package_dir(m: ModuleType) -> str:
    """The folder of a package's own code ("" for a module without one, such as builtins)."""
    f = getattr(m, "__file__", None)
    if not f or not f.endswith("__init__.py"):
        return ""
    return os.path.dirname(os.path.abspath(f)) + os.sep


def _wraps(new: Any, old: Any, own: str) -> bool:
    """Whether ``new`` is the package's own wrapper of ``old`` (``torch._dynamo`` wraps
    ``torch.manual_seed`` when imported): a ``__wrapped__`` chain from ``new`` to ``old`` whose
    every wrapper's code lies inside the package folder ``own``."""
    for _ in range(8):
        code = getattr(new, "__code__", None)
        if code is None or not os.path.abspath(code.co_filename).startswith(own):
            return False
        new = getattr(new, "__wrapped__", None)
        if new is old:
            return True
    return False


def _user_built(path: str) -> bool:
    """A compiled module outside the interpreter's own and installed packages (one built by
    ``load_inline``, ``torch.compile`` or a setup.py next to the candidate)."""
    if not path:
        return False
    path = os.path.abspath(path)
    roots = {os.path.abspath(p) + os.sep for k, p in sysconfig.get_paths().items()
             if k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return not any(path.startswith(r) for r in roots)


def _loaded_libraries() -> set[str]:
    torch = sys.modules.get("torch")
    try:
        return set(torch.ops.loaded_libraries) if torch is not None else set()
    except Exception:  # noqa: BLE001 - an older torch
        return set()


def tampered(snap: Snapshot | None, when: str) -> str:
    """One line naming what the candidate replaced (``when``: "when imported", "during its
    launcher's call", ...), or ""."""
    if snap is None:
        return ""
    names = snap.changed()
    if not names:
        return ""
    snap.restore()
    first = next((n for n in names if n.endswith(".compare")), names[0])
    what = "the verifier's compare function" if first.endswith(".compare") else "part of the verifier"
    more = f" and {len(names) - 1} more" if len(names) > 1 else ""
    return f"the candidate replaced {what} ({first}{more}) {when}: tampering with the checker in its process"


# --- kernel launches ---------------------------------------------------------------------------

def _launch_classes() -> list[tuple[Any, str]]:
    """(class, method) of every way a Triton kernel is launched, where installed."""
    out: list[tuple[Any, str]] = []
    for mod, cls, meth in (("triton.runtime.jit", "JITFunction", "run"),
                           ("triton.runtime.interpreter", "InterpretedFunction", "run"),
                           ("triton.compiler.compiler", "CompiledKernel", "__getitem__")):
        try:
            c = getattr(importlib.import_module(mod), cls)
        except (ImportError, AttributeError):
            continue
        if meth in vars(c):
            out.append((c, meth))
    return out


class Watch:
    """Counts Triton launches per side and checks the checker after every candidate call, while
    active (``with watch:``). Launchers take part through :meth:`wrap` (a harness launcher) or
    :meth:`hook` (a KernelBench model)."""

    def __init__(self, snapshot: Snapshot | None) -> None:
        self.snapshot = snapshot
        self.side = ""
        self.launched: dict[str, list[str]] = {"original": [], "candidate": []}
        self.calls = {"original": 0, "candidate": 0}
        self._saved: list[tuple[Any, str, Any]] = []
        self._hooks: list[Any] = []

    def __enter__(self) -> "Watch":
        for cls, meth in _launch_classes():
            orig = cls.__dict__[meth]
            self._saved.append((cls, meth, orig))
            setattr(cls, meth, self._counting(orig))
        return self

    def __exit__(self, *exc: Any) -> None:
        for cls, meth, orig in reversed(self._saved):
            setattr(cls, meth, orig)
        self._saved.clear()
        for h in self._hooks:
            h.remove()
        self._hooks.clear()

    def _counting(self, orig: Any) -> Any:
        watch = self

        def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
            if watch.side and not kwargs.get("warmup", False):
                fn = getattr(self, "fn", None)
                watch.launched[watch.side].append(str(getattr(fn, "__name__", None) or getattr(self, "name", None)
                                                       or type(self).__name__))
            return orig(self, *args, **kwargs)

        return launch

    def _enter(self, side: str) -> None:
        self.side = side
        self.calls[side] += 1

    def _leave(self, side: str) -> None:
        self.side = ""
        if side == "candidate":
            self.check("during its launcher's call")

    def check(self, when: str) -> None:
        if self.snapshot is not None:
            self.snapshot.check(when)

    def wrap(self, fn: Any, side: str) -> Any:
        """``fn`` counted as ``side``'s (and, for the candidate, the checker checked after it)."""
        if fn is None:
            return None

        def call(*args: Any, **kwargs: Any) -> Any:
            self._enter(side)
            try:
                return fn(*args, **kwargs)
            finally:
                self._leave(side)

        call.__wrapped__ = fn  # type: ignore[attr-defined]
        return call

    def hook(self, model: Any, side: str) -> None:
        """The same for a torch module's forward (removed when the watch ends)."""
        if model is None or not hasattr(model, "register_forward_pre_hook"):
            return
        self._hooks.append(model.register_forward_pre_hook(lambda *_a: self._enter(side)))
        self._hooks.append(model.register_forward_hook(lambda *_a: self._leave(side)))

    def no_kernel(self, run_original: Callable[[], Any] | None, kernelbench: bool = False) -> str:
        """Why the candidate is not the kernel (one line), or "": it ran, launched no Triton
        kernel, loaded no compiled extension of its own, and the original launches some
        (``run_original`` runs it once, counted, where the stage never did); for KernelBench,
        also where the original launches none (a PyTorch ``Model``)."""
        if self.launched["candidate"] or not self.calls["candidate"]:
            return ""
        if not self.launched["original"] and run_original is not None:
            with self:
                self._enter("original")
                try:
                    run_original()
                except Exception:  # noqa: BLE001 - the original's own failure: nothing to compare with
                    pass
                finally:
                    self.side = ""
        if self.snapshot is None or self.snapshot.new_extensions():
            return ""  # code of its own the count cannot see (a CUDA port built with load_inline)
        names = ", ".join(dict.fromkeys(self.launched["original"]))
        if names:
            return (f"the candidate launched no Triton kernel (the original launches {names}): a library fallback "
                    f"is not the kernel")
        if kernelbench:
            return ("the candidate launched no kernel of its own (no Triton kernel, no compiled extension loaded): "
                    "a PyTorch fallback is not the kernel")
        return ""
