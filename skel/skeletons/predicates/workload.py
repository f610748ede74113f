"""What kind of work a kernel does and where it runs, read from its own text and its
module's place in the package: facts the tuning techniques need before they are worth anything.

Kinds of kernel judged over and over as poor targets (hand-checked verdicts in
``benchmarks/retrieval/precision.json``):

- kernels that only **move or index data** — copies, gathers, scatters, page-table and
  metadata fills — with no floating-point math. They are memory- or launch-bound; no tile
  size, warp count, per-GPU tier or persistent grid changes what they cost.
- kernels of a serving engine's **per-step bookkeeping**: the sampler, speculative
  decoding, the scheduler, the KV allocator, grammar masks, input preparation, attention
  metadata. They run once per engine step, between host work, not once per layer in a
  chain of small GPU kernels, so an overlapped launch gap is one gap per step.
- kernels of a **batch-invariant** (deterministic) module, whose reduction order is fixed on
  purpose, and of a **diffusion pipeline**, whose launches each cover thousands of image or
  video tokens.

And one fact about sizes: a kernel in a **serving engine** at all (sglang, vLLM, lmdeploy...)
sees a forward pass of a bounded number of tokens (chunked prefill caps it at a few thousand to
tens of thousands), which bounds what an activation can hold; a training library's kernel sees
whatever batch times sequence the user trains with.

All are conservative guesses from text: a kernel named anywhere else, or one with any
floating-point sign, is not described by them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from skel.skeletons.conditions import custom
from skel.skeletons.patterns import in_module

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts

# --- kernels that only move or index data ----------------------------------------------

#: a floating-point dtype, named anywhere in the kernel or the helpers it folds in
_FLOAT_TYPE = re.compile(r"(?i)float|fp8|fp16|bf16|fp32|e4m3|e5m2")
#: math that only floating-point work does (a `tl.dot`, a transcendental, a division)
_FLOAT_CALL = re.compile(
    r"tl\.(exp2?|log2?|sqrt|sqrt_rn|rsqrt|sigmoid|dot|dot_scaled|softmax|fma|erf|tanh|cos|sin|div_rn|fdiv)$"
    r"|^tl\.math\.|libdevice|^tl\.extra\.")
_FLOAT_LITERAL = re.compile(r"\d*\.\d*|\d+[eE]-?\d+")
#: a true division (`/`, not `//`) outside comments and strings
_TRUE_DIVISION = re.compile(r"(?<![/*])/(?![/=])")
#: parameters that carry float operands into the math (`x * scale`, `+ eps`, `* weight`)
_FLOAT_OPERAND = re.compile(r"(?i)(scale|eps|alpha|beta|weight|bias|temperature|logit|prob|gamma|norm)")
_COMMENT_OR_STRING = re.compile(r"#[^\n]*|\"\"\".*?\"\"\"|'''.*?'''|\"[^\"\n]*\"|'[^'\n]*'", re.S)


def _code(k: KernelFacts) -> str:
    return _COMMENT_OR_STRING.sub(" ", k.source)


def moves_data_only(k: KernelFacts) -> bool:
    """No floating-point sign anywhere in the kernel (and the helpers folded into it): no
    float dtype, float literal, true division, math call or `tl.dot`, and no parameter that
    names a float operand (scale, eps, weight...). What is left loads, stores, compares and
    does integer arithmetic: a copy, a gather/scatter, an index or metadata fill."""
    code = _code(k)
    if _FLOAT_TYPE.search(code) or _TRUE_DIVISION.search(code):
        return False
    if any(_FLOAT_CALL.search(c.name) for c in k.calls):
        return False
    if any(_FLOAT_LITERAL.fullmatch(c) for c in k.constants):
        return False
    return not any(_FLOAT_OPERAND.search(p.name) for p in k.params)


def _moves_data_only(k: KernelFacts) -> bool | None:
    """``moves_data_only`` as a condition's test: an absence across the source, calls,
    constants and parameters together, holding with no lines."""
    return True if moves_data_only(k) else None


#: ``moves_data_only`` as a condition: a launch or tiling technique's precondition negates it
MOVES_DATA_ONLY = custom(
    "moves-data-only", "a kernel that only moves or indexes data (no float dtype, literal, division, "
    "math call or `tl.dot`): memory- or launch-bound", _moves_data_only)


# --- per-step bookkeeping modules of a serving engine ----------------------------------

#: folders whose kernels run once per engine step (vLLM's `v1/worker/`, `sample/`,
#: `spec_decode/`; sglang's `speculative/`, `constrained/`, `disaggregation/`)
_STEP_FOLDERS = frozenset({
    "worker", "sample", "sampler", "sampling", "spec_decode", "speculative", "constrained",
    "structured_output", "structured_outputs", "scheduler", "disaggregation", "kv_transfer"})
#: file stems of the same kind anywhere (`metadata.py`, `metadata_kernel.py`, `allocator.py`)
_STEP_FILE = re.compile(r"metadata\w*|\w*_metadata|allocator|input_batch|structured_outputs?|sampler|sampling"
                        r"|penalties|\w*logprobs?")


def step_module(k: KernelFacts) -> str:
    """The part of the kernel's path that places it in per-step bookkeeping, or ""."""
    parts = k.path.replace("\\", "/").split("/")
    for folder in parts[:-1]:
        if folder in _STEP_FOLDERS:
            return folder + "/"
    stem = parts[-1].removesuffix(".py")
    return parts[-1] if _STEP_FILE.fullmatch(stem) else ""


