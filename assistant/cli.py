"""The ``assistant`` command: ingest, add, zotero, mcp, stats, reset, search, ask, chat, eval, users.

``--user NAME`` runs a command as that account sees the index (its private library and the
shared one); without it, as the operator, who sees everything.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import Any
from collections.abc import Iterator
from dataclasses import asdict

from pydantic import ValidationError

from assistant import Answer, Assistant, GenerationError, QuestionError, evaluation
from assistant.answer.model_files import ModelFileError
from assistant.answer.pipeline import Event
from assistant.index.embedders import EmbeddingError
from assistant.index.store import StoreError
from assistant.remote.http import ServiceError
from assistant.types import Retrieved, findings_lines


def _ingest(assistant: Assistant, args: argparse.Namespace) -> int:
    report = assistant.ingest(args.paths, progress=not args.quiet, library=args.library)
    print(report.summary())
    print(f"{'you now see' if assistant.settings.user else 'index now holds'} {sum(assistant.sources().values())} abstracts")
    return 0


def _add(assistant: Assistant, args: argparse.Namespace) -> int:
    searches = [(where, query) for where, query in (("arxiv", args.arxiv), ("pubmed", args.pubmed)) if query]
    if not args.ids and not searches:
        raise ValueError("give identifiers (a DOI, an arXiv ID, a PubMed ID) or a search (--arxiv, --pubmed)")
    reports = [assistant.add(args.ids, library=args.library)] if args.ids else []
    reports += [assistant.add_search(where, query, args.max, library=args.library) for where, query in searches]
    for report in reports:
        print(report.summary())
    return 0


def _zotero(assistant: Assistant, args: argparse.Namespace) -> int:
    print(assistant.zotero_sync().summary())
    return 0


def _mcp(assistant: Assistant, args: argparse.Namespace) -> int:
    from assistant import mcp_server  # the MCP SDK loads only for this command

    mcp_server.serve(assistant, args.http, args.host)
    return 0


def _password(args: argparse.Namespace) -> str:
    """A new password: the first line of stdin when it is piped, else typed twice."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    password = getpass.getpass(f"password for {args.name}: ")
    if getpass.getpass("again: ") != password:
        raise ValueError("the two passwords differ; nothing changed")
    return password


def _users(assistant: Assistant, args: argparse.Namespace) -> int:
    accounts = assistant.accounts
    if args.action == "list":
        for user in accounts.users():
            print(f"{user.name}{'  (admin)' if user.admin else ''}")
        return 0
    if args.name is None:
        raise ValueError(f"`users {args.action}` needs a user name")
    if args.action == "add":
        accounts.add(args.name, _password(args), admin=args.admin)
        print(f"added {'admin ' if args.admin else ''}{args.name}; the app now asks everyone to log in")
    elif args.action == "token":
        print(accounts.new_token(args.name))
        print(f"the MCP server's token for {args.name}, shown once (a new one replaces it)", file=sys.stderr)
    elif args.action == "passwd":
        accounts.set_password(args.name, _password(args))
        print(f"changed the password of {args.name}")
    else:
        removed = assistant.remove_user(args.name)
        print(f"removed {args.name} and the {removed} abstracts of their private library")
    return 0


def _stats(assistant: Assistant, args: argparse.Namespace) -> int:
    stats = assistant.stats()
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    print(f"{stats['abstracts']} abstracts, {stats['chunks']} chunks")
    print(f"index: {stats['location']} (collection {stats['collection']})")
    print(f"embedder: {stats['embedder']}")
    for source, count in stats["by_source"].items():
        print(f"  {count:6d}  {source}")
    return 0


