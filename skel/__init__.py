"""skel — a knowledge base of GPU-kernel optimisation skeletons, mined from real kernels.

The pipeline, one folder per stage: ``skel.miner`` (facts from source) → ``skel.store``
(chromadb knowledge base) → ``skel.retriever`` (ranked, explained suggestions), with the
technique catalog in ``skel.skeletons``, the service layer every front end calls in
``skel.api``, the command line in ``skel.cli`` and the error family in ``skel.errors``.
"""

__version__ = "0.1.0"