#: ``step_module`` as a condition: a per-layer latency technique's precondition negates it
STEP_MODULE = in_module(
    folders=_STEP_FOLDERS, stem=_STEP_FILE, name="per-step-module",
    describe="a module of a serving engine's per-step bookkeeping (sampler, speculative "
    "decoding, scheduler, allocator, metadata): launched once per step, not per layer")


# --- kernels of a serving engine ----------------------------------------------------------

#: top-level packages of LLM serving engines: a forward pass there holds a bounded number
#: of tokens (chunked prefill, `max_num_batched_tokens`), not a training batch
_SERVING_PACKAGES = frozenset({"sglang", "vllm", "lmdeploy", "lightllm", "tensorrt_llm",
                               "text_generation_server", "mlc_llm", "aphrodite"})


def serving_engine(k: KernelFacts) -> str:
    """The serving engine whose package holds the kernel's file (a folder of its path), or ""."""
    for folder in k.path.replace("\\", "/").split("/")[:-1]:
        if folder in _SERVING_PACKAGES:
            return folder
    return ""


#: ``serving_engine`` as a condition: a size-driven technique's precondition reads it
SERVING_ENGINE = in_module(
    folders=_SERVING_PACKAGES, name="serving-engine-module",
    describe="a module of an LLM serving engine (sglang, vLLM, lmdeploy...), where "
    "one forward pass holds a bounded number of tokens")



#: a name that says decoding: `_fwd_grouped_kernel_stage1` in `decode_attention.py`,
#: `_paged_decode_fused_kernel`, `_split_kv_stage1` in `rel_attention_decode.py`
_DECODE = re.compile(r"(?i)decod")


def serving_decode(k: KernelFacts) -> str:
    """The kernel's or its file's name when it is a serving engine's decode kernel, or "".
    Decode there runs under CUDA-graph capture, replayed for each batch size captured at
    start-up: a launch must be fixed before capture, where an autotuner cannot time configs,
    and a key it has not seen means warm-up on a live request."""
    if not serving_engine(k):
        return ""
    stem = k.path.replace("\\", "/").split("/")[-1].removesuffix(".py")
    return next((n for n in (k.name, stem) if _DECODE.search(n)), "")


def _serving_decode(k: KernelFacts) -> bool | None:
    """``serving_decode`` as a condition's test: the module's place and the kernel's or
    file's name together, holding with no lines."""
    return True if serving_decode(k) else None


#: ``serving_decode`` as a condition: a technique that times or re-tunes launches negates it
SERVING_DECODE = custom(
    "serving-decode-kernel", "a serving engine's decode kernel (named for decoding, or in a decode module), "
    "launched under CUDA-graph capture", _serving_decode)

# --- deterministic (batch-invariant) modules -----------------------------------------------

#: a folder or file stem that says the module's kernels must give the same bits every run
#: (sglang's `batch_invariant_ops/`, vLLM's `model_executor/determinism/`)
_DETERMINISTIC = re.compile(r"batch_invariant\w*|determinism|deterministic\w*")


def deterministic_module(k: KernelFacts) -> str:
    """The part of the kernel's path that says its results must not vary from run to run
    (batch-invariant or deterministic ops), or "". There the reduction order is fixed on
    purpose: an autotuner picking a block size by timing, or a split of the reduction,
    changes the bits."""
    parts = k.path.replace("\\", "/").split("/")
    for part in parts[:-1] + [parts[-1].removesuffix(".py")]:
        if _DETERMINISTIC.fullmatch(part):
            return part
    return ""


#: ``deterministic_module`` as a condition: techniques that change the reduction order negate it
DETERMINISTIC_MODULE = in_module(
    parts=_DETERMINISTIC, name="deterministic-module",
    describe="a module of batch-invariant or deterministic kernels (results fixed bit for bit: "
    "the reduction order is chosen on purpose)")


# --- diffusion-model pipelines --------------------------------------------------------------

#: folders of a diffusion model's pipeline (sglang's `multimodal_gen/` and
#: `jit_kernel/diffusion/`: image and video DiTs, VAEs)
_DIFFUSION_FOLDERS = frozenset({"diffusion", "multimodal_gen", "dits", "vaes"})


def diffusion_module(k: KernelFacts) -> str:
    """The folder that places the kernel in a diffusion model's pipeline, or "". A denoising
    step is a few large launches over thousands of image or video tokens, not a chain of
    tiny per-layer decode kernels waiting on their launches."""
    for folder in k.path.replace("\\", "/").split("/")[:-1]:
        if folder in _DIFFUSION_FOLDERS:
            return folder + "/"
    return ""


#: ``diffusion_module`` as a condition: a launch-latency technique's precondition negates it
DIFFUSION_MODULE = in_module(
    folders=_DIFFUSION_FOLDERS, name="diffusion-module",
    describe="a module of a diffusion model's pipeline (image/video DiT, VAE): launches over "
    "thousands of tokens, not a chain of tiny decode kernels")
