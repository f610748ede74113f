"""Identifier and naming-convention patterns shared by the catalog."""

from __future__ import annotations

import re

from skel.skeletons.conditions import IDENT, TILE_NAME

#: ``IDENT`` and ``TILE_NAME`` come from conditions, where each is defined once (the tuned-table
#: condition reads tile names too). ``IDENT`` is a Python identifier (``pid_m``,
#: ``BLOCK_K``, ``_x``). The catalog uses it to pull the names out of an expression's
#: source text (loop bounds, masks, pointer arguments) and, through ``IDENT.pattern``, as a
#: building block of larger source-text patterns.
__all__ = ["IDENT", "TILE_NAME", "VARYING_LENGTH"]

#: Lengths that vary from call to call (sequence, tokens, rows, batch). Model dims such as
#: N / D / n_cols / K / V / H are fixed per model and deliberately absent; M is ambiguous
#: (GEMM rows vs. number of modes) and left to callers that know the context. Keying,
#: specializing or branching on one of these recompiles or re-tunes on every new length.
VARYING_LENGTH = re.compile(
    r"T|NT|B|T_?q|T_?k|T_?kv|N_CTX|seq_?len\w*|seqlen\w*|max_seq_?len\w*|seq_length\w*"
    r"|n_?tokens|num_tokens\w*|total_tokens|n_rows|num_rows|batch|batch_size|bs|num_seqs|n_seqs")
