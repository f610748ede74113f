"""A reduction already split across programs: the names split-K / split-KV kernels use.

Split-K GEMMs (``SPLIT_K``, ``pid_k``), split-KV decode attention (``num_kv_splits``,
``split_kv_id``) and segmented attention (``NUM_SEGMENTS_PER_SEQ``, ``segm_idx``) name the
split they add; whichever skeleton proposes a split reads these names as "already done"."""

from __future__ import annotations

from skel.skeletons.conditions import uses_name

#: The split names of a split reduction: a split count or a split index.
SPLIT_NAMES = uses_name(
    r"(?i)split_?k|split_?kv|num_?(kv_?)?splits?|n_?splits?|kv_?splits?|split_(id|idx|indices)|i_split|"
    r"split_size|max_num_splits|split_k_id|split_kv_id|num_segments\w*|segm_idx|\w*segments_per_seq",
    name="split-names", describe="a split of the reduction (`SPLIT_K`, `num_kv_splits`, `split_id`)")
