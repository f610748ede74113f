"""A mask the host builds from positions alone (`torch.tril`, `triu`, an `arange` comparison)
and passes to the kernel: nothing it holds is data, so the kernel can compute it from its row
and column indices. Two skeletons read it: `index-computed-causal-mask` (compute it: its
subject) and `bitpacked-attention-mask` (packing it would only shrink what should not be read
at all, so that one steps aside)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.kernels.flow import binary, name_of, operands
from skel.skeletons.predicates.host import own_launches

if TYPE_CHECKING:
    from skel.kernels.flow import CallInfo, Flow, Node
    from skel.kernels.model import KernelFacts, Launch

#: host calls that build a triangle or a band from positions (`torch.tril`, `ones(...).triu(1)`, `mask.tril_()`)
TRIANGLE_CALL = re.compile(r"(?:^|\.)(?:tril|triu)_?$")
#: an argument written as a triangle or an index comparison at the launch
INDEX_TEXT = re.compile(r"\b(?:tril|triu)_?\s*\(|\barange\s*\(")
#: host calls that make a mask no index comparison gives: random draws (a test's mask), packed or
#: loaded masks, block-diagonal (document) masks and per-token segment ids spread over keys
CUSTOM_CALL = re.compile(r"(?:^|\.)(?:rand|rand_like|randint|randint_like|bernoulli|randperm|multinomial|packbits|"
                         r"segment_packbits|block_diag|repeat_interleave|scatter_?|index_put_?)$|"
                         r"^(?:torch|np|numpy)\.load$")
#: names read by the launching function that say the mask carries more than positions
CUSTOM_NAME = re.compile(r"(?i)custom|tree|doc(?:ument)?_|document|segment|seq_?ids|padding|attn_mask|"
                         r"attention_mask|mask_indptr")
#: an argument that is a local, maybe converted (`mask`, `mask.to(q.dtype)`, `mask.contiguous()`)
_LOCAL_ARG = re.compile(r"([A-Za-z_]\w*)(?:\.(?:to|contiguous|float|half|bool|bfloat16|int)\([^()]*\))*")


def pointer_params(fl: Flow, k: KernelFacts, addr: Node) -> set[str]:
    """The kernel parameters an address is based on: the names along its `+` chain, through
    the names it is assigned from (`mask_ptrs = M + ...` then `mask_ptrs + start_n`)."""
    params = {p.name for p in k.params if not p.constexpr}
    out: set[str] = set()
    todo, seen = [addr], set[str]()
    while todo:
        e = todo.pop()
        if binary(e, "+"):
            todo += list(operands(e))
            continue
        name = name_of(e)
        if name is None or name in seen:
            continue
        seen.add(name)
        if name in params:
            out.add(name)
        todo += [d.value for d in fl.defs.get(name, ())]
    return out


def launch_argument(k: KernelFacts, ln: Launch, param: str) -> str | None:
    """What the launch passes for ``param`` (positional or keyword), as written."""
    names = [p.name for p in k.params]
    if param in ln.kwargs:
        return ln.kwargs[param]
    i = names.index(param) if param in names else -1
    return ln.args[i] if 0 <= i < len(ln.args) else None


def built_from_positions(ln: Launch, arg: str) -> bool:
    """The launching function builds ``arg`` from positions: written as a triangle or an index
    comparison at the launch, or a local after a `tril`/`triu` call (in the function or in a
    function of the same file it calls, `mask = _causal_mask(L)`), with no random draw, no
    packed/segment builder and no caller's mask read in the function or its helpers."""
    if any(CUSTOM_CALL.search(c) for c in ln.host_calls):
        return False
    local = _LOCAL_ARG.fullmatch(arg.strip())
    passed = local.group(1) if local else ""
    if any(CUSTOM_NAME.search(n) and n != passed for n in (*ln.host_names, *ln.helper_names)):
        return False
    if INDEX_TEXT.search(arg):
        return True
    if not passed or passed == "self":
        return False
    return any(TRIANGLE_CALL.search(c) for c in ln.calls_before) or \
        bool({"tril", "triu", "tril_", "triu_"} & set(ln.helper_names))


def positional_mask_loads(fl: Flow, k: KernelFacts, loads: list[CallInfo]) -> list[int] | None:
    """Lines of the mask ``loads`` (and of the launches) for which every launch of the kernel in
    its file passes, for a pointer the load is based on, a tensor built from positions; None
    when none is, or the file does not launch the kernel (the caller is out of sight)."""
    launches = own_launches(k)
    if not loads or not launches:
        return None
    lines: list[int] = []
    for c in loads:
        addr = c.arg(0, "pointer")
        params = pointer_params(fl, k, addr) if addr is not None else set()
        if params and all(any(built_from_positions(ln, a) for a in
                              (launch_argument(k, ln, p) for p in params) if a is not None) for ln in launches):
            lines += [c.line] + [ln.line for ln in launches if ln.line]
    return sorted(set(lines)) or None
