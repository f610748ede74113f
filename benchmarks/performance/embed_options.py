"""Cheaper embeddings for mining, tried against the shipped one: batch sizes and int8.

    python -m benchmarks.performance.embed_options            # needs onnxruntime, the ONNX export, and
                                                              # `onnx` for the int8 row (quantisation)

Embeds the texts of the first 150 kernels of fla-core (what a mine embeds) with the ONNX
export of the shipped MiniLM: one text per run (what skel does), then 8 and 32 per run,
then with an int8 dynamic quantisation of the same export. Prints milliseconds per text
and the cosine of each variant's vectors to the fp32 one-per-run vectors: mining and
query vectors must agree to 0.999.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path


def _texts(n: int) -> list[str]:
    from skel.kernels.triton import extract_file
    from skel.miner import walk
    from skel.miner.sources import PackageSource

    out: list[str] = []
    for item in PackageSource("fla").items():
        if isinstance(item, walk.SourceFile) and "triton" in item.text:
            try:
                out += [k.text() for k in extract_file(item.text, item.rel)]
            except Exception:  # noqa: BLE001 - a file the extractor refuses is not needed here
                continue
        if len(out) >= n:
            break
    return out[:n]


def _run(model: str, texts: list[str], batch: int):
    import numpy as np
    import onnxruntime as ort  # type: ignore[import-untyped]

    from skel import embed

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    tokenizer = embed._tokenizer(str(embed.model_path()))
    for _, ids, mask in embed._batches(tokenizer, texts[:2], 1):  # warm-up
        session.run(None, {"input_ids": ids, "attention_mask": mask})
    out = np.empty((len(texts), embed.DIM), np.float32)
    t = time.perf_counter()
    for idx, ids, mask in embed._batches(tokenizer, texts, batch):
        out[idx] = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    return out, (time.perf_counter() - t) / len(texts) * 1000


def main() -> None:
    import numpy as np

    from skel import embed
    from skel.tables import table

    export = embed.onnx_export_path()
    if not export.is_file():
        raise SystemExit(f"no ONNX export at {export}: `skel mine` makes one (needs torch and onnx)")
    texts = _texts(150)
    ref, ms = _run(str(export), texts, 1)
    rows = [["fp32, 1 text per run (skel)", f"{ms:.1f}", "1.000000"]]

    def cos(v):
        return float(np.min((v * ref).sum(1) / np.linalg.norm(v, axis=1) / np.linalg.norm(ref, axis=1)))

    for b in (8, 32):
        v, ms = _run(str(export), texts, b)
        rows.append([f"fp32, {b} texts per run", f"{ms:.1f}", f"{cos(v):.6f}"])
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]

        with tempfile.TemporaryDirectory() as tmp:
            q8 = str(Path(tmp) / "int8.onnx")
            quantize_dynamic(str(export), q8, weight_type=QuantType.QInt8)
            v, ms = _run(q8, texts, 1)
            rows.append(["int8 dynamic quantisation, 1 text per run", f"{ms:.1f}", f"{cos(v):.6f}"])
    except ImportError as exc:
        rows.append(["int8 dynamic quantisation", "-", f"not run: {exc}"])
    print(f"{len(texts)} fla-core kernel texts; min cosine to fp32 one-per-run vectors")
    print(table(["variant", "ms per text", "min cosine"], rows))


if __name__ == "__main__":
    main()
