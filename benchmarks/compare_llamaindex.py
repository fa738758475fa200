"""This project side by side with a plain LlamaIndex pipeline: same corpus, same embedder,
same local LLM, same machine, one run.

    python benchmarks/compare_llamaindex.py [--qa tests/data/dev.jsonl] [--scifact ../shared/data/scifact]
                                            [--limit N] [--skip-scifact] [--skip-answers]

(a) plain LlamaIndex, its defaults: `VectorStoreIndex` on `ChromaVectorStore` (SentenceSplitter
    1024/200 chunks, embed batches of 10), `CitationQueryEngine.from_args(index, streaming=True)`
    (top 2 chunks, 512-token citation chunks, its own prompt, compact synthesis).
(b) this project: `Assistant` (128-token chunks, hybrid dense + BM25, best-sentence context,
    citations verified in code, abstention).
Both use all-MiniLM-L6-v2 (ONNX, wrapped as a LlamaIndex `BaseEmbedding`) and the local
Qwen2.5-Coder-1.5B (our `Generator`, wrapped as a LlamaIndex `CustomLLM`), 200 answer tokens.

The plain pipeline has no abstention: an answer counts as one when it says the sources do
not answer (the same phrases our pipeline recognises). Its [n] refer to its source nodes.
Ingest is timed whole on both sides (this project's lexical index included), on the bundled
corpus and on SciFact's 5,183 abstracts, each into a fresh index; the floor is the embedder
alone on the texts each side embeds (the same batches, no chunking, writing or BM25), and
the table says how many word-piece tokens those texts hold: the plain pipeline cuts each
abstract at the embedder's 256 tokens, this project embeds all of it, in 128-token chunks.
Prints one table with ratios (this project / plain; for latencies plain / this project,
so > 1 means this project is faster). Never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any
from pathlib import Path

import chromadb
import pytrec_eval
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.query_engine import CitationQueryEngine
from llama_index.core.schema import MetadataMode
from llama_index.vector_stores.chroma import ChromaVectorStore
from pydantic import PrivateAttr

from assistant import Abstract, Answer, Assistant, Citation, corpus, evaluation
from assistant.answer.citations import _MARKER, parse_marker
from assistant.answer.generators import Generator, Usage
from assistant.answer.refusals import is_refusal
from assistant.index.chunking import chunk, embedding_text
from assistant.index.embedders import Embedder
from assistant.settings import BUNDLED_CORPUS

import results

ROOT = Path(__file__).resolve().parent.parent


class SameEmbedder(BaseEmbedding):
    """Our embedder as a LlamaIndex embedding model."""

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(model_name=embedder.model_id)
        self._embedder = embedder

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embedder.embed([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.embed(texts).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class SameLLM(CustomLLM):
    """Our generator as a LlamaIndex LLM (each prompt sent as one user message)."""

    context_window: int = 4096
    num_output: int = 200
    _generator: Generator = PrivateAttr()

    def __init__(self, generator: Generator, context_window: int, num_output: int) -> None:
        super().__init__(context_window=context_window, num_output=num_output)
        self._generator = generator

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, num_output=self.num_output,
                           model_name=self._generator.model_name)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text="".join(self._deltas(prompt)))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = ""
        for delta in self._deltas(prompt):
            text += delta
            yield CompletionResponse(text=text, delta=delta)

    def _deltas(self, prompt: str) -> Iterator[str]:
        return self._generator.stream([{"role": "user", "content": prompt}], self.num_output, Usage())


def documents(abstracts: list[Abstract]) -> list[Document]:
    """One LlamaIndex document per abstract (its id kept; a real title as metadata)."""
    return [Document(text=a.text, id_=a.id, metadata={"title": a.title} if a.titled else {}) for a in abstracts]


def unique_abstracts(path: Path) -> list[Abstract]:
    """The abstracts of a corpus file, each id once (as an ingest keeps them)."""
    return list({a.id: a for a in corpus.load([path]) if isinstance(a, Abstract)}.values())


def plain_index(abstracts: list[Abstract], directory: Path, embed_model: BaseEmbedding) -> tuple[VectorStoreIndex, float]:
    """A default VectorStoreIndex on embedded Chroma; returns it and the seconds it took."""
    collection = chromadb.PersistentClient(path=str(directory)).get_or_create_collection("plain")
    storage = StorageContext.from_defaults(vector_store=ChromaVectorStore(chroma_collection=collection))
    started = time.perf_counter()
    index = VectorStoreIndex.from_documents(documents(abstracts), storage_context=storage, embed_model=embed_model)
    return index, time.perf_counter() - started


def plain_answer(engine: CitationQueryEngine, by_id: dict[str, Abstract], model: str, question: str) -> Answer:
    """Ask the plain pipeline and express its response as our `Answer` for scoring."""
    started = time.perf_counter()
    response = engine.query(question)
    timings: dict[str, float] = {}
    pieces = []
    for delta in response.response_gen:
        timings.setdefault("first_token", time.perf_counter() - started)
        pieces.append(delta)
    timings["total"] = time.perf_counter() - started
    text = "".join(pieces).strip()
    cited: list[Abstract] = []
    for marker in _MARKER.finditer(text):
        for number in parse_marker(marker.group(1)):
            if 1 <= number <= len(response.source_nodes):
                abstract = by_id.get(response.source_nodes[number - 1].node.ref_doc_id or "")
                if abstract and abstract not in cited:
                    cited.append(abstract)
    return Answer(text=text, citations=[Citation(i, a) for i, a in enumerate(cited, start=1)],
                  abstained=not text or is_refusal(text), question=question, model=model,
                  timings=timings)


def plain_scifact(abstracts: list[Abstract], queries: dict[str, str], qrels: dict[str, dict[str, int]],
                  directory: Path, embed_model: BaseEmbedding) -> tuple[float, float]:
    """The plain pipeline on SciFact: seconds to index it, and nDCG@10 of its retriever
    (abstracts ranked by their best chunk)."""
    index, seconds = plain_index(abstracts, directory, embed_model)
    retriever = index.as_retriever(similarity_top_k=100)
    run = {}
    for query_id, text in queries.items():
        ranked: dict[str, float] = {}
        for hit in retriever.retrieve(text):
            ranked.setdefault(hit.node.ref_doc_id, float(100 - len(ranked)))
        run[query_id] = ranked
    scores = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in queries}, {"ndcg_cut.10"}).evaluate(run)
    return seconds, sum(s["ndcg_cut_10"] for s in scores.values()) / len(scores)


def embedded_texts(abstracts: list[Abstract], settings: Any) -> tuple[list[str], list[str]]:
    """What each side embeds for these abstracts: the plain pipeline's nodes (title metadata
    and text, as LlamaIndex formats them for embedding), and this project's chunks."""
    nodes = SentenceSplitter().get_nodes_from_documents(documents(abstracts))
    plain = [node.get_content(metadata_mode=MetadataMode.EMBED) for node in nodes]
    ours = [embedding_text(a, c) for a in abstracts for c in chunk(a, settings.chunk_size, settings.chunk_overlap)]
    return plain, ours


