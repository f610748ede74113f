"""Reliability: ``reliability`` (faults, hostile input through ``reliability_fuzz``, load) and
the behaviour fingerprints ``assessments_dump`` and ``suggest_dump``, which write byte-identical
files for two code trees that judge kernels the same way (a refactor's check)."""
