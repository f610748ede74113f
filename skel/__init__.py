"""skel — a knowledge base of GPU-kernel optimisation skeletons, mined from real kernels.

The pipeline, one folder per stage: ``skel.miner`` (facts from source) → ``skel.store``
(chromadb knowledge base) → ``skel.retriever`` (ranked, explained suggestions), with the
technique catalog in ``skel.skeletons`` and the command line in ``skel.cli``.
"""

__version__ = "0.1.0"
