"""HACK: tampering with the checker — at import, the candidate replaces the comparison function
of any skel verifier already loaded in its process with one that reports every output exact;
the launcher then writes zeros.
Detectable: CPU — the checker is snapshotted before the candidate is imported (the verifier's
functions with their code, its settings, torch's functions) and compared after the import:
"the candidate replaced the verifier's compare function (skel.verifier.correctness.compare
...) when imported", verdict wrong (and the real function is put back).
"""

import sys

_CHECKERS = ("skel.verifier.correctness", "skel.verifier.timing")


def _exact(out, ref, atol, rtol, index):
    checker = sys.modules["skel.verifier.correctness"]
    return checker.OutputCheck(index, 0.0, 0.0, 0, int(out.numel()), atol, rtol)


for _name in _CHECKERS:
    _mod = sys.modules.get(_name)
    if _mod is not None and hasattr(_mod, "compare"):
        _mod.compare = _exact


def run(x, out):
    out.zero_()
