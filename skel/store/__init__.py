"""The knowledge base (chromadb): mined kernels, file hashes, sources, evidence."""
