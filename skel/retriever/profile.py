"""What a profile says limits a kernel: memory, compute, latency/launch or occupancy.

``read_profile(path)`` reads one of three formats, told apart by their content:

- **Nsight Compute CSV** (``ncu --csv --page raw``): a header row (``"ID","Process ID",...,
  "Kernel Name",...`` then one column per metric), a units row, then one row per kernel
  launch; whatever the profiled program printed before the header, and ncu's ``==PROF==``
  lines, are skipped. Numbers may carry thousands separators (``"1,024"``); ``n/a`` is no
  value. The long form (``--page details`` or raw with ``--print-metric-instances``: one row
  per metric with "Metric Name"/"Metric Value" columns) is read too.
- **PyTorch profiler chrome trace** (``prof.export_chrome_trace``; ``.json`` or ``.json.gz``):
  events with ``cat: "kernel"``, their ``dur`` (µs) and ``args`` (grid, block, registers per
  thread, shared memory, ``est. achieved occupancy %``); ``deviceProperties`` gives the SM
  count. Times only: no hardware counter.
- **Triton proton** tree output (``proton.start(name)`` → ``name.hatchet``): a JSON list whose
  first item is the call tree (nodes ``{"frame": {"name"}, "metrics", "children"}``; a kernel
  node carries ``device_id``, ``count`` and ``time (ns)``) and whose second, when present,
  describes the devices (arch, SM count, clocks in kHz, memory bus width in bits). A kernel
  whose ``launch_metadata`` reports ``bytes`` or ``flops8/16/32/64`` gets an achieved
  throughput against the device's peak (bandwidth = 2 × memory clock × bus width; tensor-core
  peak = SMs × clock × dense ops per SM per cycle for sm80/sm90/sm100); without them, times
  only.

**Which kernel.** ``Profile.bottleneck(name)`` takes the launches whose launched name *is*
``name`` or, failing that, contains it as a whole identifier (a Triton kernel launches
under its function's name; a C++ one shows as ``void name<128>(float*, ...)`` or, mangled,
``_Z4namePf``). All matching launches are pooled: times add up, percentages are averaged
weighted by each launch's duration, so the launches that cost the time speak loudest.

**How it is classified** (``classify``), first rule that holds, thresholds in the constants:

1. *memory*: the larger of ``dram__throughput`` and ``gpu__compute_memory_throughput`` (the
   busiest memory unit: L1, L2 or DRAM) reaches ``HIGH`` = 60 % of peak and is at least the
   SM throughput. *compute*: ``sm__throughput`` reaches 60 % and exceeds the memory figure.
   60 % is the line Nsight Compute's own Speed-of-Light rule draws: above it a unit is the
   bottleneck worth working on; below it for both, the kernel is not using the machine.
2. *latency* (launch): a launch shorter than ``SHORT_US`` = 10 µs. Launch overhead and the
   ramp-up and tail of the grid are then a large share of the time, so fewer launches
   (fusion, persistence, CUDA graphs, PDL) pay more than anything inside the kernel.
3. *latency* (grid): fewer CTAs than half the SMs can hold at once in one wave
   (``launch__waves_per_multiprocessor`` < ``TINY_WAVES`` = 0.5), or without that metric a
   grid smaller than half the SM count: most of the GPU sits idle, whatever each CTA does
   (split-K, smaller tiles, more programs help).
4. *occupancy*: achieved occupancy (``sm__warps_active`` % of peak) below ``LOW_OCCUPANCY`` =
   25 %, and what caps the resident blocks per SM is the register file or shared memory
   (``launch__occupancy_limit_registers`` / ``_shared_mem`` lowest of the limits; without
   those columns, ≥ 128 registers per thread, which alone caps occupancy at 25 % on
   sm80-sm100): too few warps to hide latency, and the cause is a resource the code chooses.
5. *latency* (stalls): neither throughput reaches 60 % and the rules above did not fire —
   the units are idle waiting on dependent loads, barriers or instruction latency, which is
   what Nsight Compute's reading of low compute *and* memory throughput says.

Rules 1, 4 and 5 need hardware counters (an ncu profile). A chrome trace, or a proton profile
whose kernels report no flops or bytes, has times only: rule 2 can still fire (and rule 3
from a trace's grid, below a quarter of the SMs since nothing else confirms it), otherwise
the bottleneck is unknown and the note says "no hardware counters in this profile:
code-only ranking". Proton's flops/bytes are what the kernel's author computed, not
measured traffic (caches and re-reads are not in them): rule 1 uses them, rules 4 and 5 do
not, since a low figure there may only mean the estimate left traffic out.

Every answer names the metric that drove it and its value.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skel.errors import InputError

HIGH = 60.0  # % of peak: a unit at or above this is the bottleneck (Nsight Compute's SOL line)
SHORT_US = 10.0  # a launch shorter than this is dominated by launch and grid ramp-up/tail
TINY_WAVES = 0.5  # a grid filling under half of one wave leaves most SMs idle
TINY_WAVES_NO_COUNTERS = 0.25  # the same, stricter, when no counter can confirm it
LOW_OCCUPANCY = 25.0  # achieved occupancy (% of the SM's warp slots) too low to hide latency
HEAVY_REGISTERS = 128  # registers per thread that alone cap occupancy at 25 % (64K regs / SM)

# Nsight Compute metric names (what `ncu --metrics` is given; benchmarks/gpu/profile_samples_gpu.sh)
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"
DURATION = "gpu__time_duration.sum"
GRID = "launch__grid_size"
BLOCK = "launch__block_size"
WAVES = "launch__waves_per_multiprocessor"
REGISTERS = "launch__registers_per_thread"
SMS = "device__attribute_multiprocessor_count"
LIMITS = {"registers": "launch__occupancy_limit_registers", "shared memory": "launch__occupancy_limit_shared_mem",
          "warps": "launch__occupancy_limit_warps", "blocks": "launch__occupancy_limit_blocks"}
NCU_METRICS = (SM, MEMORY, DRAM, OCCUPANCY, THEORETICAL_OCCUPANCY, DURATION, GRID, BLOCK, WAVES, REGISTERS, SMS,
               *LIMITS.values())

# metrics read as percentages of peak (pooled over launches weighted by duration)
_PERCENT = (SM, MEMORY, DRAM, OCCUPANCY, THEORETICAL_OCCUPANCY)
_TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
               "second": 1e6, "s": 1e6}
# dense tensor-core operations per SM per clock, by compute capability and operand width
# (bits): A100 312 TFLOP/s fp16 = 108 SMs x 1.41 GHz x 2048; H100 SXM 989 = 132 x 1.83 GHz x
# 4096; B200 doubles again. Other architectures: no peak, no compute figure.
_OPS_PER_SM_CLOCK = {"80": {16: 2048, 32: 1024, 64: 128},
                     "90": {8: 8192, 16: 4096, 32: 2048, 64: 256},
                     "100": {8: 16384, 16: 8192, 32: 4096}}
NO_COUNTERS = "no hardware counters in this profile: code-only ranking"


@dataclass
class Launch:
    """One kernel launch (or, for proton, one kernel's launches summed), as read."""

    name: str
    duration_us: float | None = None  # total over ``count`` launches
    count: int = 1
    metrics: dict[str, float] = field(default_factory=dict)  # ncu names, or proton's derived ones
    grid: int | None = None  # CTAs
    sms: int | None = None
    estimated_occupancy: float | None = None  # a chrome trace's estimate (from the launch config)


@dataclass
class Bottleneck:
    """What the profile says about one kernel: the bound (None: unknown), the metric that
    decided it and its value, and whether hardware counters were there to decide."""

    kernel: str
    profile: str  # the file
    format: str  # "ncu" | "chrome-trace" | "proton"
    launched: list[str]  # the launched names that matched
    launches: int
    duration_us: float | None  # mean per launch
    bound: str | None
    metric: str | None
    value: float | None
    unit: str
    reason: str
    counters: bool
    figures: dict[str, float] = field(default_factory=dict)  # what else was read, for the record

    def note(self, bound_given: str | None = None) -> str:
        """One line for a suggestion's notes: what the profile says, the metric that decided
        it and its value, and what the ranking does with it."""
        head = f"profile ({self.format}, {self.launches} launch{'es' if self.launches != 1 else ''} of " \
               f"{', '.join(self.launched[:3])})"
        if self.bound is None:
            text = f"{head}: bottleneck unknown — {self.reason}"
        else:
            text = f"{head}: {self.bound}-bound ({_short(self.metric)} {_fmt(self.value)}{self.unit}; {self.reason})"
            if bound_given is None:
                text += f" — ranks techniques that address {self.bound} first"
        if bound_given is not None:
            text += f"; --bound {bound_given} given, it wins over the profile"
        return text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Profile:
    path: str
    format: str
    launches: list[Launch]
    counters: bool  # throughput against peak is known for at least one launch

    def names(self) -> list[str]:
        return list(dict.fromkeys(lc.name for lc in self.launches))

    def find(self, kernel: str) -> list[Launch]:
        """The launches of ``kernel``: named exactly so, else containing it as an identifier."""
        exact = [lc for lc in self.launches if lc.name == kernel]
        if exact:
            return exact
        word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(kernel)}(?![A-Za-z0-9_])")
        mangled = re.compile(rf"(?<!\d){len(kernel)}{re.escape(kernel)}")  # Itanium: <length><name>
        return [lc for lc in self.launches if word.search(lc.name) or mangled.search(lc.name)]

    def bottleneck(self, kernel: str) -> Bottleneck | None:
        """The classification of ``kernel`` (None when the profile has no launch of it)."""
        found = self.find(kernel)
        if not found:
            return None
        return classify(kernel, found, self)

    def missing_note(self, kernel: str) -> str:
        names = self.names()
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        return f"profile: no launch of {kernel} in {Path(self.path).name} (it holds: {shown or 'nothing'}): " \
               "code-only ranking"


