"""Accounts: Argon2id hashes in a private file, names checked, every operation's error says what to do."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from assistant.accounts import AccountError, Accounts, LoginGuard, User


def test_an_account_logs_in_with_its_password_only(tmp_path: Path) -> None:
    accounts = Accounts(tmp_path)
    assert not accounts.enabled() and accounts.users() == []
    accounts.add("alice", "correct horse", admin=True)
    accounts.add("bob", "battery staple")
    assert accounts.enabled() and accounts.users() == [User("alice", True), User("bob", False)]
    assert accounts.verify("alice", "correct horse")
    assert not accounts.verify("alice", "battery staple") and not accounts.verify("alice", "")
    assert not accounts.verify("carol", "correct horse"), "an unknown name never logs in"


def test_passwords_are_stored_as_salted_argon2id_hashes_in_a_file_only_its_owner_reads(tmp_path: Path) -> None:
    accounts = Accounts(tmp_path)
    accounts.add("alice", "same password")
    accounts.add("bob", "same password")
    text = accounts.path.read_text()
    assert "same password" not in text
    records = json.loads(text)
    assert records["alice"]["hash"].startswith("$argon2id$")
    assert records["alice"]["hash"] != records["bob"]["hash"], "salted: equal passwords, different hashes"
    assert stat.S_IMODE(accounts.path.stat().st_mode) == 0o600


def test_changing_a_password_and_removing_an_account(tmp_path: Path) -> None:
    accounts = Accounts(tmp_path)
    accounts.add("alice", "first password")
    accounts.set_password("alice", "second password")
    assert accounts.verify("alice", "second password") and not accounts.verify("alice", "first password")
    accounts.remove("alice")
    assert accounts.get("alice") is None and not accounts.verify("alice", "second password")
    with pytest.raises(AccountError, match="there is no user 'alice'"):
        accounts.remove("alice")


@pytest.mark.parametrize(
    ("name", "password", "message"),
    [
        ("Alice", "long enough", "not a valid user name"),
        ("../etc", "long enough", "not a valid user name"),
        ("a" * 33, "long enough", "not a valid user name"),
        ("alice", "short", "too short: use at least 8 characters"),
    ],
)
def test_bad_names_and_short_passwords_are_refused(tmp_path: Path, name: str, password: str, message: str) -> None:
    with pytest.raises(AccountError, match=message):
        Accounts(tmp_path).add(name, password)
    assert not Accounts(tmp_path).enabled()


def test_an_existing_name_is_not_overwritten(tmp_path: Path) -> None:
    accounts = Accounts(tmp_path)
    accounts.add("alice", "first password")
    with pytest.raises(AccountError, match="exists already; change the password with `assistant users passwd alice`"):
        accounts.add("alice", "other password", admin=True)
    assert accounts.verify("alice", "first password") and not accounts.require("alice").admin


def test_requiring_an_unknown_user_says_how_to_add_one(tmp_path: Path) -> None:
    with pytest.raises(AccountError, match="add one with `assistant users add carol`"):
        Accounts(tmp_path).require("carol")


def test_after_five_wrong_passwords_a_name_is_refused_for_a_minute(tmp_path: Path) -> None:
    accounts, now = Accounts(tmp_path), [1000.0]
    accounts.add("alice", "correct horse")
    accounts.add("bob", "battery staple")
    guard = LoginGuard(accounts, clock=lambda: now[0])
    assert not any(guard("alice", f"guess {n}") for n in range(4))
    assert guard("alice", "correct horse"), "four wrong tries in a row do not lock"
    assert not any(guard("alice", f"guess {n}") for n in range(5))
    assert not guard("alice", "correct horse"), "locked: even the right password is refused"
    assert guard("bob", "battery staple"), "other names are not affected"
    now[0] += 61
    assert guard("alice", "correct horse")


def test_one_address_trying_many_names_is_refused_and_a_restart_forgets_nothing(tmp_path: Path) -> None:
    accounts, now, address = Accounts(tmp_path), [1000.0], ["10.0.0.7"]
    accounts.add("alice", "correct horse")
    guard = LoginGuard(accounts, address_attempts=6, address_lock_seconds=900, address=lambda: address[0],
                       clock=lambda: now[0])
    assert not any(guard(f"user{n}", "guess") for n in range(6)), "six names, one wrong try each"
    assert not guard("alice", "correct horse"), "the address is locked: no name logs in from it"
    address[0] = "10.0.0.8"
    assert guard("alice", "correct horse"), "another address is not affected"
    address[0] = "10.0.0.7"
    restarted = LoginGuard(accounts, address_attempts=6, address=lambda: address[0], clock=lambda: now[0])
    assert not restarted("alice", "correct horse"), "the lock outlives the process"
    now[0] += 901
    assert restarted("alice", "correct horse")
    assert (tmp_path / "login_failures.json").stat().st_mode & 0o077 == 0, "readable by its owner only"


def test_a_names_lock_outlives_a_restart_and_old_counts_are_forgotten(tmp_path: Path) -> None:
    accounts, now = Accounts(tmp_path), [1000.0]
    accounts.add("alice", "correct horse")
    assert not any(LoginGuard(accounts, clock=lambda: now[0])("alice", f"guess {n}") for n in range(5))
    assert not LoginGuard(accounts, clock=lambda: now[0])("alice", "correct horse"), "still locked after a restart"
    LoginGuard(accounts, clock=lambda: now[0])("bob", "a guess")
    now[0] += 2 * 24 * 3600
    LoginGuard(accounts, clock=lambda: now[0])("carol", "a guess")
    assert set(json.loads((tmp_path / "login_failures.json").read_text())) == {"name:carol"}


def test_an_api_token_names_its_user_until_a_new_one_replaces_it(tmp_path: Path) -> None:
    accounts = Accounts(tmp_path)
    accounts.add("ann", "a long password")
    accounts.add("bob", "a long password", admin=True)
    first = accounts.new_token("ann")
    assert accounts.user_by_token(first) == User("ann") and accounts.user_by_token(accounts.new_token("bob")) == User("bob", True)
    assert first not in accounts.path.read_text()  # only its hash is kept
    second = accounts.new_token("ann")
    assert accounts.user_by_token(first) is None and accounts.user_by_token(second) == User("ann")
    assert accounts.user_by_token("aa_guess") is None
    with pytest.raises(AccountError, match="no user 'cat'"):
        accounts.new_token("cat")
