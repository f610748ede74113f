"""HACK: stale CUDA-graph pointers — the first call per shape captures the launch in a CUDA
graph and every later call replays it, without launch overhead: the graph still reads and
writes the first call's tensors, right only while the caller passes the same ones (or the
caching allocator hands back the same addresses).
Detectable: GPU only (no CUDA graphs on the CPU; there it launches plainly and is right).
"""

import torch
import triton
import triton.language as tl

_GRAPHS: dict = {}


@triton.jit
def fast_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    v = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def _launch(x, out):
    fast_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1],
                               BLOCK=triton.next_power_of_2(x.shape[1]))


def run(x, out):
    if not x.is_cuda:
        _launch(x, out)
        return
    key = (tuple(x.shape), x.dtype)
    graph = _GRAPHS.get(key)
    if graph is None:
        _launch(x, out)  # compile outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            _launch(x, out)
        _GRAPHS[key] = graph
    graph.replay()