# --- classification ----------------------------------------------------------------------------

def _pool(launches: list[Launch]) -> tuple[dict[str, float], float | None, int, int | None, int | None, float | None]:
    """Launches of one kernel pooled: percentages weighted by duration, the rest from the
    longest launch (grid, registers, limits); (metrics, mean µs, count, grid, sms, est. occ)."""
    count = sum(lc.count for lc in launches)
    times = [lc.duration_us for lc in launches if lc.duration_us is not None]
    mean_us = sum(times) / count if times and len(times) == len(launches) else None
    longest = max(launches, key=lambda lc: (lc.duration_us or 0.0) / max(lc.count, 1))
    pooled = dict(longest.metrics)
    for name in {m for lc in launches for m in lc.metrics}:
        if name in _PERCENT or name.startswith("proton:"):
            have = [(lc.metrics[name], lc.duration_us or 1.0) for lc in launches if name in lc.metrics]
            weight = sum(w for _, w in have) or 1.0
            pooled[name] = sum(v * w for v, w in have) / weight
    occ = [lc.estimated_occupancy for lc in launches if lc.estimated_occupancy is not None]
    return pooled, mean_us, count, longest.grid, longest.sms, (sum(occ) / len(occ) if occ else None)


def classify(kernel: str, launches: list[Launch], profile: Profile) -> Bottleneck:
    """The rules of the module docstring, applied to the pooled launches of one kernel."""
    m, mean_us, count, grid, sms, est_occ = _pool(launches)
    base: dict[str, Any] = dict(kernel=kernel, profile=profile.path, format=profile.format,
                                launched=list(dict.fromkeys(lc.name for lc in launches)), launches=count,
                                duration_us=None if mean_us is None else round(mean_us, 3),
                                figures={k: round(v, 3) for k, v in m.items()})

    def verdict(bound: str | None, metric: str | None, value: float | None, unit: str, reason: str,
                counters: bool) -> Bottleneck:
        return Bottleneck(bound=bound, metric=metric, value=None if value is None else round(value, 3),
                          unit=unit, reason=reason, counters=counters, **base)

    if sms is None and SMS in m:
        sms = int(m[SMS])
    if grid is None and GRID in m:
        grid = int(m[GRID])
    compute = (SM, m[SM]) if SM in m else None
    memories = [(k, m[k]) for k in (DRAM, MEMORY) if k in m]
    if "proton:compute" in m:
        compute = ("proton:compute", m["proton:compute"])
    if "proton:memory" in m:
        memories.append(("proton:memory", m["proton:memory"]))
    memory = max(memories, key=lambda kv: kv[1]) if memories else None
    hardware = compute is not None and memory is not None and not compute[0].startswith("proton:")
    analytic = (compute or memory) is not None and not hardware
    sm_word = "SM" if hardware else "compute"
    estimate = "" if hardware else "; no hardware counters in this profile: from the kernel's own flops/bytes"
    timing_only = "; no hardware counters in this profile: the duration alone decides"

    # 1. a unit at or above the line
    if memory and memory[1] >= HIGH and (compute is None or memory[1] >= compute[1]):
        # DRAM named when it is the unit at the line (the most specific reading), else the
        # busiest memory unit (L1 or L2)
        shown = (DRAM, m[DRAM]) if m.get(DRAM, 0.0) >= HIGH else memory
        other = f"{sm_word} {_fmt(compute[1])} %, " if compute else ""
        return verdict("memory", shown[0], shown[1], " % of peak",
                       f"{other}{HIGH:.0f} % of peak is the line{estimate}", hardware)
    if compute and compute[1] >= HIGH and (memory is None or compute[1] > memory[1]):
        other = f"memory {_fmt(memory[1])} %, " if memory else ""
        return verdict("compute", compute[0], compute[1], " % of peak",
                       f"{other}{HIGH:.0f} % of peak is the line{estimate}", hardware)
    # 2. short launches
    if mean_us is not None and mean_us < SHORT_US:
        return verdict("latency", "duration per launch", mean_us, " µs",
                       f"under {SHORT_US:.0f} µs: launch overhead and grid ramp-up dominate"
                       + ("" if hardware else timing_only), hardware)
    # 3. a grid that leaves most SMs idle
    waves = m.get(WAVES)
    if waves is None and grid and sms:
        waves = grid / sms
    line = TINY_WAVES if hardware else TINY_WAVES_NO_COUNTERS
    if waves is not None and waves < line and (hardware or not analytic):
        metric = WAVES if WAVES in m else "grid / SMs"
        return verdict("latency", metric, waves, " waves",
                       f"{grid or '?'} CTAs on {sms or '?'} SMs, under {line:g} of a wave: most SMs idle"
                       + ("" if hardware else "; no hardware counters in this profile: the grid alone decides"),
                       hardware)
    if not hardware:
        told = []
        if mean_us is not None:
            told.append(f"{_fmt(mean_us)} µs a launch")
        if memory:
            told.append(f"memory {_fmt(memory[1])} % of peak by its own bytes")
        if compute:
            told.append(f"compute {_fmt(compute[1])} % of peak by its own flops")
        if est_occ is not None:
            told.append(f"est. achieved occupancy {_fmt(est_occ)} %")
        reason = _no_counters(analytic) + (f" ({'; '.join(told)})" if told else "")
        return verdict(None, None, None, "", reason, False)
    assert compute is not None and memory is not None  # hardware
    # 4. occupancy capped by a resource the code chooses
    occ = m.get(OCCUPANCY)
    limit = _resource_limit(m)
    if occ is not None and occ < LOW_OCCUPANCY and limit:
        return verdict("occupancy", OCCUPANCY, occ, " % of peak",
                       f"achieved occupancy under {LOW_OCCUPANCY:.0f} %, capped by {limit}; "
                       f"SM {_fmt(compute[1])} %, memory {_fmt(memory[1])} %", True)
    # 5. nothing busy: latency stalls
    top = max((compute, memory), key=lambda kv: kv[1])
    return verdict("latency", top[0], top[1], " % of peak",
                   f"SM {_fmt(compute[1])} %, memory {_fmt(memory[1])} %: neither reaches {HIGH:.0f} % of peak, "
                   "the units wait on latency", True)


