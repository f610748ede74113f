"""The MCP server: five tools over the service API, with the official ``mcp`` SDK.

Each tool returns a ``CallToolResult`` built here: structured content (versioned, see
``tools``) plus text. A ``SkelError`` becomes a tool error (isError) carrying skel's
one-line message and, in its structured content, the error family's ``kind``; anything
else is reported the same way as an internal error, never as a traceback. Arguments the
tool's schema refuses (``k`` out of range, a backend not in the list) take the same path:
one line per call ("argument k: must be between 1 and 50 (got 0)", kind ``usage``), not
pydantic's report. An empty answer (no skeleton applies) is a normal result with
``"applies": false``.

A skeleton is named ``skeleton_id`` in every tool that takes one (``show``, ``apply``,
``verify``); ``verify``'s older names for it, ``skeleton`` and ``example``, still work and
are deprecated (``tools.verify_skeleton``).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Callable, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from skel import __version__
from skel.errors import SkelError, UsageError
from skel.mcp import tools
from skel.mcp import verify as verifying
from skel.mcp.roots import Roots
from skel.skeletons import registry

INSTRUCTIONS = """\
skel knows GPU-kernel optimisation techniques ("skeletons") mined from real Triton and CUDA code.
Typical loop: `suggest` on a kernel file (or inline source) -> read the top suggestion's `why` lines
and before/after template -> write the changed kernel to a new file -> `verify` original against
candidate (same results? faster on a GPU?) -> the verdict is recorded and shows up in `show`.
`search` finds skeletons by words, `list` gives the whole catalog. Paths are read only under the
server's roots. A result with "applies": false means no skeleton fits: an answer, not an error."""

Backend = Annotated[Literal["cuda", "rocm"] | None,
                    Field(description="Target backend; unknown when omitted (no filtering, caveats shown).")]
Arch = Annotated[str | None, Field(description="Target GPU architecture, e.g. sm80, sm90, sm100.")]
TritonV = Annotated[str | None, Field(description="Target Triton version X.Y.Z (default: the installed one).")]
Gpu = Annotated[str | None, Field(description="Only evidence measured on this GPU (H100, H200): a part of the "
                                  "device name, any case; default: any. H100 and H200 are both sm90.")]


def _error(exc: Exception) -> CallToolResult:
    if isinstance(exc, SkelError):
        kind, message = exc.kind, str(exc)
    else:  # a bug in skel: named in one line, like the command line does
        kind, message = "internal", ": ".join(filter(None, [type(exc).__name__, " ".join(str(exc).split())]))
        message = f"internal error: {message}"
    return CallToolResult(content=[TextContent(type="text", text=f"skel: error: {message}")],
                          structured_content={"schema": "skel.error/1", "kind": kind, "message": message},
                          is_error=True)


def _result(reply: tools.Reply) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=reply.text)], structured_content=reply.data)


def _answer(fn: Callable[..., tools.Reply], *args: Any, **kwargs: Any) -> CallToolResult:
    try:
        return _result(fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - every failure reaches the client as a tool error
        return _error(exc)


_BOUNDS = {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}


def argument_errors(exc: ValidationError, schema: dict[str, Any]) -> str:
    """The arguments a tool's schema refused, in one line: "argument k: must be between 1
    and 50 (got 0); argument backend: must be 'cuda' or 'rocm' (got 'cud')". ``schema`` is
    the tool's input schema, which gives a bounded number both of its limits."""
    said = []
    for e in exc.errors(include_url=False):
        loc = e.get("loc") or ()
        name = str(loc[0]) if loc else "arguments"
        where = name + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])
        kind, msg = e.get("type", ""), str(e.get("msg", ""))
        if kind == "missing":
            what = "required"
        elif kind in _BOUNDS:
            what = _bounds(schema.get("properties", {}).get(name, {})) or _must(msg)
        else:
            what = _must(msg)
        got = e.get("input")
        if kind != "missing" and isinstance(got, (int, float, str, bool)) and len(repr(got)) <= 40:
            what += f" (got {got!r})"
        said.append(f"argument {where}: {what}")
    return "; ".join(said) or "arguments refused by the tool's schema"


