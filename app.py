"""The chat app: ``python app.py`` serves the assistant at http://127.0.0.1:7860.

A chat with streamed answers and follow-up questions, and beside it the sources of the
latest answer: each cited abstract with its number, title, link and supporting
sentences; retrieved but uncited abstracts below. All abstract text and model output is
HTML-escaped before display. The ``/chat`` endpoint takes just the message, so
``gradio_client.Client(url).predict(message, api_name="/chat")`` works.
"""

from __future__ import annotations

import html
from collections.abc import Iterator

import gradio as gr

from assistant import Answer, Assistant, Chat, GenerationError, QuestionError, default_assistant

Turn = dict[str, str]


def _link(url: str | None, text: str) -> str:
    if not url or not url.startswith(("http://", "https://")):
        return html.escape(text)
    return f'<a href="{html.escape(url, quote=True)}" target="_blank" rel="noopener">{html.escape(text)}</a>'


def sources_html(answer: Answer | None) -> str:
    """The sources panel for an answer (escaped HTML)."""
    if answer is None:
        return "<p><em>Sources of the latest answer appear here.</em></p>"
    parts = []
    if answer.abstained:
        parts.append("<p><strong>No answer:</strong> the indexed abstracts do not answer this question.</p>")
    for citation in answer.citations:
        evidence = "".join(f"<li><mark>{html.escape(e)}</mark></li>" for e in citation.evidence)
        parts.append(
            f'<div class="source" id="source-{citation.number}"><p><strong>[{citation.number}]</strong> '
            f"{_link(citation.abstract.url, citation.abstract.title)}</p><ul>{evidence}</ul></div>"
        )
    cited = {c.abstract.id for c in answer.citations}
    others = [h for h in answer.sources if h.abstract.id not in cited]
    if others:
        items = "".join(f"<li>{_link(h.abstract.url, h.abstract.title)}</li>" for h in others)
        parts.append(f"<details><summary>Retrieved, not cited ({len(others)})</summary><ul>{items}</ul></details>")
    return "\n".join(parts)


def answer_markdown(answer: Answer) -> str:
    """The answer as shown in the chat: escaped text, unsupported sentences marked."""
    text = html.escape(answer.text)
    if answer.unsupported:
        marked = "".join(f"\n- ⚠ {html.escape(s)}" for s in answer.unsupported)
        text += f"\n\n*Not supported by any source:*{marked}"
    return text


def build(assistant: Assistant) -> gr.Blocks:
    """The app's layout and events."""
    stats = assistant.stats()
    with gr.Blocks(title="Abstract Assistant") as demo:
        gr.Markdown(
            f"**Abstract Assistant** · {stats['abstracts']} abstracts indexed · "
            f"answers by `{html.escape(assistant.settings.llm_model)}` ({assistant.settings.llm_backend})"
        )
        conversation = gr.State(None)
        with gr.Row():
            with gr.Column(scale=3):
                chatbot = gr.Chatbot(height=520, sanitize_html=True, label="Chat")
                message = gr.Textbox(placeholder="Ask about the indexed abstracts…", label="Question")
                new_chat = gr.Button("New chat")
            with gr.Column(scale=2):
                sources = gr.HTML(sources_html(None), label="Sources")

        def respond(text: str, chat: Chat | None) -> Iterator[tuple[str, list[Turn], str, Chat]]:
            chat = chat or assistant.chat()
            shown: list[Turn] = [
                turn for q, a in chat.history for turn in (
                    {"role": "user", "content": html.escape(q)},
                    {"role": "assistant", "content": answer_markdown(a)},
                )
            ]
            shown += [{"role": "user", "content": html.escape(text)}, {"role": "assistant", "content": ""}]
            try:
                for item in chat.ask_stream(text):
                    if isinstance(item, Answer):
                        shown[-1]["content"] = answer_markdown(item)
                        yield "", shown, sources_html(item), chat
                    else:
                        shown[-1]["content"] += html.escape(item)
                        yield "", shown, gr.skip(), chat
            except (QuestionError, GenerationError) as error:
                shown[-1]["content"] = f"⚠ {html.escape(str(error))}"
                yield "", shown, gr.skip(), chat

        message.submit(
            respond, [message, conversation], [message, chatbot, sources, conversation],
            api_name="chat", concurrency_limit=1,
        )
        new_chat.click(lambda: (None, [], sources_html(None)), None, [conversation, chatbot, sources], api_name=False)
    return demo


def main() -> None:
    """Open the default assistant (ingesting the bundled corpus if the index is empty) and serve."""
    assistant = default_assistant()
    report = assistant.ensure_corpus()
    if report:
        print(report.summary())
    demo = build(assistant)
    demo.queue(default_concurrency_limit=8).launch(
        server_name=assistant.settings.app_host, server_port=assistant.settings.app_port
    )


if __name__ == "__main__":
    main()