def _resource_limit(m: dict[str, float]) -> str | None:
    """'registers' or 'shared memory' when that is what caps blocks per SM."""
    limits = {what: m[name] for what, name in LIMITS.items() if name in m}
    if limits:
        lowest = min(limits.values())
        binding = [w for w in ("registers", "shared memory") if limits.get(w) == lowest]
        if binding and all(limits[w] > lowest for w in ("warps", "blocks") if w in limits):
            return f"{binding[0]} ({int(lowest)} block{'s' if lowest != 1 else ''} per SM)"
        return None
    regs = m.get(REGISTERS)
    if regs is not None and regs >= HEAVY_REGISTERS:
        return f"registers ({int(regs)} per thread)"
    return None


def _by_estimate(hardware: bool) -> str:
    return "" if hardware else " (no hardware counters in this profile: from the kernel's own flops/bytes)"


def _no_counters(analytic: bool) -> str:
    if analytic:
        return ("no hardware counters in this profile: throughput only from the kernel's own flops/bytes, "
                "code-only ranking unless one reaches the line")
    return NO_COUNTERS


def _short(metric: str | None) -> str:
    if metric is None:
        return ""
    if metric.startswith("proton:"):
        return {"proton:memory": "bytes/time vs peak bandwidth",
                "proton:compute": "flops/time vs peak tensor throughput"}[metric]
    return metric.split(".")[0]


