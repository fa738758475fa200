"""The app in a subprocess, and a page of it in Debian's headless Chromium driven by playwright:
shared by the browser tests and benchmarks/serving.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import free_port, wait_until_up

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update"]


def start_app(
    data_dir: Path, log: Path, headers: dict[str, str] | None = None, **settings: str
) -> tuple[subprocess.Popen, str]:
    """``python app.py`` on a free port with this data dir and these ASSISTANT_* settings
    (``headers``: what a request needs to be answered, such as a proxy's login header)."""
    port = free_port()
    env = {**os.environ, "ASSISTANT_DATA_DIR": str(data_dir), "ASSISTANT_APP_PORT": str(port),
           **{f"ASSISTANT_{k.upper()}": v for k, v in settings.items()}}
    process = subprocess.Popen([sys.executable, str(ROOT / "app.py")], env=env, cwd=ROOT,
                               stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    wait_until_up(url, process, 300, headers)
    return process, url


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(timeout=30)


# Installed in the page before a question is sent: timestamps (performance.now, ms) of the
# Enter key, of the sources panel first listing retrieved abstracts, of the findings table in
# the answer's place, and of the answer's first text (outside that table).
MARK_TIMES = """(answersBefore) => {
  const marks = window.__marks = {};
  document.querySelector('#question textarea').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && marks.enter === undefined) marks.enter = e.timeStamp;
  });
  new MutationObserver(() => {
    const now = performance.now();
    if (marks.sources === undefined && document.querySelector('#sources .retrieved-note')) marks.sources = now;
    const bots = document.querySelectorAll('#chat [data-testid="bot"]');
    const last = bots.length > answersBefore ? bots[bots.length - 1] : null;
    if (marks.findings === undefined && last && last.querySelector('table.findings')) marks.findings = now;
    let text = '';
    if (last) {
      const copy = last.cloneNode(true);
      copy.querySelectorAll('table.findings, .reading').forEach((node) => node.remove());
      text = copy.innerText.trim();
    }
    if (marks.first_text === undefined && text && !/^Reading \\d+ abstracts/.test(text)) marks.first_text = now;
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
}"""


class Watched:
    """A page of the app, with the requests it made outside localhost and the dialogs it opened."""

    def __init__(self, browser: Any, url: str, **page_options: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000}, **page_options)
        self.outside: list[str] = []
        self.dialogs: list[str] = []
        self.marks: dict[str, float] = {}
        self.page.on("request", self._request)
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.goto(url)

    def _request(self, request: Any) -> None:
        if not request.url.startswith(("http://127.0.0.1", "data:", "blob:")):
            self.outside.append(request.url)

    def ask(self, question: str, timeout_s: float = 180) -> list[str]:
        """Type a question, press Enter and wait until the sources panel shows the final
        answer's sources; return the successive texts of the answer seen on the way.
        ``marks`` then holds, in ms after Enter, when the retrieved sources and the
        answer's first text appeared."""
        page = self.page
        bot, panel = page.locator('#chat [data-testid="bot"]'), page.locator("#sources")
        answers_before, panel_before = bot.count(), panel.inner_html()
        page.evaluate(MARK_TIMES, answers_before)
        page.locator("#question textarea").fill(question)
        page.locator("#question textarea").press("Enter")
        seen: list[str] = []
        deadline = time.monotonic() + timeout_s
        while True:
            if bot.count() > answers_before:
                text = bot.last.inner_text()
                if text and (not seen or seen[-1] != text):
                    seen.append(text)
            html = panel.inner_html()
            if (seen and html != panel_before and "retrieved-note" not in html
                    and panel.locator(".source, .abstained").count()):
                seen.append(bot.last.inner_text())
                marks = page.evaluate("window.__marks")
                self.marks = {k: v - marks["enter"] for k, v in marks.items() if k != "enter"}
                return seen
            assert time.monotonic() < deadline, f"no answer within {timeout_s} s; seen: {seen}"
            time.sleep(0.1)