def _reset(assistant: Assistant, args: argparse.Namespace) -> int:
    user = assistant.settings.user
    what = f"{user}'s private library" if user else f"every abstract in {assistant.stats()['location']}"
    if not args.yes:
        answer = input(f"Delete {what}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return 1
    assistant.reset()
    print(f"deleted {what}")
    return 0


def _search(assistant: Assistant, args: argparse.Namespace) -> int:
    filters = {"sources": args.source or (), "year_min": args.year_min, "year_max": args.year_max}
    hits = assistant.search(args.question, k=args.k, filters=filters)
    if args.json:
        print(json.dumps([asdict(h) for h in hits], indent=2, default=str))
        return 0
    for hit in hits:
        link = f"  {hit.abstract.url}" if hit.abstract.url else ""
        print(f"{hit.rank:2d}. [{hit.score:.3f}] {hit.abstract.title}{link}")
        print(f"    {hit.passage[:200]}")
    return 0


def _print_answer(events: Iterator[Event]) -> Answer:
    """Print the relevant papers' findings as soon as search returns, stream the model's words
    to the terminal, then the verified answer and references."""
    answer = None
    for item in events:
        if isinstance(item, Retrieved) and item.findings:
            print("Findings (quoted from each paper):", *findings_lines(item.findings), "", sep="\n", flush=True)
        elif isinstance(item, str):
            print(item, end="", flush=True)
        elif isinstance(item, Answer):
            answer = item
    if answer is None:
        raise RuntimeError("the answer stream ended without an answer")
    print()
    if answer.abstained or answer.text != answer.raw_text:
        print(f"\n{answer.text}")
    verdict = answer.verdict_line()
    if verdict:
        print(f"  {verdict}")
    for line in answer.references():
        print(f"  {line}")
    if answer.evidence:
        print("  Closest evidence found (not an answer):")
    for citation in answer.evidence:
        print(f"  [{citation.number}] {citation.abstract.title}")
        for sentence in citation.evidence:
            print(f"      > {sentence}")
    for claim in answer.withheld:
        print(f"  (verdict left out, this model's yes/no verdicts are not reliable: {claim})")
    for sentence in answer.unsupported:
        print(f"  (not supported by any source: {sentence})")
    for claim in answer.set_aside:
        print(f"  (left out, only a source ranked well below the best supports it: {claim})")
    for sentence in answer.declined:
        print(f"  (dropped, it says the sources do not answer: {sentence})")
    if not answer.abstained:
        print(f"  [{answer.model}; first token {answer.timings.get('first_token', 0):.1f} s, "
              f"total {answer.timings['total']:.1f} s]")
    return answer


REFERENCE_FORMATS = {"bibtex": Answer.to_bibtex, "ris": Answer.to_ris, "csljson": Answer.to_csl_json}


def _ask(assistant: Assistant, args: argparse.Namespace) -> int:
    if args.format == "text":
        _print_answer(assistant.ask_events(args.question))
        return 0
    answer = assistant.ask(args.question)
    if args.format == "markdown":
        print(answer.to_markdown(), end="")
    elif args.format in REFERENCE_FORMATS:
        print(REFERENCE_FORMATS[args.format](answer), end="")
        if not answer.citations:
            print(f"no references: {answer.text}", file=sys.stderr)
    else:
        print(json.dumps(asdict(answer), indent=2, default=str))
    return 0


def _chat(assistant: Assistant, args: argparse.Namespace) -> int:
    conversation = assistant.chat()
    print(f"Chat with {sum(assistant.sources().values())} abstracts. An empty line ends the chat.")
    while True:
        try:
            question = input("\n> ")
        except EOFError:
            return 0
        if not question.strip():
            return 0
        try:
            _print_answer(conversation.ask_events(question))
        except QuestionError as error:
            print(f"error: {error}")


def _eval_answers(assistant: Assistant, args: argparse.Namespace) -> int:
    result = evaluation.evaluate_answers(assistant, args.qa, args.limit, progress=not args.json)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"\nmodel: {result['model']}")
    print(f"{'type':13s} {'n':>3s} {'cite P':>7s} {'cite R':>7s} {'facts':>6s} {'abstain':>8s} "
          f"{'1st p50':>8s} {'1st p95':>8s} {'tot p50':>8s} {'tot p95':>8s}")

    def fmt(value: float | None) -> str:
        return f"{value:7.3f}" if value is not None else "      -"

    for name, row in result["by_type"].items():
        print(f"{name:13s} {row['questions']:3d} {fmt(row['citation_precision'])} {fmt(row['citation_recall'])} "
              f"{fmt(row['must_contain'])[1:]} {row['abstention_accuracy']:8.3f} "
              f"{row['first_token']['p50_ms'] / 1000:7.1f}s {row['first_token']['p95_ms'] / 1000:7.1f}s "
              f"{row['total']['p50_ms'] / 1000:7.1f}s {row['total']['p95_ms'] / 1000:7.1f}s")
    if result["failures"]:
        print(f"\n{len(result['failures'])} questions missed:")
    for failure in result["failures"]:
        print(f"  {failure['id']} ({failure['type']}): {'; '.join(failure['problems'])}")
    return 0