def _bounds(prop: dict[str, Any]) -> str:
    """"must be between 1 and 50" from a property's schema (an optional one's bounds sit
    in its ``anyOf``), or "" without any."""
    for p in [prop, *prop.get("anyOf", [])]:
        lo, hi = p.get("minimum", p.get("exclusiveMinimum")), p.get("maximum", p.get("exclusiveMaximum"))
        if lo is not None and hi is not None:
            return f"must be between {lo:g} and {hi:g}"
        if lo is not None:
            return f"must be at least {lo:g}"
        if hi is not None:
            return f"must be at most {hi:g}"
    return ""


def _must(msg: str) -> str:
    """pydantic's "Input should be a valid list" as "must be a valid list"."""
    msg = " ".join(msg.split())
    if msg.startswith("Input should"):
        return "must" + msg[len("Input should"):]
    return msg[:1].lower() + msg[1:]


class _Server(MCPServer):
    """The SDK's server, with arguments its schema refuses told like any skel error (one
    line, kind ``usage``, ``skel.error/1``) instead of pydantic's multi-line report."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            schema = next((t.input_schema for t in await self.list_tools() if t.name == name), {})
            return _error(UsageError(argument_errors(exc.__cause__, schema)))


def build(roots: Roots, store: str | None = None) -> MCPServer:
    svc = tools.Service(roots=roots, store=store)
    server = _Server("skel", title="skel: GPU-kernel optimisation skeletons", version=__version__,
                     instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    def suggest(
        path: Annotated[str | None, Field(description="Kernel file under the server's roots (relative to the "
                                          "first root, or absolute): a .py with @triton.jit kernels, or "
                                          ".cu/.cuh/.cpp/.hpp/.h. Give this or `source`.")] = None,
        source: Annotated[str | None, Field(description="The kernel's source text, when it is not in a file.")] = None,
        language: Annotated[Literal["triton", "cuda", "cpp"] | None,
                            Field(description="Language of `source` (default triton).")] = None,
        filename: Annotated[str | None, Field(description="File name for `source` (its suffix picks the "
                                              "language; shown in the answer), or its path in the project, "
                                              "e.g. sglang/srt/layers/norm.py: facts read off a path (a serving "
                                              "engine's package, a backend folder) then hold.")] = None,
        kernel: Annotated[str | None, Field(description="Only this kernel of the file (default: all).")] = None,
        profile: Annotated[str | None, Field(description="A profile file under the roots (Nsight Compute CSV, "
                                             "PyTorch trace, proton) to rank by the kernel's bottleneck.")] = None,
        bound: Annotated[Literal["memory", "compute", "latency", "occupancy"] | None,
                         Field(description="What limits the kernel, if known: ranks techniques that "
                                           "address it first.")] = None,
        backend: Backend = None, arch: Arch = None, triton: TritonV = None, gpu: Gpu = None,
        k: Annotated[int, Field(description="Suggestions per kernel.", ge=1, le=50)] = 5,
        max_tokens: Annotated[int | None, Field(description="Also return `prompt`: the answer as markdown "
                                                "fitted to about this many tokens.", ge=100)] = None,
        why_not: Annotated[list[str] | None, Field(description="Skeleton ids to explain for each kernel, "
                                                   "listed or not: the verdict (suggested at rank N, ruled "
                                                   "out by the authors, already used, conditions that "
                                                   "fail...) and each condition with your lines.")] = None,
        shapes: Annotated[list[str] | None, Field(description="Sizes the kernel runs at, NAME=VALUE each: a "
                                                  "parameter (n_cols=4096), a pointer's tensor shape "
                                                  "(x_ptr=8192x152064), or rows/cols/programs/elements/sms. "
                                                  "They decide whether size-bound techniques pay; without "
                                                  "them those come back in `conditional`.")] = None,
        all: Annotated[bool, Field(description="Also return suggestions whose probability of being right is "
                                   "under the threshold (marked `below_threshold`).")] = False,
    ) -> CallToolResult:
        """Suggest optimisation skeletons for the GPU kernels in a file or in inline source.

        Returns, per kernel, ranked suggestions: `kind` "match" (its preconditions hold in
        your kernel) or "refine" (you use the technique incompletely) are the ones to act on;
        "near-miss" and "related" are weaker, each saying what it lacks (near misses are
        listed only when nothing else fits; otherwise a note names them). Each suggestion has
        `why` (with your kernel's line numbers), `caveats`, evidence (mined real kernels using
        it, verification status), `track_record` (how often people judged this technique's
        suggestions right on real sglang/vLLM kernels: weigh it), `probability` (the estimated
        chance it is right, fitted on those verdicts; only those over the threshold are listed
        unless `all`; the others are named in `held_back`) and `before`/`after`: a template
        of the change to adapt. Techniques whose payoff depends on sizes you did not give are
        in `conditional`, with the `shapes` entry that would decide them. `applies` false
        means no skeleton fits this kernel: a valid answer, not an error.
        To learn why a technique you expected is missing, pass its id in `why_not`.
        Next step: write the changed kernel to a new file and call `verify`."""
        return _answer(tools.suggest, svc, path=path, source=source, language=language, filename=filename,
                       kernel=kernel, profile=profile, bound=bound, backend=backend, arch=arch, triton=triton,
                       k=k, max_tokens=max_tokens, why_not=why_not, shapes=shapes, show_all=all, gpu=gpu)

    @server.tool(annotations=read_only)
    def show(
        skeleton_id: Annotated[str, Field(description="A skeleton id, e.g. online-softmax (see `list`).")],
        backend: Backend = None, arch: Arch = None, triton: TritonV = None, gpu: Gpu = None,
    ) -> CallToolResult:
        """Show one skeleton in full: what it does, when it applies and when not, its
        conditions, before/after template, and its evidence: mined kernels using it and
        every verification run (status validated/demonstrated/stale/..., speedups, where
        measured), including the verdicts `verify` recorded, and its hand-checked
        `track_record`."""
        return _answer(tools.show, svc, skeleton_id, backend=backend, arch=arch, triton=triton, gpu=gpu)

    @server.tool(annotations=read_only)
    def apply(
        skeleton_id: Annotated[str, Field(description="A skeleton id with a mechanical codemod, e.g. int64-offsets, "
                                          "exp2-log2e-folding, do-not-specialize (see `list`).")],
        kernel: Annotated[str, Field(description="The @triton.jit kernel to rewrite.")],
        path: Annotated[str | None, Field(description="Kernel file under the server's roots. Give this or "
                                          "`source`.")] = None,
        source: Annotated[str | None, Field(description="The file's source text, when it is not in a file.")] = None,
    ) -> CallToolResult:
        """Apply a skeleton to one Triton kernel mechanically (the same codemod as `skel apply`)
        and return the candidate: the whole rewritten file (`source`), the lines changed and a
        unified diff. Nothing is written. A skeleton without a codemod, a technique already
        present, or nothing to rewrite is a tool error saying which. Next step: write the
        candidate to a file and call `verify` with it."""
        return _answer(tools.apply, svc, skeleton_id, kernel, path=path, source=source)

    @server.tool(annotations=read_only)
    def search(
        query: Annotated[str, Field(description="A few words, e.g. 'softmax single pass', 'split-k', 'fp8 "
                                    "scaling', or a skeleton id.")],
        k: Annotated[int, Field(description="Most results to return.", ge=1, le=100)] = 10,
    ) -> CallToolResult:
        """Find skeletons by words: ranked by how well the query matches each skeleton's
        documentation and example (BM25), with a bonus for words in its id or title. Use
        it to find a technique by name; use `suggest` to find what fits a kernel."""
        return _answer(tools.search, svc, query, k=k)

    @server.tool(name="list", annotations=read_only)
    def list_(
        category: Annotated[str | None, Field(description="Only categories containing this word, e.g. "
                                              "memory, fusion, tuning.")] = None,
        language: Annotated[Literal["triton", "cuda"] | None,
                            Field(description="Only skeletons that judge this language.")] = None,
        backend: Backend = None, arch: Arch = None, triton: TritonV = None, gpu: Gpu = None,
    ) -> CallToolResult:
        """List the skeleton catalog: id, title, one-line summary, category, languages, and
        status for the target (validated, demonstrated, stale, draft, ...) with the one-line
        evidence behind it."""
        return _answer(tools.list_skeletons, svc, category=category, language=language, backend=backend,
                       arch=arch, triton=triton, gpu=gpu)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    async def verify(
        ctx: Context,
        original: Annotated[str | None, Field(description="The original kernel file (skel harness format: "
                                              "SHAPES, make_inputs, reference, launcher `run`), under the "
                                              "roots.")] = None,
        candidate: Annotated[str | None, Field(description="The changed kernel file, launcher `run`.")] = None,
        skeleton_id: Annotated[str | None, Field(description="A skeleton id (see `list`). With original and "
                                                 "candidate: the technique the change applies; it must be "
                                                 "detected in the candidate, and the verdict is recorded under "
                                                 "it. Alone: verify that skeleton's own before/after "
                                                 "example.")] = None,
        example: Annotated[str | None, Field(description="Deprecated: give `skeleton_id` without original "
                                             "and candidate (verifies the skeleton's own example).")] = None,
        skeleton: Annotated[str | None, Field(description="Deprecated: give `skeleton_id`.")] = None,
        kernel: Annotated[str | None, Field(description="Launcher name in both files (default run).")] = None,
        harness: Annotated[str | None, Field(description="Harness file, when it is not in `original`.")] = None,
        device: Annotated[Literal["cpu", "cuda"] | None,
                          Field(description="cpu: Triton's interpreter, correctness only; cuda: also timed. "
                                            "Default: cuda when a GPU is visible.")] = None,
        shapes: Annotated[list[str] | None, Field(description="Harness shape names to run.")] = None,
        dtype: Annotated[str | None, Field(description="One dtype, e.g. float16.")] = None,
        record: Annotated[bool, Field(description="Record the verdict in the knowledge base (it then "
                                      "shows in `show`).")] = True,
        timeout_s: Annotated[float, Field(description="Stop after this many seconds.", ge=1,
                                          le=verifying.MAX_TIMEOUT)] = 600,
    ) -> CallToolResult:
        """Verify a changed kernel against the original, in a separate process: is the change
        applied, are the results the same (fresh inputs, several shapes and seeds, cheat
        checks), do the project's tests pass, and on a GPU is it faster. Returns the verdict:
        faster, correct (same results, not timed), no-effect, slower, wrong, not-applied,
        no-op, tests-failed or failed, with every stage's detail. A verdict such as "wrong"
        is a result, not a tool error; errors are for inputs that cannot be checked.
        `skeleton_id` alone verifies that skeleton's own before/after example (`example` and
        `skeleton` are deprecated names for it). Progress is reported while it runs."""
        try:
            example, skeleton = tools.verify_skeleton(skeleton_id, skeleton=skeleton, example=example,
                                                      paired=bool(original or candidate))
            if example:
                registry.get(example)  # an unknown id answers at once, before a process starts
            if skeleton:
                registry.get(skeleton)
            args = verifying.command(roots, original=original, candidate=candidate, example=example,
                                     kernel=kernel, skeleton=skeleton, harness=harness, device=device,
                                     shapes=shapes, dtype=dtype, record=record, store=store)

            async def progress(done: float, total: float, message: str) -> None:
                await ctx.report_progress(done, total, message)

            report = await verifying.run(args, verifying.environment(device), timeout_s, progress,
                                         cwd=str(roots.dirs[0]))
        except Exception as exc:  # noqa: BLE001 - every failure reaches the client as a tool error
            return _error(exc)
        rec = report["record"]
        data = {"schema": "skel.verify/1", "verdict": rec["verdict"], "exit_code": report.get("exit_code"),
                "recorded": record, "report": report}
        stages = "\n".join(f"- {s['name']}: {s['status']} — {s['detail']}" for s in report.get("stages", []))
        text = f"verdict: {rec['verdict']} — {rec.get('detail', '')}\n{stages}\n"
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    return server


# --- running it --------------------------------------------------------------------------

def parse_http(value: str, allow_remote: bool) -> tuple[str, int]:
    """HOST:PORT (or :PORT for loopback), refusing a non-loopback host unless allowed."""
    host, sep, port_s = value.rpartition(":")
    if not sep or not port_s.isdigit() or not 0 < int(port_s) < 65536:
        raise UsageError(f"--http {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    host = host.strip("[]") or "127.0.0.1"
    if not allow_remote and not _loopback(host):
        raise UsageError(f"--http {value}: {host} is not a loopback address; the server would be reachable from "
                         "other machines (pass --allow-remote if you mean it)")
    return host, int(port_s)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(roots: Roots, store: str | None = None, http: tuple[str, int] | None = None) -> None:
    """Serve until the client goes away (stdio) or the process is stopped (HTTP)."""
    server = build(roots, store)
    if http is None:
        server.run("stdio")
    else:
        host, port = http
        server.run("streamable-http", host=host, port=port)

