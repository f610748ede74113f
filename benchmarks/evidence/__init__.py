"""The evidence pipeline: GPU runs of the catalog's example pairs (``verify_catalog``) and of
the verification suite (``verify_suite``), the CUDA C++ pairs (``cuda_pairs``), profiles
(``profile_driver``), and ``ship_evidence``, which merges the runs under
``benchmarks/results/`` into ``skel/data/verifications.jsonl``; ``evidence_table`` prints it."""