def _print_qa_table(result: dict) -> None:
    print(f"{'type':14s} {'n':>3s} {'R@1':>6s} {'R@5':>6s} {'R@10':>6s} {'MRR':>6s}")
    for name, row in result["by_type"].items():
        print(f"{name:14s} {row['questions']:3d} {row['recall@1']:6.3f} {row['recall@5']:6.3f} "
              f"{row['recall@10']:6.3f} {row['mrr']:6.3f}")
    if result["gold_not_in_index"]:
        print(f"gold abstracts not in the index for: {', '.join(result['gold_not_in_index'])}")
    print(f"questions without gold abstracts (not in recall/MRR): {result['skipped_without_gold']}")
    signal = result["abstention_signal"]
    if signal["questions"]["unanswerable"] and signal["questions"]["answerable"]:
        auc = signal["auc"]
        ranges = signal["relevance_range"]
        print(f"abstention signal, answerable vs unanswerable: AUC relevance {auc['relevance']:.3f} "
              f"(dense {auc['dense']:.3f}, BM25 {auc['lexical']:.3f}); relevance answerable "
              f"{ranges['answerable'][0]:.2f}-{ranges['answerable'][1]:.2f}, unanswerable "
              f"{ranges['unanswerable'][0]:.2f}-{ranges['unanswerable'][1]:.2f}")
        print(f"gate min_relevance {signal['threshold']}: abstains on {signal['gated']['unanswerable']:.0%} "
              f"of unanswerable, {signal['gated']['answerable']:.0%} of answerable questions")
    latency = result["latency"]
    print(f"search latency p50 {latency['p50_ms']:.1f} ms, p95 {latency['p95_ms']:.1f} ms")


