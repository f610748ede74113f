"""2-D tile idioms as they appear in kernel source: ``x[:, None]`` and ``x[None, :]``."""

from __future__ import annotations

import re

#: A column broadcast ``x[:, None]`` (regex source, to build larger patterns).
COL_AXIS = r"\[\s*:\s*,\s*None\s*\]"
#: A row broadcast ``x[None, :]`` (regex source, to build larger patterns).
ROW_AXIS = r"\[\s*None\s*,\s*:\s*\]"

#: Either broadcast: the source builds 2-D tiles (``rows[:, None]``, ``q[None, :] * k``).
#: Row kernels without it work on 1-D vectors.
BROADCAST_2D = re.compile(COL_AXIS + "|" + ROW_AXIS)

#: An outer product ``k[:, None] * v[None, :]`` (either order, operands may be
#: parenthesised): the rank-1 update of a linear-recurrence state. A row-major 2-D
#: address (``rm[:, None] * K + rk[None, :]``) reads the same way; a caller that must tell
#: them apart skips assignments that load.
OUTER_PRODUCT = re.compile(COL_AXIS + r"\s*\*\s*\(?[^&|,]*?" + ROW_AXIS + "|" + ROW_AXIS + r"\s*\*\s*\(?[^&|,]*?"
                           + COL_AXIS)