def _fmt(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{v:.1f}" if abs(v) >= 1 or v == 0 else f"{v:.3g}"


# --- reading -----------------------------------------------------------------------------------

def read_profile(path: str | Path) -> Profile:
    """Read an ncu CSV, a chrome trace or a proton tree; InputError with one line otherwise."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such profile file")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{p}: unreadable: {exc.strerror}") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except OSError as exc:
            raise InputError(f"{p}: a broken gzip file: {exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not a text profile (byte {exc.start} is not UTF-8; for ncu, export "
                         "with `ncu --csv --page raw`, not a .ncu-rep)") from exc
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InputError(f"{p}: not valid JSON (line {exc.lineno}: {exc.msg})") from exc
        if isinstance(data, dict) and "traceEvents" in data:
            return _chrome(p, data)
        if isinstance(data, list) and data and isinstance(data[0], dict) and "frame" in data[0]:
            return _proton(p, data)
        if isinstance(data, dict) and "frame" in data:
            return _proton(p, [data])
        raise InputError(f"{p}: JSON, but neither a chrome trace (traceEvents) nor a proton tree (frame/children)")
    return _ncu(p, text)


def _number(s: str) -> float | None:
    s = s.strip().replace(",", "")
    if not s or s.lower() in ("n/a", "nan", "-"):
        return None
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _dims(s: Any) -> int | None:
    """A grid or block size: "(128, 2, 1)", [128, 2, 1] or 256 → the product."""
    if isinstance(s, (int, float)):
        return int(s)
    if isinstance(s, (list, tuple)):
        vals = [v for v in s if isinstance(v, (int, float))]
        return math.prod(int(v) for v in vals) if vals else None
    if isinstance(s, str):
        nums = re.findall(r"\d[\d,]*", s)
        return math.prod(int(n.replace(",", "")) for n in nums) if nums else None
    return None


def _ncu(p: Path, text: str) -> Profile:
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"') or ln.startswith("ID,")), None)
    if start is None:
        raise InputError(f"{p}: not a profile skel reads: no ncu CSV header (\"ID\",...,\"Kernel Name\"); "
                         "give `ncu --csv --page raw` output, a PyTorch chrome trace or a proton .hatchet file")
    rows = list(csv.reader(io.StringIO("\n".join(ln for ln in lines[start:] if not ln.startswith("==")))))
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    name_col = col.get("Kernel Name", col.get("Function Name"))
    if name_col is None:
        raise InputError(f"{p}: an ncu CSV without a \"Kernel Name\" column")
    if "Metric Name" in col and "Metric Value" in col:
        launches = _ncu_long(rows[1:], col, name_col)
    else:
        launches = _ncu_wide(rows[1:], header, name_col)
    if not launches:
        raise InputError(f"{p}: an ncu CSV with no kernel launch in it (was the kernel filter right?)")
    counters = any(SM in lc.metrics and (DRAM in lc.metrics or MEMORY in lc.metrics) for lc in launches)
    return Profile(str(p), "ncu", launches, counters)


def _ncu_wide(rows: list[list[str]], header: list[str], name_col: int) -> list[Launch]:
    units: dict[str, str] = {}
    if rows and not rows[0][name_col].strip():  # the units row: empty identity columns
        units = {header[i]: u for i, u in enumerate(rows[0]) if u}
        rows = rows[1:]
    out = []
    for row in rows:
        if len(row) != len(header) or not row[name_col].strip():
            continue
        values = {h: v for h, v in zip(header, row)}
        metrics = {h: n for h, v in values.items() if "__" in h and (n := _number(v)) is not None}
        out.append(_ncu_launch(row[name_col], metrics, units, values))
    return out


def _ncu_long(rows: list[list[str]], col: dict[str, int], name_col: int) -> list[Launch]:
    by_id: dict[str, tuple[str, dict[str, float], dict[str, str], dict[str, str]]] = {}
    for row in rows:
        if len(row) <= max(col["Metric Name"], col["Metric Value"], name_col):
            continue
        key = row[col["ID"]] if "ID" in col else str(len(by_id))
        name, metrics, units, values = by_id.setdefault(key, (row[name_col], {}, {}, {}))
        for extra in ("Grid Size", "Block Size"):
            if extra in col:
                values[extra] = row[col[extra]]
        v = _number(row[col["Metric Value"]])
        if v is not None:
            metrics[row[col["Metric Name"]]] = v
            if "Metric Unit" in col:
                units[row[col["Metric Name"]]] = row[col["Metric Unit"]]
    return [_ncu_launch(name, metrics, units, values) for name, metrics, units, values in by_id.values()]


def _ncu_launch(name: str, metrics: dict[str, float], units: dict[str, str], values: dict[str, str]) -> Launch:
    duration = None
    if DURATION in metrics:
        scale = _TIME_UNITS.get(units.get(DURATION, "nsecond").strip().lower(), 1e-3)
        duration = metrics[DURATION] * scale
    grid = int(metrics[GRID]) if GRID in metrics else _dims(values.get("Grid Size"))
    sms = int(metrics[SMS]) if SMS in metrics else None
    return Launch(name=name.strip(), duration_us=duration, metrics=metrics, grid=grid, sms=sms)


def _chrome(p: Path, data: dict) -> Profile:
    events = data.get("traceEvents")
    if not isinstance(events, list):
        raise InputError(f"{p}: a chrome trace whose traceEvents is not a list")
    props = data.get("deviceProperties") or []
    sms_by_device = {d.get("id"): d.get("numSms") for d in props if isinstance(d, dict)}
    launches = []
    for e in events:
        if not isinstance(e, dict) or str(e.get("cat", "")).lower() != "kernel" or "name" not in e:
            continue
        args = e.get("args") or {}
        dur = e.get("dur")
        sms = sms_by_device.get(args.get("device"))
        occ = args.get("est. achieved occupancy %")
        launches.append(Launch(name=str(e["name"]), duration_us=float(dur) if isinstance(dur, (int, float)) else None,
                               grid=_dims(args.get("grid")), sms=int(sms) if isinstance(sms, (int, float)) else None,
                               estimated_occupancy=float(occ) if isinstance(occ, (int, float)) else None,
                               metrics={k: float(args[a]) for k, a in ((REGISTERS, "registers per thread"),)
                                        if isinstance(args.get(a), (int, float))}))
    if not launches:
        raise InputError(f"{p}: a chrome trace with no GPU kernel event (cat \"kernel\"): was the profiler "
                         "run with ProfilerActivity.CUDA?")
    return Profile(str(p), "chrome-trace", launches, counters=False)


def _proton(p: Path, data: list) -> Profile:
    devices = data[1] if len(data) > 1 and isinstance(data[1], dict) else {}
    launches: list[Launch] = []

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        frame = node.get("frame") or {}
        metrics = node.get("metrics") or {}
        if "device_id" in metrics and frame.get("name") and frame.get("name") != "__proton_launch_metadata":
            launches.append(_proton_launch(str(frame["name"]), metrics, devices))
        for child in node.get("children") or []:
            walk(child)

    for root in data[:1]:
        walk(root)
    if not launches:
        raise InputError(f"{p}: a proton tree with no kernel (no node carries device_id): was a GPU kernel "
                         "launched between proton.start and proton.finalize?")
    counters = False  # proton's flops/bytes are the author's estimates, never hardware counters
    return Profile(str(p), "proton", launches, counters)


def _proton_launch(name: str, metrics: dict, devices: dict) -> Launch:
    count = int(metrics.get("count") or 1)
    duration = None
    for key, v in metrics.items():
        unit = re.fullmatch(r"time \((\w+)\)", key)
        if unit and isinstance(v, (int, float)) and unit.group(1) in _TIME_UNITS:
            duration = float(v) * _TIME_UNITS[unit.group(1)]
    device = _proton_device(devices, metrics)
    derived: dict[str, float] = {}
    seconds = duration * 1e-6 if duration else None
    if device and seconds:
        bw = 2 * float(device.get("memory_clock_rate", 0)) * 1e3 * float(device.get("bus_width", 0)) / 8
        if bw > 0 and isinstance(metrics.get("bytes"), (int, float)):
            derived["proton:memory"] = 100.0 * metrics["bytes"] / seconds / bw
        ops = _OPS_PER_SM_CLOCK.get(str(device.get("arch", "")))
        if ops:
            # time each width's flops would take at its peak; their sum against the time taken
            least = 0.0
            for width, per in ops.items():
                flops = metrics.get(f"flops{width}")
                if isinstance(flops, (int, float)):
                    least += flops / (float(device.get("num_sms", 0)) * float(device.get("clock_rate", 0)) * 1e3
                                      * per or math.inf)
            if least > 0:
                derived["proton:compute"] = 100.0 * least / seconds
    return Launch(name=name, duration_us=duration, count=count, metrics=derived)


def _proton_device(devices: dict, metrics: dict) -> dict | None:
    """The device a kernel ran on: its type's table (``{"CUDA": {"0": {...}}}``), else the
    only table there is (the type may be spelled as a number in the kernel's metrics)."""
    tables = [t for t in devices.values() if isinstance(t, dict)]
    table = devices.get(str(metrics.get("device_type")))
    if not isinstance(table, dict):
        table = tables[0] if len(tables) == 1 else {}
    dev = table.get(str(metrics.get("device_id")))
    return dev if isinstance(dev, dict) else None
