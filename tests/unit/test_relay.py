"""The relay's pure parts: where it reads and writes (config.relay_ends), verdicts, NATS words."""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dbt_oml.config import RelayEnds, load_settings, relay_ends
from dbt_oml.errors import ConfigError
from dbt_oml.relay.verdicts import Action, header_value, read_event, verdicts_of
from dbt_oml.transports.jetstream.connection import subject_matches

pytest.importorskip("nats", reason="needs dbt-oml[nats]")

OM_ENV = {"OM_HOST": "https://om:8585", "OM_JWT_TOKEN": "t0ken"}


def _ends(monkeypatch: pytest.MonkeyPatch, cwd: Path, env: dict[str, str]) -> RelayEnds:
    """relay_ends as `dbt-oml relay` computes them in `cwd` with `env` (the process env)."""
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(cwd / "home"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings(cli={}, environ=env, cwd=cwd, home=cwd / "home")
    return relay_ends(settings)


class TestRelayEnds:
    def test_openlineage_variables(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        env = {
            "OPENLINEAGE__TRANSPORT__TYPE": "jetstream",
            "OPENLINEAGE__TRANSPORT__SERVERS": "nats://n:4222",
            "OPENLINEAGE__TRANSPORT__CONNECT_TIMEOUT": "1.5",
            **OM_ENV,
        }
        ends = _ends(monkeypatch, tmp_path, env)
        assert ends.jetstream.config == {
            "type": "jetstream",
            "servers": "nats://n:4222",
            "connect_timeout": 1.5,
        }
        assert ends.jetstream.source == "OPENLINEAGE__TRANSPORT__* variables"
        assert ends.openmetadata.config["url"] == "https://om:8585"
        assert ends.openmetadata.source == "OM_* variables"

    def test_openlineage_yml_in_the_working_directory(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        (tmp_path / "openlineage.yml").write_text("transport: {type: jetstream, subject: a.b}\n")
        ends = _ends(monkeypatch, tmp_path, OM_ENV)
        assert ends.jetstream.config == {"type": "jetstream", "subject": "a.b"}
        assert ends.jetstream.source == f"{tmp_path / 'openlineage.yml'} transport:"

    def test_the_file_wins_over_the_variables_as_for_the_client(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        conf = tmp_path / "elsewhere.yml"
        conf.write_text("transport: {type: jetstream, subject: from.file}\n")
        env = {
            "OPENLINEAGE_CONFIG": str(conf),
            "OPENLINEAGE__TRANSPORT__SUBJECT": "from.env",
            "OPENLINEAGE__TRANSPORT__STREAM": "S",
            **OM_ENV,
        }
        ends = _ends(monkeypatch, tmp_path, env)
        assert ends.jetstream.config == {"type": "jetstream", "subject": "from.file", "stream": "S"}
        assert ends.jetstream.source == f"{conf} transport: + OPENLINEAGE__TRANSPORT__* variables"

    def test_a_jetstream_inside_a_composite_transport(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        doc = {
            "transport": {
                "type": "composite",
                "transports": {"file": {"type": "file"}, "nats": {"type": "jetstream"}},
            }
        }
        (tmp_path / "openlineage.yml").write_text(json.dumps(doc))
        assert _ends(monkeypatch, tmp_path, OM_ENV).jetstream.config == {"type": "jetstream"}

    def test_dbt_oml_yml_wins_as_for_the_producer(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        (tmp_path / "dbt-oml.yml").write_text("transport: {type: jetstream, subject: dbt.oml}\n")
        env = {"OPENLINEAGE__TRANSPORT__TYPE": "jetstream", **OM_ENV}
        ends = _ends(monkeypatch, tmp_path, env)
        assert ends.jetstream.config["subject"] == "dbt.oml"
        assert ends.jetstream.source == f"{tmp_path / 'dbt-oml.yml'} transport:"

    def test_nothing_configured_names_what_was_looked_at(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        with pytest.raises(ConfigError, match="nothing to read from") as caught:
            _ends(monkeypatch, tmp_path, OM_ENV)
        assert caught.value.source == "no dbt-oml.yml"
        assert "OPENLINEAGE__TRANSPORT__TYPE=jetstream" in caught.value.hint

    def test_another_producer_transport_is_named_with_its_source(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        (tmp_path / "openlineage.yml").write_text("transport: {type: http, url: http://x}\n")
        with pytest.raises(ConfigError) as caught:
            _ends(monkeypatch, tmp_path, OM_ENV)
        assert caught.value.reason == (
            f"nothing to read from: the producer's transport is 'http' "
            f"({tmp_path / 'openlineage.yml'} transport:)"
        )

    def test_no_openmetadata(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        env = {"OPENLINEAGE__TRANSPORT__TYPE": "jetstream"}
        with pytest.raises(ConfigError, match="nowhere to write") as caught:
            _ends(monkeypatch, tmp_path, env)
        assert caught.value.key == "relay.openmetadata"


class TestRelaySettings:
    @pytest.mark.parametrize(
        ("relay", "key"),
        [
            ({"batch": 0}, "relay.batch"),
            ({"ack_wait": "soon"}, "relay.ack_wait"),
            ({"jetstream": "nats://x"}, "relay.jetstream"),
            ({"dead_letters": "x"}, "relay.dead_letters"),
        ],
    )
    def test_bad_values_are_refused_with_their_key(
        self, tmp_path: Path, relay: dict[str, object], key: str
    ) -> None:
        (tmp_path / "dbt-oml.yml").write_text(json.dumps({"relay": relay}))
        with pytest.raises(ConfigError) as caught:
            load_settings(cli={}, environ={}, cwd=tmp_path)
        assert caught.value.key == key

    def test_numbers_are_parsed(self, tmp_path: Path) -> None:
        (tmp_path / "dbt-oml.yml").write_text('relay: {batch: "20", ack_wait: 5}\n')
        settings = load_settings(cli={}, environ={}, cwd=tmp_path)
        assert settings.relay == {"batch": 20, "ack_wait": 5.0}


@dataclass
class Answer:
    delivered: list[int] = field(default_factory=list)
    kept: list[tuple[int, str]] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)


def test_verdicts_follow_the_transports_outcome() -> None:
    answer = Answer(delivered=[0], kept=[(1, "input not resolvable yet")], rejected=[(2, "bad")])
    verdicts = verdicts_of(answer, 4)
    assert [v.action for v in verdicts] == [Action.ACK, Action.RETRY, Action.DEAD, Action.RETRY]
    assert verdicts[1].reason == "input not resolvable yet"
    assert verdicts[2].reason == "OpenMetadata rejected it: bad"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"{not json", "not JSON (JSONDecodeError: "),
        (b'{"a": "\xc3\x28"}', "not JSON (UnicodeDecodeError: "),
        (b"[" * 100_000, "not JSON (RecursionError: "),
        (b'"x"', "not an OpenLineage RunEvent: not a JSON object"),
        (b'{"eventTime": "yesterday"}', "not an OpenLineage RunEvent: eventTime 'yesterday'"),
    ],
    ids=["torn", "binary", "deep", "string", "time"],
)
def test_read_event_says_why_a_message_is_not_an_event(data: bytes, reason: str) -> None:
    event, problem = read_event(data)
    assert event is None
    assert problem.startswith(reason)


def test_header_value_is_one_redacted_ascii_line() -> None:
    value = header_value("POST https://bot:pw@om:8585 failed:\n 500 \u2013 " + "x" * 2000)
    assert value.startswith("POST https://***@om:8585 failed: 500 \\u2013 x")
    assert len(value) == 1000


@pytest.mark.parametrize(
    ("pattern", "subject", "matches"),
    [
        ("ol.events", "ol.events", True),
        ("ol.events", "ol.events.dead", False),
        ("ol.events.>", "ol.events.dead", True),
        ("ol.events.>", "ol.events", False),
        ("ol.*.dead", "ol.events.dead", True),
        ("ol.*", "ol.events.dead", False),
        (">", "anything.at.all", True),
    ],
)
def test_subject_matches(pattern: str, subject: str, matches: bool) -> None:
    assert subject_matches(pattern, subject) is matches


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (ConnectionRefusedError(111, "Connect call failed"), "connection refused"),
        (socket.gaierror(-2, "Name or service not known"), "cannot resolve the host name"),
        (asyncio.TimeoutError(), "no answer within 3 s"),
        (ConnectionResetError(104, "reset"), "the connection was reset"),
    ],
)
def test_describe_names_the_cause(error: BaseException, words: str) -> None:
    from nats.errors import ConnectionClosedError, Error

    from dbt_oml.transports.jetstream.connection import describe

    assert describe(error, timeout=3).startswith(words)
    assert describe(ConnectionClosedError(), timeout=3) == "the connection was lost"
    assert describe(Error("nats: 'Authorization Violation'"), timeout=3).startswith(
        "not authorized"
    )
