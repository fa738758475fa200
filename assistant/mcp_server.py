"""The library over MCP (Model Context Protocol), for agents such as Claude Desktop or Claude
Code: `serve` runs it over stdio (the client starts it, with the rights of whoever runs it) or
over streamable HTTP.

Tools: ``search``, ``ask`` (the verified answer, each citation with its paper and quoted
sentences, the findings table, and whether it abstained), ``add`` (papers by identifier) and
``libraries``; each returns structured content, capped at ``Settings.mcp_max_result_chars``.
Over HTTP with accounts, every request needs a user's token (`Accounts.new_token`) and is
answered as that user sees the index (their private library and the shared one); who the
user is comes from the token alone, never from the request's arguments.
"""

from __future__ import annotations

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from assistant.api import Assistant, check_question
from assistant.types import SHARED, Abstract, Answer, Hit, IngestReport, private_library

LOOPBACK = ("127.0.0.1", "localhost", "::1")
INSTRUCTIONS = ("A library of scientific paper abstracts. `ask` answers a question from them with numbered "
                "citations whose supporting sentences are quoted and checked; when the abstracts do not answer, "
                "it abstains and says so. `search` lists the abstracts that match a question.")


class Paper(BaseModel):
    """A paper as an agent cites it."""

    id: str
    title: str
    authors: list[str]
    year: int | None
    doi: str | None
    pmid: str | None
    arxiv_id: str | None
    url: str | None


class SearchHit(BaseModel):
    rank: int
    score: float
    paper: Paper
    text: str


class SearchResult(BaseModel):
    hits: list[SearchHit]
    truncated: bool


class CitedPaper(BaseModel):
    number: int
    paper: Paper
    quotes: list[str]


class FindingRow(BaseModel):
    paper: Paper
    kind: str
    section: str | None
    text: str


class AskResult(BaseModel):
    text: str
    abstained: bool
    abstain_reason: str | None
    citations: list[CitedPaper]
    findings: list[FindingRow]
    truncated: bool


class Rejection(BaseModel):
    what: str
    reason: str


class AddResult(BaseModel):
    added: int
    duplicates: int
    rejected: list[Rejection]


class Library(BaseModel):
    name: str
    abstracts: int


class LibrariesResult(BaseModel):
    user: str | None
    libraries: list[Library]


def paper(abstract: Abstract) -> Paper:
    return Paper(id=abstract.id, title=abstract.title, authors=list(abstract.authors), year=abstract.year,
                 doi=abstract.doi, pmid=abstract.pmid, arxiv_id=abstract.arxiv_id, url=abstract.url)


def search_result(hits: list[Hit], cap: int) -> SearchResult:
    """The hits, each abstract's text shortened so that all of them fit in ``cap`` characters."""
    room = max(200, cap // max(1, len(hits)) - 600)
    rows = [SearchHit(rank=h.rank, score=round(h.score, 4), paper=paper(h.abstract), text=h.abstract.text[:room])
            for h in hits]
    shortened = any(len(h.abstract.text) > room for h in hits)
    while rows and len(SearchResult(hits=rows, truncated=True).model_dump_json()) > cap:
        rows.pop()
        shortened = True
    return SearchResult(hits=rows, truncated=shortened)


def ask_result(answer: Answer, cap: int) -> AskResult:
    """The answer with its citations and findings; findings are dropped from the end (then
    citations) until it fits in ``cap`` characters."""
    result = AskResult(
        text=answer.text, abstained=answer.abstained, abstain_reason=answer.abstain_reason,
        citations=[CitedPaper(number=c.number, paper=paper(c.abstract), quotes=list(c.evidence)) for c in answer.citations],
        findings=[FindingRow(paper=paper(f.abstract), kind=f.kind, section=f.section, text=f.text) for f in answer.findings],
        truncated=False,
    )
    while len(result.model_dump_json()) > cap and (result.findings or result.citations):
        (result.findings or result.citations).pop()
        result.truncated = True
    if len(result.model_dump_json()) > cap:
        result.text, result.truncated = result.text[: cap // 2], True
    return result


def add_result(report: IngestReport) -> AddResult:
    return AddResult(added=report.added, duplicates=report.duplicates,
                     rejected=[Rejection(what=r.source, reason=r.reason) for r in report.rejected])


class AccountTokens:
    """The MCP SDK's token check, by the accounts' API tokens: the token names the user."""

    def __init__(self, assistant: Assistant) -> None:
        self.accounts = assistant.accounts

    async def verify_token(self, token: str) -> AccessToken | None:
        user = self.accounts.user_by_token(token)
        return None if user is None else AccessToken(token=token, client_id=user.name, scopes=[], subject=user.name)


def build(assistant: Assistant, url: str | None = None) -> MCPServer:
    """The MCP server over this assistant. ``url`` (where it is served over HTTP) turns on the
    token check when accounts exist; without it (stdio), every call is ``assistant``'s view."""
    guarded = url is not None and assistant.accounts.enabled()
    server: MCPServer = MCPServer(
        "abstract-assistant", instructions=INSTRUCTIONS,
        token_verifier=AccountTokens(assistant) if guarded else None,
        auth=AuthSettings(issuer_url=url, resource_server_url=f"{url}/mcp") if guarded else None,
    )
    cap = assistant.settings.mcp_max_result_chars

    def view() -> Assistant:
        """The view the calling user has: the token's account over HTTP, else the server's own."""
        if not guarded:
            return assistant
        token = get_access_token()
        if token is None:  # the SDK refuses such requests before they get here
            raise PermissionError("a token is needed")
        return assistant.as_user(token.client_id)

    @server.tool(description="Find the abstracts that best match a question (no model involved).")
    def search(question: str, k: int = 10) -> SearchResult:
        return search_result(view().search(check_question(question), k=max(1, min(k, 50))), cap)

    @server.tool(description="Answer a question from the library with cited, quoted, checked sources; "
                             "abstains when the abstracts do not answer it.")
    def ask(question: str) -> AskResult:
        return ask_result(view().ask(check_question(question)), cap)

    @server.tool(description="Add papers by DOI, arXiv ID or PubMed ID (to your private library when you "
                             "have one).")
    def add(ids: list[str]) -> AddResult:
        return add_result(view().add(ids))

    @server.tool(description="The libraries you can search, with how many abstracts each holds.")
    def libraries() -> LibrariesResult:
        current = view()
        user = current.settings.user
        names = [SHARED] + ([private_library(user)] if user else [])
        return LibrariesResult(user=user, libraries=[
            Library(name=SHARED if name == SHARED else "private", abstracts=current.store.library_count(name))
            for name in names])

    return server


def serve(assistant: Assistant, port: int | None = None, host: str = "127.0.0.1") -> None:
    """Serve over stdio, or over streamable HTTP on ``host:port`` (the endpoint is ``/mcp``).
    HTTP beyond this machine needs accounts, so that every caller has a token."""
    if port is not None and host not in LOOPBACK and not assistant.accounts.enabled():
        raise ValueError(f"serving {host}:{port} without accounts would let anyone who reaches it read and add "
                         "papers: add an account first (assistant users add NAME; then assistant users token NAME), "
                         "or serve on 127.0.0.1")
    if port is None:
        build(assistant).run("stdio")
    else:
        build(assistant, f"http://{host}:{port}").run("streamable-http", host=host, port=port)


__all__ = ["build", "serve"]
