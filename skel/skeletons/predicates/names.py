"""Identifier and naming-convention patterns shared by the catalog."""

from __future__ import annotations

import re

from skel.skeletons.conditions import IDENT

#: ``IDENT`` (from conditions, where it is defined once) is a Python identifier (``pid_m``,
#: ``BLOCK_K``, ``_x``). The catalog uses it to pull the names out of an expression's
#: source text (loop bounds, masks, pointer arguments) and, through ``IDENT.pattern``, as a
#: building block of larger source-text patterns.
__all__ = ["IDENT", "TILE_NAME", "VARYING_LENGTH"]

#: Tile-size meta-parameters: BLOCK_M, BLOCK_SIZE_K, TILE_N, BK, BV, BM ... The
#: autotuner and hardware-tiered launches pick these; any value covers the range.
TILE_NAME = re.compile(r"(BLOCK|TILE)(_?[A-Z0-9]+)*|B[A-Z]{1,2}")

#: Lengths that vary from call to call (sequence, tokens, rows, batch). Model dims such as
#: N / D / n_cols / K / V / H are fixed per model and deliberately absent; M is ambiguous
#: (GEMM rows vs. number of modes) and left to callers that know the context. Keying,
#: specializing or branching on one of these recompiles or re-tunes on every new length.
VARYING_LENGTH = re.compile(
    r"T|NT|B|T_?q|T_?k|T_?kv|N_CTX|seq_?len\w*|seqlen\w*|max_seq_?len\w*|seq_length\w*"
    r"|n_?tokens|num_tokens\w*|total_tokens|n_rows|num_rows|batch|batch_size|bs|num_seqs|n_seqs")