def _eval_retrieval(assistant: Assistant, args: argparse.Namespace) -> int:
    if bool(args.qa) == bool(args.beir):
        print("error: give either --qa FILE or --beir DIR --qrels FILE", file=sys.stderr)
        return 2
    if args.qa:
        result = evaluation.evaluate_qa(assistant, args.qa)
    else:
        if not args.qrels:
            print("error: --beir needs --qrels FILE", file=sys.stderr)
            return 2
        result = evaluation.evaluate_beir(assistant, args.beir, args.qrels)
    if args.json:
        print(json.dumps(result, indent=2))
    elif args.qa:
        _print_qa_table(result)
    else:
        print(f"{result['queries']} queries over {result['abstracts']} abstracts: "
              f"nDCG@10 {result['ndcg@10']:.4f}, recall@100 {result['recall@100']:.4f}")
        latency = result["latency"]
        print(f"search latency p50 {latency['p50_ms']:.1f} ms, p95 {latency['p95_ms']:.1f} ms")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (one sub-command per operation)."""
    parser = argparse.ArgumentParser(
        prog="assistant", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    user_help = "act as this account: its private library and the shared one (default: the operator, who sees all)"
    parser.add_argument("--user", metavar="NAME", help=user_help)
    as_user = argparse.ArgumentParser(add_help=False)  # --user after the command works too
    as_user.add_argument("--user", metavar="NAME", default=argparse.SUPPRESS, help=user_help)
    commands = parser.add_subparsers(dest="command", required=True)
    _library_commands(commands, as_user)
    _question_commands(commands, as_user)
    _service_commands(commands, as_user)
    return parser


def _library_commands(commands: Any, as_user: argparse.ArgumentParser) -> None:
    """What fills and empties the index: ingest, add, zotero, stats, reset."""
    ingest = commands.add_parser("ingest", parents=[as_user], help="index abstracts from files or folders")
    ingest.add_argument(
        "paths", nargs="+", help="files or folders: Daily Papers .txt, .jsonl/.json (records, CSL JSON, OpenAlex), "
        ".csv/.tsv, .bib, .ris, PubMed .nbib/.txt (MEDLINE) and .xml")
    ingest.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    ingest.add_argument(
        "--library", choices=("private", "shared"),
        help="where the papers go: with --user, private by default (shared: admins only); else shared",
    )
    ingest.set_defaults(run=_ingest)

    add = commands.add_parser(
        "add", parents=[as_user], help="add papers by DOI, arXiv ID or PubMed ID, or by an arXiv or PubMed search",
        description="Fetches each paper's record (OpenAlex, Crossref, arXiv, PubMed E-utilities; no key needed) and "
        "indexes it. Papers already held are not fetched again.",
    )
    add.add_argument("ids", nargs="*", metavar="ID",
                     help="10.1038/nature14539, doi:…, a doi.org link, arXiv:1706.03762, an arxiv.org link, PMID:31452104")
    add.add_argument("--arxiv", metavar="QUERY", help="add what an arXiv search for QUERY finds")
    add.add_argument("--pubmed", metavar="QUERY", help="add what a PubMed search for QUERY finds")
    add.add_argument("--max", type=int, default=10, help="papers a search adds at most (default 10)")
    add.add_argument("--library", choices=("private", "shared"), help="as for ingest")
    add.set_defaults(run=_add)

    zotero_ = commands.add_parser(
        "zotero", parents=[as_user], help="sync a Zotero library (ASSISTANT_ZOTERO_* settings): only what changed",
        description="A group library goes to the shared library; a user's library to --user's private one.",
    )
    zotero_.add_argument("action", choices=("sync",))
    zotero_.set_defaults(run=_zotero)

    stats = commands.add_parser("stats", parents=[as_user], help="what the index holds")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(run=_stats)

    reset = commands.add_parser(
        "reset", parents=[as_user], help="delete everything in the index (with --user: that user's private library)"
    )
    reset.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    reset.set_defaults(run=_reset)


def _question_commands(commands: Any, as_user: argparse.ArgumentParser) -> None:
    """What asks the index: search, ask, chat, eval."""
    search = commands.add_parser("search", parents=[as_user], help="find the abstracts that match a question")
    search.add_argument("question")
    search.add_argument("-k", type=int, default=10, help="number of abstracts (default 10)")
    search.add_argument("--source", action="append", help="only this source file (repeatable)")
    search.add_argument("--year-min", type=int, help="only abstracts from this year on")
    search.add_argument("--year-max", type=int, help="only abstracts up to this year")
    search.add_argument("--json", action="store_true")
    search.set_defaults(run=_search)

    ask = commands.add_parser("ask", parents=[as_user], help="answer a question with citations (streams)")
    ask.add_argument("question")
    ask.add_argument(
        "--format",
        choices=("text", "markdown", "json", *REFERENCE_FORMATS),
        default="text",
        help="text: streamed, with references (default); markdown: the answer and a linked reference list; "
        "json: the whole Answer; bibtex, ris, csljson: the cited abstracts as references (one entry each) "
        "for a reference manager",
    )
    ask.set_defaults(run=_ask)

    chat = commands.add_parser("chat", parents=[as_user], help="a multi-turn conversation in the terminal")
    chat.set_defaults(run=_chat)

    evaluate = commands.add_parser("eval", help="measure retrieval or answer quality")
    kinds = evaluate.add_subparsers(dest="kind", required=True)
    retrieval = kinds.add_parser("retrieval", help="recall/MRR on a QA file, or nDCG on a BEIR folder")
    retrieval.add_argument("--qa", help="questions with gold abstracts (JSONL, as eval/dev.jsonl)")
    retrieval.add_argument("--beir", help="BEIR folder (corpus.jsonl, queries.jsonl); indexed apart")
    retrieval.add_argument("--qrels", help="BEIR qrels TSV (query-id, corpus-id, score)")
    retrieval.add_argument("--json", action="store_true")
    retrieval.set_defaults(run=_eval_retrieval)
    answers = kinds.add_parser("answers", help="citation precision/recall, facts, abstention, latency")
    answers.add_argument("--qa", required=True, help="questions with gold abstracts (JSONL)")
    answers.add_argument("--limit", type=int, help="only the first N questions")
    answers.add_argument("--json", action="store_true")
    answers.set_defaults(run=_eval_answers)


def _service_commands(commands: Any, as_user: argparse.ArgumentParser) -> None:
    """Serving others: the MCP server and the accounts."""
    mcp = commands.add_parser(
        "mcp", parents=[as_user], help="serve the library to agents over MCP (stdio, or HTTP with --http)",
        description="Tools: search, ask, add, libraries. Over HTTP with accounts, each user calls with their own "
        "token (assistant users token NAME) and sees their private library and the shared one.",
    )
    mcp.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port (endpoint /mcp)")
    mcp.add_argument("--host", default="127.0.0.1", help="address to listen on with --http (default 127.0.0.1)")
    mcp.set_defaults(run=_mcp)

    users = commands.add_parser(
        "users", help="accounts: once one exists, the app asks everyone to log in, and each user has a private library"
    )
    users.add_argument("action", choices=("add", "list", "remove", "passwd", "token"))
    users.add_argument("name", nargs="?", help="the user (add, remove, passwd, token: a new MCP token)")
    users.add_argument("--admin", action="store_true", help="add: may add papers to the shared library")
    users.set_defaults(run=_users)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``assistant`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(Assistant(**({"user": args.user} if args.user else {})), args)
    except (QuestionError, StoreError, EmbeddingError, GenerationError, ModelFileError,
            ServiceError, ValidationError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
