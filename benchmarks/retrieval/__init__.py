"""Retrieval benchmarks: the clean commit benchmark (``run``, its rules in ``clean``), the
hand-checked precision on sglang and vLLM kernels (``precision``), and the older release
benchmark (``releases``). See README.md here."""