def ingest_rows(name: str, abstracts: list[Abstract], plain_seconds: float, our_seconds: float,
                embedder: Embedder, settings: Any) -> list[tuple[str, float | None, float | None, str]]:
    """Ingest rate of both sides, the embedder alone on what each embeds (the floor), and how
    many texts and word-piece tokens that is."""
    rows: list[tuple[str, float | None, float | None, str]] = [
        (f"{name} ingest, abstracts/s", len(abstracts) / plain_seconds, len(abstracts) / our_seconds, "higher")]
    texts = embedded_texts(abstracts, settings)
    floors = []
    for side in texts:
        started = time.perf_counter()
        embedder.embed(side)
        floors.append(len(abstracts) / (time.perf_counter() - started))
    rows.append((f"{name} embedder alone on what each side embeds (the floor), abstracts/s", *floors, "higher"))
    rows.append((f"{name} share of the floor (ingest / floor)", rows[0][1] / floors[0], rows[0][2] / floors[1], "higher"))
    tokenizer = getattr(embedder, "tokenizer", None)
    if tokenizer is not None:  # it truncates as the embedder does; its padding is not counted
        counts = [sum(sum(e.attention_mask) for e in tokenizer.encode_batch(side)) for side in texts]
        rows.append((f"{name} texts embedded (thousands)", len(texts[0]) / 1000, len(texts[1]) / 1000, "none"))
        rows.append((f"{name} word-piece tokens embedded (millions)", counts[0] / 1e6, counts[1] / 1e6, "none"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qa", type=Path, default=ROOT / "tests/data/dev.jsonl")
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared/data/scifact")
    parser.add_argument("--qrels", type=Path, default=None, help="default: SCIFACT/qrels/train.tsv")
    parser.add_argument("--limit", type=int, default=None, help="answer only the first N questions")
    parser.add_argument("--skip-scifact", action="store_true")
    parser.add_argument("--skip-answers", action="store_true", help="compare ingest and search only")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="compare-"))
    ours = Assistant(data_dir=work / "ours", auto_ingest=False)
    ours.embedder.embed(["warm up"])
    embed_model = SameEmbedder(ours.embedder)
    questions = [item["question"] for item in evaluation.load_qa(args.qa)]
    rows: list[tuple[str, float | None, float | None, str]] = []  # ingest, search, retrieval
    answer_rows: list[tuple[str, float | None, float | None, str]] = []

    unique = unique_abstracts(BUNDLED_CORPUS)
    plain, plain_seconds = plain_index(unique, work / "plain", embed_model)
    started = time.perf_counter()
    ours.ingest([BUNDLED_CORPUS])  # its lexical index included
    rows += ingest_rows("bundled", unique, plain_seconds, time.perf_counter() - started, ours.embedder, ours.settings)

    plain_search = evaluation.time_calls(plain.as_retriever(similarity_top_k=10).retrieve, questions)
    our_search = evaluation.time_calls(lambda q: ours.search(q, k=10), questions)
    for p in ("p50_ms", "p95_ms"):
        rows.append((f"search k=10 {p[:3]}, ms", plain_search[p], our_search[p], "lower"))

    model = ours.generator.model_name if not args.skip_answers else "(not loaded)"
    if not args.skip_answers:
        llm = SameLLM(ours.generator, ours.settings.llm_context_tokens, ours.settings.llm_max_tokens)
        by_id = {a.id: a for a in unique}
        engine = CitationQueryEngine.from_args(plain, llm=llm, streaming=True)
        print("answering with the plain pipeline…", file=sys.stderr)
        plain_eval = evaluation.evaluate_answers(ours, args.qa, args.limit, progress=True,
                                                 answer_with=lambda q: plain_answer(engine, by_id, model, q))
        print("answering with this project…", file=sys.stderr)
        our_eval = evaluation.evaluate_answers(ours, args.qa, args.limit, progress=True)
        p_all, o_all = plain_eval["by_type"]["all"], our_eval["by_type"]["all"]
        for part in ("first_token", "total"):
            for p in ("p50_ms", "p95_ms"):
                answer_rows.append((f"answer {part} {p[:3]}, s", p_all[part][p] / 1000, o_all[part][p] / 1000, "lower"))
        for metric in ("citation_precision", "citation_recall", "must_contain", "abstention_accuracy"):
            answer_rows.append((metric.replace("_", " "), p_all[metric], o_all[metric], "higher"))

    if not args.skip_scifact:
        qrels_path = args.qrels or args.scifact / "qrels/train.tsv"
        qrels = evaluation.read_qrels(qrels_path)
        queries = {q["_id"]: q["text"] for q in map(json.loads, (args.scifact / "queries.jsonl").read_text().splitlines())
                   if q["_id"] in qrels}
        scifact = unique_abstracts(args.scifact / "corpus.jsonl")
        print(f"indexing SciFact ({len(scifact)} abstracts) both ways…", file=sys.stderr)
        plain_seconds, plain_ndcg = plain_scifact(scifact, queries, qrels, work / "plain-scifact", embed_model)
        fresh = Assistant(ours.settings, data_dir=work / "ours-scifact", auto_ingest=False)
        fresh.embedder = ours.embedder
        started = time.perf_counter()
        fresh.ingest([args.scifact / "corpus.jsonl"])
        our_seconds = time.perf_counter() - started
        rows += ingest_rows("SciFact", scifact, plain_seconds, our_seconds, ours.embedder, ours.settings)
        our_ndcg = evaluation.evaluate_beir(ours, args.scifact, qrels_path)["ndcg@10"]
        rows.append(("SciFact train nDCG@10", plain_ndcg, our_ndcg, "higher"))

    print(f"\n{len(unique)} abstracts, {len(questions[: args.limit])} questions, model {model}, "
          f"embedder {ours.embedder.model_id}\n")
    print("| metric | plain LlamaIndex | this project | ratio |\n|---|---|---|---|")
    for name, plain_value, our_value, better in rows + answer_rows:
        ratio = _ratio(plain_value, our_value, better)
        cells = [f"{v:.3f}" if isinstance(v, float) else "–" for v in (plain_value, our_value, ratio)]
        print(f"| {name} | {cells[0]} | {cells[1]} | {cells[2]}{'×' if ratio else ''} |")
    print("\nratio: this project / plain for quality and throughput, plain / this project for latency "
          "(> 1: this project is better)")
    index_table, answer_table = _table(rows), _table(answer_rows)
    ingest = {name.split()[0]: (p, o) for name, p, o, _ in rows if name.endswith("ingest, abstracts/s")}
    summary = "; ".join(f"{corpus_name} {p:.1f} / {o:.1f} ({o / p:.2f}×)" for corpus_name, (p, o) in ingest.items())
    index_table.insert(0, results.row(
        "side_by_side_ingest_both", "Ingest, abstracts/s: plain LlamaIndex / this project (ratio)", summary))
    search = {name.split()[2].rstrip(","): (p, o) for name, p, o, _ in rows if name.startswith("search k=10")}
    index_table.insert(1, results.row(
        "side_by_side_search", "Search k=10, ms: plain LlamaIndex / this project (ratio, > 1: ours faster)",
        "; ".join(f"{stat} {p:.1f} / {o:.1f} ({p / o:.2f}×)" for stat, (p, o) in search.items())))
    note = (f"{len(unique)} abstracts, {len(questions[: args.limit])} questions, model {model}, "
            f"embedder {ours.embedder.model_id}; same embedder and LLM for both.")
    results.save("side_by_side_index", "Side by side with a plain LlamaIndex pipeline: ingest and search",
                 index_table, note=note)
    if not args.skip_answers:
        results.save("side_by_side", "Side by side with a plain LlamaIndex pipeline: answers", answer_table,
                     note=note)


def _table(rows: list[tuple[str, float | None, float | None, str]]) -> list[dict[str, str]]:
    """Result rows (`results.row`): both values and the ratio."""
    table = []
    for name, plain_value, our_value, better in rows:
        ratio = _ratio(plain_value, our_value, better)
        value = f"{plain_value:.3f} / {our_value:.3f}" + (f" ({ratio:.2f}×)" if ratio else "")
        key = {"answer total p50, s": "side_by_side_total", "citation precision": "side_by_side_precision"}.get(name, "")
        table.append(results.row(key, f"{name}: plain LlamaIndex / this project (ratio, > 1: ours better)", value))
    return table


def _ratio(plain_value: float | None, our_value: float | None, better: str) -> float | None:
    """This project against plain, > 1 when this project is better; None where there is no better."""
    if not plain_value or not our_value or better not in ("higher", "lower"):
        return None
    return our_value / plain_value if better == "higher" else plain_value / our_value


if __name__ == "__main__":
    main()
