"""Speed benchmarks (mining, suggest, history, parsing, tagging, embedding, the site, importers)
and one-off measured experiments (contiguity hints on a gather, the GIL in a bound C++ call)."""
