"""Temporary re-export while the catalog moves to skel.kernels.flow (removed in this change)."""
from skel.kernels.flow import *  # noqa: F401,F403
from skel.kernels.flow import is_vector_expr as _is_vector_expr  # noqa: F401
