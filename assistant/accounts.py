"""Accounts: who may log in to the app, and whose private library is whose.

Users live in ``users.json`` in the data directory (readable by its owner only): each name
with an Argon2id hash of its password (argon2-cffi, its recommended parameters: salted, slow
to brute-force), whether it is an admin, and the SHA-256 of its API token if it has one (the
MCP server's login: a random 256-bit token needs no slow hash). The file is written aside and renamed into place
under a lock, so a crash never leaves half of it. With no users the product is single-user,
as before: no login, one library. Wrong passwords are counted per name and per client address
in ``login_failures.json`` beside it, written the same way (`LoginGuard`), so a restart
forgets none.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from filelock import FileLock

NAME = re.compile(r"[a-z][a-z0-9_.-]{0,31}")
MIN_PASSWORD = 8
FORGET_AFTER_S = 24 * 3600
_HASHER = PasswordHasher()
# Verified against when the name is unknown, so that a wrong name takes as long as a wrong password.
_DECOY = _HASHER.hash("not a password anyone has")


class AccountError(ValueError):
    """An account operation cannot be done (unknown or existing name, weak password, ...)."""


@dataclass(frozen=True)
class User:
    """One account: its name and whether it is an admin (may add to the shared library)."""

    name: str
    admin: bool = False


class _JsonFile:
    """A JSON object in a file readable by its owner only, written aside and renamed into
    place; ``lock`` (a file lock beside it) is held around a read-change-write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = FileLock(path.with_name(path.name + ".lock"))

    def read(self) -> dict[str, Any]:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}

    def write(self, records: dict[str, Any]) -> None:
        staging = self.path.with_suffix(".json.new")
        descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(records, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(staging, self.path)


class Accounts:
    """The accounts of one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._file = _JsonFile(data_dir / "users.json")

    @property
    def path(self) -> Path:
        """The accounts file."""
        return self._file.path

    def users(self) -> list[User]:
        """Every account, by name."""
        return [User(name, bool(record.get("admin"))) for name, record in sorted(self._file.read().items())]

    def enabled(self) -> bool:
        """Whether any account exists (then the app asks everyone to log in)."""
        return bool(self._file.read())

    def get(self, name: str) -> User | None:
        """The account of this name, if there is one."""
        record = self._file.read().get(name)
        return None if record is None else User(name, bool(record.get("admin")))

    def require(self, name: str) -> User:
        """The account of this name, or an `AccountError` saying how to add it."""
        user = self.get(name)
        if user is None:
            raise AccountError(f"there is no user {name!r} in {self.data_dir}; add one with `assistant users add {name}`")
        return user

    def add(self, name: str, password: str, admin: bool = False) -> User:
        """Create an account."""
        if not NAME.fullmatch(name):
            raise AccountError(
                f"{name!r} is not a valid user name: use 1-32 lower-case letters, digits, '.', '_' or '-', "
                "starting with a letter"
            )
        hashed = _HASHER.hash(_checked(password))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self._file.lock:
            records = self._file.read()
            if name in records:
                raise AccountError(f"user {name!r} exists already; change the password with `assistant users passwd {name}`")
            records[name] = {"hash": hashed, "admin": admin}
            self._file.write(records)
        return User(name, admin)

    def set_password(self, name: str, password: str) -> None:
        """Replace an account's password."""
        hashed = _HASHER.hash(_checked(password))
        with self._file.lock:
            records = self._file.read()
            if name not in records:
                raise AccountError(f"there is no user {name!r}")
            records[name]["hash"] = hashed
            self._file.write(records)

    def remove(self, name: str) -> None:
        """Delete an account (its private library is removed by `Assistant.remove_user`)."""
        with self._file.lock:
            records = self._file.read()
            if records.pop(name, None) is None:
                raise AccountError(f"there is no user {name!r}")
            self._file.write(records)

    def new_token(self, name: str) -> str:
        """A new API token for this account, replacing (revoking) its previous one; only its
        hash is kept, so it is shown once."""
        token = f"aa_{secrets.token_urlsafe(32)}"
        with self._file.lock:
            records = self._file.read()
            if name not in records:
                raise AccountError(f"there is no user {name!r}")
            records[name]["token"] = _token_hash(token)
            self._file.write(records)
        return token

    def user_by_token(self, token: str) -> User | None:
        """The account whose API token this is, if any."""
        wanted = _token_hash(token)
        for name, record in self._file.read().items():
            if isinstance(record.get("token"), str) and hmac.compare_digest(record["token"], wanted):
                return User(name, bool(record.get("admin")))
        return None

    def verify(self, name: str, password: str) -> bool:
        """Whether this name and password log in (as slow for an unknown name as for a known one)."""
        record = self._file.read().get(name)
        try:
            return _HASHER.verify(str(record["hash"]) if record else _DECOY, password) and record is not None
        except (VerificationError, InvalidHashError):
            return False


class LoginGuard:
    """The app's login check: `Accounts.verify`, refusing a name for ``lock_seconds`` after
    ``attempts`` wrong passwords in a row, and a client address (``address()``, the one the
    current login comes from; None where unknown) for ``address_lock_seconds`` after
    ``address_attempts``: guessing one name costs minutes per handful of tries, and trying many
    names from one address is bounded too. A refused try costs no Argon2 hash, and the counts
    live in ``login_failures.json`` in the data directory, so a restart forgets none (a count
    whose last wrong password is ``FORGET_AFTER_S`` old, and whose lock is over, is dropped)."""

    def __init__(
        self, accounts: Accounts, attempts: int = 5, lock_seconds: float = 60.0, address_attempts: int = 20,
        address_lock_seconds: float = 900.0, address: Callable[[], str | None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.accounts, self.address, self.clock = accounts, address, clock
        self.limits = {"name": (attempts, lock_seconds), "address": (address_attempts, address_lock_seconds)}
        self._file = _JsonFile(accounts.data_dir / "login_failures.json")

    def __call__(self, name: str, password: str) -> bool:
        keys = {"name": f"name:{name}"}
        if (address := self.address()) is not None:
            keys["address"] = f"address:{address}"
        with self._file.lock:
            failures = self._file.read()
        if any(failures.get(key, (0, 0.0, 0.0))[1] > self.clock() for key in keys.values()):
            return False
        verified = self.accounts.verify(name, password)
        with self._file.lock:
            failures, now = self._file.read(), self.clock()
            for kind, key in keys.items():
                if verified:
                    failures.pop(key, None)
                    continue
                limit, seconds = self.limits[kind]
                count = failures.get(key, (0, 0.0, 0.0))[0] + 1
                failures[key] = (0, now + seconds, now) if count >= limit else (count, 0.0, now)
            self._file.write({key: entry for key, entry in failures.items()
                              if entry[1] > now or now - entry[2] < FORGET_AFTER_S})
        return verified


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _checked(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"the password is too short: use at least {MIN_PASSWORD} characters")
    return password
