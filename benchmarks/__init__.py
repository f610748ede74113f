"""skel's benchmarks, one room per job. Every script runs from the repository root as
``python -m benchmarks.<room>.<script> ...``; results land in ``benchmarks/results/``
(``benchmarks/results/INDEX.md`` says what each file is and which command made it).

- ``benchmarks.evidence``: the pipeline that makes the evidence shipped in ``skel/data``
  (the catalog verifier, the verification suite, the CUDA pairs, profiles, ship_evidence);
- ``benchmarks.retrieval``: how well skel ranks, on real optimisation commits and releases;
- ``benchmarks.performance``: speed (mining, suggest, parsing, embedding, site) and one-off
  measured experiments (contiguity hints, the GIL);
- ``benchmarks.reliability``: what skel survives (faults, hostile input, load) and the
  behaviour fingerprints that check a refactor changed nothing;
- ``benchmarks/gpu/``: the shell scripts that run a GPU session in one command.
"""
