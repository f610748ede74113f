"""The verifier: does an applied change give the same results, and is it faster?

``skel verify ORIGINAL CANDIDATE`` runs stages in order; the first that decides the
verdict stops the run, and each has its own exit code:

1. **applied?** (``applied.py``) — the candidate parses; with ``--skeleton`` the technique is
   now detected present; on a GPU the candidate does not compile to the same machine code
   as the original (a no-op is reported as such, without timing).
2. **same results** (``correctness.py``) — fresh random inputs over several shapes (and
   perturbed ones, against special-casing), outputs poisoned before every run, NaN/Inf never
   pass, errors per output; partitioned against whole, error growth with length.
3. **tests** (``tests_stage.py``) — the project's own pytest tests with the candidate in place.
4. **faster?** (``timing.py``, GPU only) — interleaved runs after warm-up, L2 flushed and
   inputs rotated, median and spread, the noise floor (original against itself) measured in
   the same run, a roofline sanity check; launch-side skeletons measured by compile counts,
   first-call results or graph launch latency (``launch.py``).

Inputs come in three formats, all adapted to :class:`skel.verifier.harness.Harness`:
skel's harness (docs/harness.md), KernelBench's (``kernelbench.py``), and a project's tests.
The result is a :class:`skel.store.evidence.Verification` record.
"""
