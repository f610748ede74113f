"""`skel suggest --compile`: the kernel's machine code, compiled offline, and a no-op check.

With ``--compile`` each kernel is compiled for the target (sm_90 unless ``--arch`` says
otherwise) on the CPU with Triton's own compiler (``skel.kernels.machine``), at the
constexprs the sizes give (``--shape BLOCK=1024``; the rest from the launch literals, the
first autotune config, or the signature's defaults, each named in ``assumed``). Two things
come of it:

- the facts themselves, shown with the answer: registers, spills, shared memory, the
  occupancy they allow, the widest global loads and stores, the MMA kind, MUFU operations;
- a no-op check: every shown suggestion whose technique has a mechanical codemod
  (``skel apply``) is applied and compiled too; one whose candidate compiles to the same
  machine code as the kernel (the compiler already does it, or the change cannot matter at
  these constexprs) is taken out of the list and named in ``no_op``.

Compiling runs the kernel's file outside this process: in the warm compile worker
(``skel.kernels.compile_worker``; ``skel.api.suggest`` starts it first thing, so it imports
torch and the kernel's package while the ranking runs), which then compiles each version in
0.2-1.9 s on 2 cores; a process's first compile also pays that import, about 2 s for a liger file
(`python -m benchmarks.performance.suggest_grounded`). Cached by content, and opt-in. A
kernel that does not compile offline says why in a note and is answered as without
``--compile``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from skel.errors import SkelError
from skel.skeletons import codemods, registry

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts
    from skel.kernels.workload import Workload


def launch_of(kf: KernelFacts, sizes: Workload):
    """What the sizes say of the kernel's launch: the constexprs they give a value."""
    from skel.kernels.machine import Launch  # deferred: only --compile needs the compiler's side

    constexprs = {p.name: sizes.sizes[p.name] for p in kf.params if p.constexpr and p.name in sizes.sizes}
    return Launch(constexprs=constexprs)


def summary(facts) -> dict:
    """The facts a reader weighs a suggestion against, as one small dict."""
    occ = facts.occupancy
    return {"registers": facts.registers, "spilled_bytes": facts.spilled_bytes, "shared_bytes": facts.shared_bytes,
            "num_warps": facts.num_warps, "num_stages": facts.num_stages,
            "occupancy": {"warps_per_sm": occ.warps_per_sm, "fraction": round(occ.fraction, 3),
                          "limited_by": occ.limited_by},
            "widest_load_bytes": facts.loads.widest, "widest_store_bytes": facts.stores.widest,
            "mma": facts.mma, "mufu": facts.mufu_total, "assumed": list(facts.assumed)}


def check(kf: KernelFacts, result: Any, sizes: Workload, cc: int) -> None:
    """Compile ``kf`` and its shown suggestions' mechanical candidates; record the facts on
    ``result.machine`` and move no-op suggestions to ``result.no_op`` (``result``: the
    kernel's ``skel.retriever.suggest.KernelResult``, which imports this module)."""
    from skel.kernels.machine import MachineFactsUnavailable, machine_facts  # deferred: see launch_of

    try:
        source = Path(kf.path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        result.notes.append(f"--compile: cannot read {kf.path} again: {exc}")
        return
    launch = launch_of(kf, sizes)
    try:
        facts = machine_facts(source, kf.name, launch, cc=cc)
    except MachineFactsUnavailable as exc:
        result.notes.append(f"--compile: {kf.name} does not compile offline here: {exc}")
        return
    result.machine = summary(facts)
    mechanical = set(registry.with_codemod())
    kept = []
    for s in result.suggestions:
        if s.id not in mechanical or s.kind != "match":
            kept.append(s)
            continue
        try:
            candidate = codemods.apply_source(s.id, source, kf.name, kf.path).source
            after = machine_facts(candidate, kf.name, launch, cc=cc)
        except (SkelError, MachineFactsUnavailable) as exc:
            s.caveats.append(f"not checked for a no-op: {exc}")
            kept.append(s)
            continue
        if (after.ptx_hash, after.num_warps, after.shared_bytes) == (facts.ptx_hash, facts.num_warps,
                                                                       facts.shared_bytes):
            result.no_op.append({"id": s.id, "reason": f"`skel apply {s.id}` compiles to the same machine code as "
                                 f"the kernel for sm_{cc} at the launch compiled (see `machine`: assumed)"})
        else:
            kept.append(s)
    result.suggestions = kept
