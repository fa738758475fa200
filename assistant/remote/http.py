"""A polite HTTP client for public scholarly services.

It names itself and a contact address (User-Agent), keeps each service's published request
rate, retries what a server asks to be retried (429 and 503 after their ``Retry-After``, other
5xx and dropped connections with doubling backoff), and turns every failure into a
`ServiceError` whose message says what to do.
"""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

import httpx

RETRY_STATUSES = {429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Service:
    """One web service: its name for messages, where it is, the setting that moves it, and the
    least time between two requests that its terms ask for."""

    name: str
    base_url: str
    setting: str
    min_interval: float


class ServiceError(RuntimeError):
    """A service cannot be reached or keeps failing; the message says what to do."""


class NotFound(LookupError):
    """The service answered that it has no such record (HTTP 404)."""


def retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (a number of seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def _why(error: httpx.TransportError) -> str:
    text = str(error).lower()
    if "name or service not known" in text or "temporary failure in name resolution" in text:
        return "its name does not resolve: is this machine offline?"
    if "refused" in text:
        return "the connection was refused"
    if isinstance(error, httpx.TimeoutException):
        return "it did not answer in time"
    return "the connection failed"


class PoliteClient:
    """GET requests to `Service`s, one at a time per service and no faster than it allows."""

    def __init__(self, user_agent: str, timeout: float = 20.0, retries: int = 3, max_wait: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = httpx.Client(headers={"User-Agent": user_agent}, timeout=timeout, follow_redirects=True)
        self.retries, self.max_wait, self.sleep = retries, max_wait, sleep
        self._last: dict[str, float] = {}
        self._locks: dict[str, threading.Lock] = {}

    def _pace(self, service: Service) -> None:
        """Wait out the service's interval since its last request; other services do not wait."""
        with self._locks.setdefault(service.name, threading.Lock()):
            wait = self._last.get(service.name, -1e9) + service.min_interval - time.monotonic()
            if wait > 0:
                self.sleep(wait)
            self._last[service.name] = time.monotonic()

    def get(self, service: Service, path: str, params: Mapping[str, str | int] | None = None) -> httpx.Response:
        """The 2xx response to ``GET base_url/path``; `NotFound` on 404, `ServiceError` when the
        service cannot be reached or keeps failing after the retries."""
        url = f"{service.base_url.rstrip('/')}/{path.lstrip('/')}"
        attempt = 0
        while True:
            self._pace(service)
            last = attempt == self.retries
            try:
                response = self.client.get(url, params=params)
            except httpx.TransportError as error:
                if last or isinstance(error, httpx.ConnectError):  # refused or offline: asking again will not help
                    raise ServiceError(f"cannot reach {service.name} at {service.base_url}: {_why(error)}. Check the "
                                       f"connection and try again, or set {service.setting} to a reachable copy") from None
                self.sleep(2.0 ** attempt)
                attempt += 1
                continue
            if response.status_code == 404:
                raise NotFound(url)
            if response.status_code not in RETRY_STATUSES:
                if response.is_success:
                    return response
                raise ServiceError(f"{service.name} refused the request (HTTP {response.status_code}): "
                                   f"{' '.join(response.text.split())[:200]}")
            wait = retry_after(response.headers.get("Retry-After"))
            if wait is not None and wait > self.max_wait:
                raise ServiceError(f"{service.name} asks to wait {wait:.0f} s before the next request; try again later")
            if last:
                raise ServiceError(f"{service.name} answered HTTP {response.status_code} {self.retries + 1} times: it is "
                                   "busy or down. Try again later")
            self.sleep(wait if wait is not None else 2.0 ** attempt)
            attempt += 1

    def close(self) -> None:
        self.client.close()
