"""`#pragma unroll` a compile-time-trip loop that indexes a per-thread array, so the array stays in registers.

## What it does
A device loop whose variable indexes a per-thread array — `float acc[8]` accumulated over K,
`T local_A[32]` filled from global memory, a fragment array `frag[num_frags_x][4]` — is
given a compile-time trip count and `#pragma unroll`:

    float acc[8] = {};                              float acc[kCols] = {};   // template <int kCols>
    for (int k = 0; k < K; ++k)                     for (int k = 0; k < K; ++k)
      for (int j = 0; j < cols_per_thread; ++j)  →  #pragma unroll
        acc[j] += x[k] * w[k * N + col0 + j];         for (int j = 0; j < kCols; ++j)
                                                        acc[j] += x[k] * w[k * N + col0 + j];

Where the bound is a runtime value the launcher always sets to the same number (a
`cols_per_thread` argument beside a `float acc[8]`), it becomes a template parameter or a
`constexpr` (the array's size is the constant at hand; a bound that really varies keeps a
guard inside: `if (j < n)`). Where the bound is already a literal, a template parameter or
a `kName` constant, only the pragma is added.

## Why it is faster
Registers cannot be indexed at run time. An array element the compiler cannot name at
compile time (`acc[j]` with `j` a loop counter of a loop left rolled) forces the whole
array into *local memory*: per-thread stack in device memory, cached in L1/L2. Every
`acc[j] += ...` becomes a local load, the FMA and a local store (`LDL`/`STL`), and a
kernel whose inner loop is a few FMAs per element runs at L1 bandwidth instead of FMA
throughput. Unrolled, each copy of the body names `acc[0]` … `acc[7]`: the array becomes 8
scalars in registers, the loop's counter, compare and branch disappear, and the loads of
all iterations can be issued before the first FMA needs its operand. IST-DASLab's Marlin
says so in its source: register groups "must be compile-time constants, which is why we
extensively use `#pragma unroll`".

When it does not pay: nvcc (and hipcc) already unroll many short constant-trip loops on
their own at `-O3`, so a pragma on a literal-bound loop often changes nothing (the ptxas
report tells: `-Xptxas -v` prints a stack frame and spill bytes for a kernel whose array
went to local memory, `cuobjdump -sass` shows `LDL`/`STL`). A long loop unrolled multiplies
code size and keeps every iteration's values live: more registers, possibly spills and
instruction-cache misses — keep it rolled, or `#pragma unroll 4`.

## Applies when
- a `for` loop in a `__global__` kernel, with no `#pragma unroll` (of any factor) in front
  of it, counts from a constant start by a constant step, and its variable indexes a
  per-thread array declared in the kernel (`float acc[8]`, `uint4 regs[kN]`; not
  `__shared__`, not a pointer), every other name in that index being a constant or a loop
  variable;
- its trip count is a compile-time constant (a literal expression of at most 32 trips,
  a template parameter, a `kName`/`ALL_CAPS` constant, a local `constexpr`, a name that
  sizes a local array) — or its bound is a runtime value while the array it indexes has a
  compile-time size of at most 32 (or a named size), which is the constant to unroll to;
- **it pays** (shown as a suggestion) when the bound is a runtime value, the loop sits
  inside another loop and the array's size is known to be at most 32 (a literal, a local
  `constexpr`, or `--shape NAME=N` for a named size): the array is then in local memory (nvcc
  unrolls a loop of unknown trip count partially at most, so the index stays dynamic; the
  ptxas stack frame confirms it), and every trip of the outer loop pays the local loads and
  stores. A runtime-bound loop outside any loop is *conditional* (how hot
  those accesses are is no size), and so is a constant-trip loop left rolled: nvcc may
  already have unrolled it — its ptxas report decides. A trip count or array size the sizes
  put above 32 does not pay (code size).

## Does not apply when
- the loop already carries `#pragma unroll` or `#pragma unroll N` — or `#pragma unroll 1`,
  the authors' choice to keep it rolled;
- its variable indexes no per-thread array (a reduction into a scalar, a loop over global
  memory, a `for (int o = 16; o > 0; o >>= 1)` shuffle tree, a loop with a thread-dependent
  start such as `for (i = threadIdx.x; i < n; i += blockDim.x)`): nvcc unrolls the short
  ones itself and nothing goes to local memory;
- the index also depends on a runtime value (`vals[lane + j]`): unrolling leaves it dynamic;
- the bound is another loop's variable (`for (j = 0; j < k; ++j)` inside a loop over `k`), or
  the loop holds a loop with a runtime trip count (a scan over the experts inside a loop over
  `top_k`): unrolled, it would be copied whole, and the array stays dynamically indexed by the
  loop around it — a serial top-k needs another algorithm, not a pragma;
- the trip count is long (a literal above 32, an array of 64 or more elements): code-size
  blowup, register pressure and spills cost more than the loop overhead saved;
- the unit is a host function (a binding's loop over `sizes[i]`): it is not device code.

## References
- bitsandbytes `csrc/kernels.cu` (`kgemm_4bit_inference_naive`: `#pragma unroll` added to
  the tail loop `for(int k = 0; k < num_values_4bit; k++)` that fills `T local_A[num_values_4bit]`,
  beside comments "this is the most important for performance considerations" and "this is
  also relatively important for performance" on the vectorised loads) — at `ba51d95d43`,
  2023-07-11, "Added more extensive gemv tests; blocksize guard for gemv.", before 2025-07-01
- bitsandbytes `csrc/kernels.cu` (`gemm_device`: B tiles staged through a per-thread
  `local_B[col]` in `#pragma unroll 8` loops `for(int col = 0; col < 8; col++)`, where the old
  loop wrote shared memory rolled) — at `cabcd9b9d5`, 2023-04-30, "Halved shared memory 466."
  (the trailing numbers of that series of commits, 466, 362, 240, are not explained), before 2025-07-01
- flashinfer `include/flashinfer/prefill.cuh` (`SinglePrefillWithKVCacheKernel`: `#pragma unroll`
  added to `for (uint32_t fx = 0; fx < num_frags_x; ++fx)` loading the query fragments
  `q_frag[fx][fy]` that stay in registers, `num_frags_x` a template parameter) — at
  `f030c289dc`, 2023-10-19, "pin q", before 2025-07-01
- IST-DASLab marlin `marlin/marlin_cuda_kernel.cu` (`Marlin`: every loop over a `Vec`/`B_ptr[i]`
  register array is `#pragma unroll`; the file's comment states why: index accesses of register
  groups "must be compile-time constants") — at `dd58055f90`, 2024-01-27, "Gemm optimizations",
  before 2025-07-01
- pytorch/ao `torchao/csrc/cuda/fp6_llm/kernel_reduction.cuh` (`SplitK_Reduction`: `float
  Results[HALF_PER_128BIT]` accumulated in a `#pragma unroll` loop inside the runtime `Split_K`
  loop: the shape of this skeleton's example) — at `8c07d22b83`, 2024-11-04, "BF16 support for
  Quant-LLM kernel (#1147)", before 2025-07-01
- xformers `xformers/components/attention/csrc/cuda/attention.cu` (`attention_kernel` and the
  device helpers it calls: register blocks `si[kBlockSizeQ][kBlockSizeK]`, `m_prime[kBlockSizeQ]`
  over template sizes, every loop over them `#pragma unroll`) — at `a0fb375377`, 2022-04-25,
  "Memory efficient attention - backward pass (#281)", whose message lists the steps of the
  whole PR ("Speedup CUDA kernel by 5x", "Make it 30% faster: ... use local buffers for
  accumulation", "3.5x speedup by blocking strategy"): the whole change, not the pragma alone,
  before 2025-07-01
- the candidate cluster "more pragma unroll" (`skel skeletons candidates`: 10 repositories, 46
  commits, also DeepGEMM `fp8_gemm.cuh`, flashinfer `sampling.cuh`, flash-attention
  `ln_bwd_kernels.cuh`, exllamav2, llm-awq, aiter): most of its commits add new loops
  already unrolled; the loops that gained the pragma in place are the four above
- CUDA C++ Programming Guide, "#pragma unroll"; CUDA C++ Best Practices Guide, "Local Memory"
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from skel.skeletons.base import Category, Env, Skeleton
from skel.skeletons.conditions import custom
from skel.skeletons.patterns import loops_where
from skel.skeletons.predicates.cuda_loops import array_loops, local_memory_pays, pragma_unrolled, rolled_array_loops
from skel.skeletons.predicates.cuda_tiles import is_kernel

if TYPE_CHECKING:
    from skel.kernels.model import KernelFacts, Loop


def _rolled_loop(lp: Loop, k: KernelFacts) -> bool:
    return any(al.loop is lp for al in rolled_array_loops(k))


def _unrolled_loop(lp: Loop, k: KernelFacts) -> bool:
    return is_kernel(k) and any(al.loop is lp and al.constant and pragma_unrolled(lp) for al in array_loops(k))


def _global_kernel(k: KernelFacts) -> bool | None:
    """A `__global__` kernel (a whole-unit fact: no lines of its own)."""
    return is_kernel(k) or None


KERNEL = custom("cuda-kernel", "a `__global__` kernel", _global_kernel, signature=True)
ROLLED_ARRAY_LOOP = loops_where(
    kind="for", where=_rolled_loop, name="rolled-register-array-loop",
    describe="a loop left rolled whose variable indexes a per-thread array (`acc[j]`), with a compile-time trip "
    "count (or a runtime bound under a fixed array size) of at most 32")
UNROLLED_ARRAY_LOOP = loops_where(
    kind="for", where=_unrolled_loop, name="unrolled-register-array-loop",
    describe="`#pragma unroll` on a compile-time-trip loop indexing a per-thread array")
#: present: the kernel unrolls its array loops, and none is left rolled
PRESENT = UNROLLED_ARRAY_LOOP & ~ROLLED_ARRAY_LOOP


SKELETON = Skeleton(
    id="cuda-pragma-unroll-fixed-trip",
    title="#pragma unroll fixed-trip loops over per-thread arrays (keep them in registers)",
    summary="Give a loop that indexes a per-thread array a compile-time trip and #pragma unroll: the array stays in "
    "registers.",
    category=Category.TUNING,
    doc=__doc__,
    ruled_out_by=(r"\bunroll\w*", r"\bpragma\s+unroll\b"),
    ruled_out_code=(r"^#\s*pragma\s+unroll\b(?!\s*\(?\s*1\b)",),
    present=PRESENT,
    preconditions=[ROLLED_ARRAY_LOOP, KERNEL],
    subject=ROLLED_ARRAY_LOOP,
    env=Env(),
    helps=("latency", "memory"),
    languages=("cuda",),
    payoff=local_memory_pays,
)
