"""Settings: environment prefix, .env file, keyword overrides, validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from assistant import Assistant
from assistant.settings import Settings


def test_environment_variables_use_the_assistant_prefix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ASSISTANT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ASSISTANT_CHUNK_SIZE", "200")
    settings = Settings()
    assert settings.data_dir == tmp_path and settings.chunk_size == 200


def test_dotenv_file_in_the_working_directory_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ASSISTANT_DATA_DIR")
    (tmp_path / ".env").write_text("ASSISTANT_TOP_K=7\nASSISTANT_COLLECTION=papers\n")
    settings = Settings()
    assert (settings.top_k, settings.collection) == (7, "papers")


def test_keywords_override_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ASSISTANT_TOP_K", "9")
    assistant = Assistant(data_dir=tmp_path, top_k=3)
    assert assistant.settings.top_k == 3 and assistant.settings.data_dir == tmp_path
    derived = Assistant(assistant.settings, collection="other")
    assert derived.settings.top_k == 3 and derived.settings.collection == "other"


def test_invalid_combinations_are_rejected() -> None:
    with pytest.raises(ValidationError, match="chroma_host and chroma_port"):
        Settings(chroma_host="127.0.0.1")
    with pytest.raises(ValidationError, match="chunk_overlap"):
        Settings(chunk_size=16, chunk_overlap=16)
    with pytest.raises(ValidationError):
        Settings(embed_backend="word2vec")


def test_every_field_has_a_description() -> None:
    missing = [name for name, field in Settings.model_fields.items() if not field.description]
    assert missing == []
