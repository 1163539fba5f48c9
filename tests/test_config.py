"""`Settings` (`config.py`): read from LEDGER_* variables, each bound and each pair of exclusive options checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from project_ledger.cli.early_options import is_on, named_data_dir, options
from project_ledger.config import ProjectPaths, Settings, resolve_paths


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only what each test sets: none of the LEDGER_* or QDRANT_* variables of the shell running the tests."""
    for name in list(os.environ):
        if name.startswith(("LEDGER_", "QDRANT_")):
            monkeypatch.delenv(name)


def refusal(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    """The validation error `Settings()` raises with these variables set."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError) as refused:
        Settings()
    return str(refused.value)


def test_every_option_comes_from_its_ledger_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LEDGER_ROOT", str(tmp_path))
    monkeypatch.setenv("LEDGER_MAX_K", "10")
    monkeypatch.setenv("LEDGER_MIN_RELEVANCE", "0.5")
    monkeypatch.setenv("LEDGER_WATCH", "false")
    monkeypatch.setenv("LEDGER_CAPTURE", "0")
    monkeypatch.setenv("LEDGER_NO_SUCH_OPTION", "ignored")
    settings = Settings()
    assert (settings.root, settings.max_k, settings.min_relevance, settings.watch, settings.capture) == (
        tmp_path,
        10,
        0.5,
        False,
        False,
    )


def test_defaults_need_no_environment() -> None:
    settings = Settings()
    assert settings.root is None and settings.data_dir is None and not settings.uses_qdrant_server
    assert (settings.max_k, settings.max_result_tokens, settings.instructions_tokens) == (100, 25_000, 2000)
    assert settings.http_token() is None


@pytest.mark.parametrize("name", ["QDRANT_URL", "LEDGER_QDRANT_URL"])
def test_the_qdrant_server_takes_qdrants_own_variable_names_too(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "http://qdrant.internal:6333")
    monkeypatch.setenv("QDRANT_API_KEY", "key-1")
    settings = Settings()
    assert (settings.qdrant_url, settings.qdrant_api_key, settings.uses_qdrant_server) == (
        "http://qdrant.internal:6333",
        "key-1",
        True,
    )


def test_a_qdrant_server_and_a_local_mode_folder_exclude_each_other(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    message = refusal(monkeypatch, QDRANT_URL="http://qdrant.internal:6333", LEDGER_QDRANT_PATH=str(tmp_path))
    assert "set either QDRANT_URL (a server) or LEDGER_QDRANT_PATH (local mode), not both" in message


def test_a_token_and_a_token_file_exclude_each_other(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    message = refusal(monkeypatch, LEDGER_AUTH_TOKEN="t" * 32, LEDGER_AUTH_TOKEN_FILE=str(tmp_path / "token"))
    assert "set either LEDGER_AUTH_TOKEN or LEDGER_AUTH_TOKEN_FILE, not both" in message


def test_the_http_token_comes_from_the_setting_or_from_its_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LEDGER_AUTH_TOKEN", "a" * 32)
    assert Settings().http_token() == "a" * 32
    assert "a" * 32 not in repr(Settings())  # a secret, not printed

    monkeypatch.delenv("LEDGER_AUTH_TOKEN")
    token_file = tmp_path / "token"
    token_file.write_text("  b" + "c" * 31 + "\n")
    monkeypatch.setenv("LEDGER_AUTH_TOKEN_FILE", str(token_file))
    assert Settings().http_token() == "b" + "c" * 31
    token_file.write_text("\n")
    assert Settings().http_token() is None
    token_file.unlink()
    with pytest.raises(ValueError, match=f"cannot read LEDGER_AUTH_TOKEN_FILE {token_file}: No such file"):
        Settings().http_token()


@pytest.mark.parametrize(
    ("name", "value", "complaint"),
    [
        ("LEDGER_MAX_K", "101", "less than or equal to 100"),
        ("LEDGER_MAX_K", "0", "greater than or equal to 1"),
        ("LEDGER_MAX_TAGS", "0", "greater than or equal to 1"),
        ("LEDGER_MAX_LABEL_CHARS", "7", "greater than or equal to 8"),
        ("LEDGER_MAX_RESULT_TOKENS", "999", "greater than or equal to 1000"),
        ("LEDGER_INSTRUCTIONS_TOKENS", "99", "greater than or equal to 100"),
        ("LEDGER_MAX_TEXT_BYTES", "0", "greater than or equal to 1"),
        ("LEDGER_JOURNAL_WAIT_SECONDS", "0", "greater than 0"),
        ("LEDGER_JOURNAL_WAIT_SECONDS", "601", "less than or equal to 600"),
        ("LEDGER_MIN_RELEVANCE", "1.5", "less than or equal to 1"),
        ("LEDGER_MIN_RELEVANCE", "-0.1", "greater than or equal to 0"),
        ("LEDGER_RECENCY_HALF_LIFE_DAYS", "-1", "greater than or equal to 0"),
        ("LEDGER_NEAR_DUPLICATE_OVERLAP", "0", "greater than 0"),
        ("LEDGER_RESTATED_CONTEXT_OVERLAP", "1.1", "less than or equal to 1"),
        ("LEDGER_SAMPLING_TIMEOUT_SECONDS", "0", "greater than 0"),
        ("LEDGER_SAMPLING_CHUNK_TOKENS", "499", "greater than or equal to 500"),
        ("LEDGER_SAMPLING_MAX_REQUESTS", "0", "greater than or equal to 1"),
        ("LEDGER_COMPACT_SESSION_TURNS", "1", "greater than or equal to 2"),
        ("LEDGER_EMBED_THREADS", "0", "greater than or equal to 1"),
        ("LEDGER_CODE_MAX_FILE_BYTES", "0", "greater than or equal to 1"),
        ("LEDGER_CODE_PARSE_WORKERS", "0", "greater than or equal to 1"),
        ("LEDGER_QDRANT_SHARD_NUMBER", "0", "greater than or equal to 1"),
        ("LEDGER_QDRANT_REPLICATION_FACTOR", "0", "greater than or equal to 1"),
        ("LEDGER_QDRANT_WRITE_CONSISTENCY_FACTOR", "0", "greater than or equal to 1"),
        ("LEDGER_QDRANT_COLLECTION_PREFIX", "team/prod", "should match pattern"),
        ("LEDGER_QDRANT_COLLECTION", "-app", "should match pattern"),
        ("LEDGER_QDRANT_COLLECTION", "a" * 101, "should match pattern"),
        ("LEDGER_MAX_K", "eight", "valid integer"),
        ("LEDGER_WATCH", "sometimes", "valid boolean"),
    ],
)
def test_each_bound_is_checked(monkeypatch: pytest.MonkeyPatch, name: str, value: str, complaint: str) -> None:
    message = refusal(monkeypatch, **{name: value})
    assert name.removeprefix("LEDGER_").lower() in message and complaint in message


def test_collections_are_named_per_project_and_kind_unless_a_base_name_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = ProjectPaths(root=Path("/work/Billing Service"), data_dir=Path("/work/Billing Service/.ledger"))
    monkeypatch.setenv("LEDGER_QDRANT_COLLECTION_PREFIX", "team")
    assert Settings().collection_name(paths, "0123abcd", "memories") == "team-billing-service-0123abcd-memories"
    monkeypatch.setenv("LEDGER_QDRANT_COLLECTION", "billing")
    assert Settings().collection_name(paths, "0123abcd", "code") == "billing-code"


def test_the_data_directory_defaults_to_ledger_under_the_root(tmp_path: Path) -> None:
    assert resolve_paths(Settings(root=tmp_path), Path("/")) == ProjectPaths(tmp_path, tmp_path / ".ledger")
    assert resolve_paths(Settings(root=tmp_path, data_dir=tmp_path / "data"), Path("/")).data_dir == tmp_path / "data"
    (tmp_path / "app" / ".git").mkdir(parents=True)
    (tmp_path / "app" / "src").mkdir()
    assert resolve_paths(Settings(), tmp_path / "app" / "src").root == tmp_path / "app"  # the git top-level


@pytest.mark.parametrize(
    "value", ["1", "on", "t", "true", "y", "yes", "TRUE", " Yes ", "0", "off", "f", "false", "n", "no", "", "sometimes"]
)
def test_the_hooks_and_the_proxy_read_a_bool_setting_as_the_settings_do(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """`cli/early_options.is_on` runs before pydantic is loaded; it must say true exactly when the settings would."""
    monkeypatch.setenv("LEDGER_SHARED_SERVER", value)
    try:
        expected = Settings().shared_server
    except ValidationError:
        expected = False  # refused by the settings: the full CLI says so, and nothing is shared
    assert is_on({"ledger_shared_server": value}, "LEDGER_SHARED_SERVER") is expected


def test_the_early_options_are_read_as_the_cli_reads_them(tmp_path: Path) -> None:
    names = ("--root", "--data-dir")
    assert options(["--root", "/r", "--data-dir=/d"], names) == {"--root": "/r", "--data-dir": "/d"}
    assert options(["--root=/a", "--root", "/b"], names) == {"--root": "/b"}  # the last one, as click takes it
    assert options([], names) == {}
    for args in (["--help"], ["--root"], ["x"], ["--root", "/r", "--port", "1"]):
        assert options(args, names) is None, args  # the full CLI answers these
    assert named_data_dir({}, None) is None
    assert named_data_dir({"LEDGER_ROOT": str(tmp_path)}) == tmp_path / ".ledger"
    assert named_data_dir({"ledger_data_dir": str(tmp_path / "d"), "LEDGER_ROOT": "/r"}) == tmp_path / "d"
    assert named_data_dir({"LEDGER_DATA_DIR": "/x"}, str(tmp_path / "o")) == tmp_path / "o"
    assert named_data_dir({"LEDGER_ROOT": "/r"}, None, tmp_path) == tmp_path / ".ledger"  # --root over LEDGER_ROOT
