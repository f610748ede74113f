"""Plain-text tables for people (no dependency; aligned columns, numbers right-aligned)."""

from __future__ import annotations


def table(headers: list[str], rows: list[list[object]], max_width: int = 70) -> str:
    cells = [[_cell(v, max_width) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], (int, float)) for row in rows) and rows for i in range(len(headers))]

    def fmt(values: list[str]) -> str:
        cells = (v.rjust(w) if numeric[i] else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths)))
        return "  ".join(cells).rstrip()

    lines = [fmt(headers), "  ".join("-" * w for w in widths)]
    lines += [fmt(r) for r in cells]
    return "\n".join(lines)


def _cell(v: object, max_width: int) -> str:
    s = f"{v:.3g}" if isinstance(v, float) else str(v)
    return s if len(s) <= max_width else s[: max_width - 1] + "…"
