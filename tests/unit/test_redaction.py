"""The one redactor, and every writer that goes through it: a password never leaves the process.

Property-based: passwords are drawn with `@ : / ? # % ;` and spaces, the characters that break
naive URL and key=value parsing.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import string
import tempfile
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from openlineage.client.event_v2 import RunEvent

from dbt_oml.artifacts import RunArtifacts, read_artifacts
from dbt_oml.console import Console
from dbt_oml.delivery.emitter import to_dict
from dbt_oml.delivery.outbox import append_events, append_reason
from dbt_oml.errors import NamespaceError
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.invocation_events import build_events
from dbt_oml.namespaces import CatalogSpec, Namespaces, namespace_for, resolve_namespaces
from dbt_oml.redaction import Redactor, mask, secrets_in, secrets_of
from tests.conftest import MINI
from tests.support.events import STARTED

SPECIAL = "@:/?#%; "
_ALPHABET = string.ascii_letters + string.digits + SPECIAL


#: No deadline (two shared cores make timings noise) and no example database in the checkout.
hostile = settings(deadline=None, database=None)


def _hostile(text: str) -> bool:
    return (
        len({c for c in text if c in SPECIAL}) >= 2
        and sum(c.isalnum() for c in text) >= 4
        and text.strip() == text
    )


#: A password with at least two of `@ : / ? # % ;` and space, and some letters or digits.
passwords = st.text(alphabet=_ALPHABET, min_size=8, max_size=24).filter(_hostile)
#: The same without spaces: what a URL or an unquoted key=value can carry unregistered.
url_passwords = st.text(alphabet=_ALPHABET.replace(" ", ""), min_size=8, max_size=24).filter(
    _hostile
)


def knowing(*secrets: str) -> Redactor:
    """A run's redactor that knows `secrets` (each hypothesis example is a run of its own)."""
    redactor = Redactor()
    redactor.add(*secrets)
    return redactor


def _contexts(pw: str) -> list[str]:
    """Where a password turns up: URLs, DSNs, JSON, dbt and driver error texts."""
    return [
        f"postgresql://etl:{pw}@db.internal:5432/src",
        f"IO Error: Unable to connect: host=127.0.0.1 user=etl passwd={pw} db=crm",
        f"connection to 'host=db password={pw}' failed",
        json.dumps({"password": pw, "host": "db"}),
        f"nats://relay:{quote(pw, safe='')}@nats-1:4222",
        f"Runtime Error\n  {pw}\n",
    ]


# -- the redactor --------------------------------------------------------------------------


@hostile
@given(pw=passwords)
def test_a_registered_password_never_survives(pw: str) -> None:
    redact = knowing(pw)
    for text in _contexts(pw):
        assert pw not in redact(text)
        assert quote(pw, safe="") not in redact(text)


@hostile
@given(pw=url_passwords)
def test_an_unregistered_password_in_a_url_or_dsn_never_survives(pw: str) -> None:
    texts = [
        f"POST https://bot:{pw}@om.example:8585/api/v1/lineage failed",
        f"nats://relay:{pw}@nats-1:4222,nats://nats-2:4222",
        f"host=db user=etl passwd={pw.replace(';', '')} port=3306",
        f"password='{pw}' host=db",
        json.dumps({"jwt_token": pw}),
        f"GET /api?token={quote(pw, safe='')}&x=1",
    ]
    for text in texts:
        secret = pw.replace(";", "") if "passwd=" in text else pw
        assume(secret not in text.replace(secret, "", 1))  # not also part of the rest
        assert secret not in mask(text), text
        assert quote(pw, safe="") not in mask(text)


def test_known_shapes_keep_the_rest_readable() -> None:
    assert mask("nats://u:pw@n1:4222 and https://om:8585/x") == (
        "nats://***@n1:4222 and https://om:8585/x"
    )
    assert mask('{"password": "a b", "user": "x"}') == '{"password": "***", "user": "x"}'
    assert mask("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.x.y") == ("Authorization: Bearer ***")
    assert mask("oauth_token_url=https://idp/token tokens: 5") == (
        "oauth_token_url=https://idp/token tokens: 5"
    )
    assert mask("md:db?motherduck_token=abc123&saas_mode=true") == (
        "md:db?motherduck_token=***&saas_mode=true"
    )


def test_redact_event_masks_error_texts_only() -> None:
    doc = {
        "job": {"name": "warehouse.core.orders.test"},
        "run": {
            "runId": "r",
            "facets": {
                "errorMessage": {"message": "auth test failed", "stackTrace": "test", "x": "test"},
                "dbt_run": {"command": "test"},
            },
        },
    }
    out = knowing("test").event(doc)  # a secret that is also a common word
    assert out["job"] == doc["job"]
    assert out["run"]["facets"]["dbt_run"] == {"command": "test"}
    assert out["run"]["facets"]["errorMessage"] == {
        "message": "auth *** failed",
        "stackTrace": "***",
        "x": "test",
    }
    assert doc["run"]["facets"]["errorMessage"]["message"] == "auth test failed"


def test_secrets_are_found_in_configs_and_connection_strings() -> None:
    target = {
        "type": "duckdb",
        "path": "md:db?motherduck_token=md-tok",
        "attach": [{"path": "host=h user=u passwd='p w;d'", "type": "mysql"}],
        "secrets": [{"type": "s3", "key_id": "AKIA", "secret": "aws-s3cret"}],
        "threads": 2,
        "password": "pg-pass",
        "use_token": True,
    }
    assert sorted(secrets_of(target)) == ["aws-s3cret", "md-tok", "p w;d", "pg-pass"]
    assert secrets_in("mysql://root:p@ss/w@crm:3306/x") == ["p@ss/w"]


# -- namespaces: derived from connection strings, never echoing them ------------------------


@hostile
@given(pw=passwords)
def test_namespaces_never_echo_a_password(pw: str) -> None:
    url = f"postgresql://etl:{pw}@db.internal:6432/src?sslmode=require"
    assert namespace_for(CatalogSpec(alias="dw", type="postgres", path=url)) == (
        "postgres://db.internal:6432"
    )
    dsn = f"host=crm-db port=3307 user=etl password='{pw}' db=crm"
    assert namespace_for(CatalogSpec(alias="crm", type="mysql", path=dsn)) == "mysql://crm-db:3307"
    with pytest.raises(NamespaceError) as err:
        namespace_for(CatalogSpec(alias="dw", type="postgres", path=f"user=etl password='{pw}'"))
    assert err.value.catalog == "dw"
    assert pw not in str(err.value)


def test_a_url_without_a_host_is_a_namespace_error() -> None:
    spec = CatalogSpec(alias="dw", type="postgres", path="postgresql://etl:p@?ss/w@/src")
    with pytest.raises(NamespaceError) as err:
        namespace_for(spec)
    assert "p@ss" not in str(err.value)


def test_the_url_from_the_issue_gives_its_host() -> None:
    spec = CatalogSpec(alias="dw", type="postgres", path="postgresql://etl:s3cr?tPW@host/db")
    assert namespace_for(spec) == "postgres://host:5432"
    resolution = resolve_namespaces([spec], overrides={})
    assert resolution.problems == ()


def _namespace_or_error(spec: CatalogSpec) -> str:
    try:
        return namespace_for(spec)
    except NamespaceError as e:
        return str(e)


@hostile
@given(pw=passwords, junk=st.text(alphabet=_ALPHABET + "=',", max_size=30))
@example(pw="000000:;", junk="s3:")  # a DuckDB path that is no URL: `s3:password=...` (found)
def test_namespace_derivation_raises_only_namespace_errors(pw: str, junk: str) -> None:
    assume(pw not in junk)  # junk stands where a host goes: it is no secret
    for kind in ("postgres", "mysql", "mssql", "duckdb"):
        for path in (
            f"{junk}password={pw}",
            f"postgresql://{junk}:{pw}@{junk}",
            f"s3://u:{pw}@{junk}",
            f"Server={junk};Pwd={pw}",
        ):
            if kind == "duckdb" and not path.startswith(("s3:", "postgresql:")):
                continue  # a DuckDB path names a file: its namespace is that path, by design
            assert pw not in _namespace_or_error(CatalogSpec(alias="c", type=kind, path=path))


# -- writers: outbox reasons and log lines --------------------------------------------------


@hostile
@given(pw=passwords, url_pw=url_passwords)
def test_outbox_reasons_never_hold_a_password(pw: str, url_pw: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "openmetadata.reasons.log"
        reason = f"POST https://bot:{url_pw}@om:8585/api 401; password was {pw}"
        append_reason(log, 3, reason, knowing(pw))
        text = log.read_text()
        assert pw not in text
        assert url_pw not in text
        assert log.stat().st_mode & 0o777 == 0o600


@hostile
@given(pw=passwords)
def test_log_lines_and_tracebacks_never_hold_a_password(pw: str) -> None:
    logger = logging.getLogger("dbt_oml")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    # the run's console, with the run's redactor
    Console(knowing(pw)).log_to_stderr("DEBUG")
    stream = io.StringIO()
    logger.handlers[0].setStream(stream)  # type: ignore[attr-defined]
    try:
        logging.getLogger("dbt_oml.x").warning("connect to %s failed", _contexts(pw)[0])
        try:
            raise ConnectionError(f"refused: passwd={pw}")  # noqa: TRY301 - a logged exception
        except ConnectionError:
            logging.getLogger("dbt_oml.y").exception("delivery failed")
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved
    out = stream.getvalue()
    assert "ConnectionError: refused: passwd=***" in out
    assert pw not in out


# -- events' error facets -------------------------------------------------------------------


@functools.cache
def _mini() -> RunArtifacts:
    return read_artifacts(MINI)


def _built(
    *, error: str | None = None, message: str | None = None, redactor: Redactor | None = None
) -> list[RunEvent]:
    """The mini fixture's events through the event builder: `message` as the failed node's
    text in run_results.json, `error` as the invocation's (dbt's error text)."""
    artifacts = _mini()
    if message is not None and artifacts.run_results is not None:
        results = artifacts.run_results
        changed = [
            replace(r, message=message) if r.status == "error" else r for r in results.results
        ]
        artifacts = replace(artifacts, run_results=replace(results, results=tuple(changed)))
    return build_events(
        artifacts,
        invocation=Invocation(
            invocation_id="i", started_at=STARTED, command="build", project_name="p"
        ),
        namespaces=Namespaces(by_catalog={}, fallback="duckdb://pod"),
        settings=EventSettings(
            producer="https://example.com/p", adapter_version="0", redact=redactor or mask
        ),
        error=error,
    )


def _dbt_errors(pw: str) -> list[str]:
    """dbt's error texts that quote a password: a DSN (PostgreSQL, MySQL) and an attach URL."""
    return [
        f"IO Error: Unable to connect: host=dw user=etl password={pw} dbname=dw",
        f"IO Error: Unable to connect: host=crm user=root passwd={pw} port=3306",
        f"Runtime Error: attach 'postgresql://etl:{pw}@dw.internal:5432/dw' failed",
    ]


def _assert_nowhere(secrets: set[str], texts: list[str], redactor: Redactor) -> None:
    """None of the secrets nor their URL-encoded forms in the error facets the builder makes
    of dbt's texts (a failed node's message, the invocation's error), nor in the outbox."""
    text = "\n".join(texts)  # dbt's messages run over several lines
    events = _built(error=text, message=text, redactor=redactor)
    docs = [to_dict(e) for e in events]
    messages = [
        d["run"]["facets"]["errorMessage"]["message"]
        for d in docs
        if "errorMessage" in d["run"]["facets"]
    ]
    assert len(messages) == 2, messages  # the failed node's and the invocation's
    with tempfile.TemporaryDirectory() as tmp:
        outbox = Path(tmp) / "o.jsonl"
        assert append_events(outbox, docs, redactor) == len(events)
        written = outbox.read_text()
    for secret in secrets | {quote(s, safe="") for s in secrets}:
        assert all(secret not in m for m in messages), (secret, messages)
        assert secret not in written, secret


#: One event build per example (about 0.1 s): enough examples for the shapes, not minutes.
hostile_builds = settings(hostile, max_examples=40)


@hostile_builds
@given(pw=passwords)
def test_a_registered_password_in_dbts_error_text_never_reaches_events(pw: str) -> None:
    """A profile's password (registered as it is read), spaces and all."""
    _assert_nowhere({pw}, _dbt_errors(pw), knowing(pw))


@hostile_builds
@given(pw=url_passwords)
def test_an_unregistered_password_in_dbts_error_text_never_reaches_events(pw: str) -> None:
    """Known only by its shape: `password=`/`passwd=` (up to `;`, which ends a DSN value) or a
    URL's user info."""
    texts = []
    for text in _dbt_errors(pw):
        secret = pw if "://" in text else pw.replace(";", "")
        text = text.replace(pw, secret)  # noqa: PLW2901 - the DSN's own form of it
        assume(secret not in text.replace(secret, "", 1))  # not also part of the rest
        texts.append(text)
    _assert_nowhere({pw, pw.replace(";", "")}, texts, Redactor())


def test_error_facets_are_redacted(mini_target: Path) -> None:
    from openlineage.client.serde import Serde

    results = mini_target / "run_results.json"
    doc = json.loads(results.read_text())
    failed = next(r for r in doc["results"] if r["status"] == "error")
    failed["message"] = "IO Error: Unable to connect: host=db user=root passwd=TOPSECRET db=crm"
    results.write_text(json.dumps(doc))
    events = build_events(
        read_artifacts(mini_target),
        invocation=Invocation(
            invocation_id="i", started_at=STARTED, command="build", project_name="p"
        ),
        namespaces=Namespaces(by_catalog={}, fallback="duckdb://pod"),
        settings=EventSettings(
            producer="https://example.com/p",
            adapter_version="0",
            redact=knowing("pg-R3gistered"),
        ),
        error="Runtime Error: attach 'postgresql://etl:pg-R3gistered@dw/x' failed",
    )
    docs = [Serde.to_dict(e) for e in events]
    messages = [
        d["run"]["facets"]["errorMessage"]["message"] for d in docs if d["eventType"] == "FAIL"
    ]
    assert messages == [
        "IO Error: Unable to connect: host=db user=root passwd=*** db=crm",
        "Runtime Error: attach 'postgresql://***@dw/x' failed",
    ]


# -- the command line -----------------------------------------------------------------------


def test_a_traceback_is_redacted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dbt_oml.cli import ExitCode, main
    from dbt_oml.pipeline import live as pipeline

    def build(*_: object, **__: object) -> None:
        raise RuntimeError("attach 'host=db passwd=cli-SECRET-1' failed; token was tok-SECRET-2")

    monkeypatch.setattr(pipeline, "build", build)
    monkeypatch.setenv("DBT_OML_API_TOKEN", "tok-SECRET-2")
    assert main(["build"]) == ExitCode.BUG
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "RuntimeError: attach 'host=db passwd=***' failed" in err
    assert "SECRET" not in err


def test_emit_with_a_url_password_from_the_issue(tmp_path: Path, mini_target: Path) -> None:
    """`postgresql://etl:s3cr?tPW@host/db` made emit exit 5 printing 's3cr'."""
    import subprocess
    import sys

    from tests.conftest import PROJECT

    (tmp_path / "profiles.yml").write_text(
        "jaffle_oml:\n  target: t\n  outputs:\n    t:\n      type: duckdb\n"
        "      path: w.duckdb\n      attach:\n"
        "        - {path: 'postgresql://etl:s3cr?tPW@host/db', alias: dw, type: postgres}\n"
    )
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "dbt_oml", "--dry-run", "emit", "--project-dir", str(PROJECT)),
            *("--profiles-dir", str(tmp_path), "--target-path", str(mini_target)),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DO_NOT_TRACK": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "dw -> postgres://host:5432" in proc.stderr
    assert "s3cr" not in proc.stdout + proc.stderr


def test_settings_collect_the_secrets_they_see(tmp_path: Path) -> None:
    from dbt_oml.config import load_settings

    (tmp_path / "dbt-oml.yml").write_text(
        "relay:\n  jetstream: {servers: 'nats://relay:n4ts-pw@nats:4222', subject: s}\n"
    )
    environ = {
        "OM_HOST": "https://bot:om-userinfo-pw@om:8585",
        "OM_JWT_TOKEN": "eyJhbGciOi.jwt",
        "DBT_OML_PG_PASSWORD": "p@ss:w/rd?#%; x",
        "DBT_ENV_SECRET_MD": "md-token-1",
        "PWD": "/work/project",
        "HOME": "/root",
    }
    settings = load_settings(cli={}, environ=environ, cwd=tmp_path)
    assert set(settings.secrets) == {
        "om-userinfo-pw",
        "eyJhbGciOi.jwt",
        "p@ss:w/rd?#%; x",
        "md-token-1",
        "n4ts-pw",
    }
    assert "n4ts-pw" not in repr(settings)


# -- an OpenMetadata URL with user info, after a failed delivery -----------------------------


def test_om_url_user_info_never_leaves_a_failed_delivery(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 11, item 8: an OM_HOST with userinfo put the password in the ERROR line and in
    outbox/openmetadata.reasons.log."""
    from openlineage.client import OpenLineageClient

    from dbt_oml.pipeline.sending import delivery_for
    from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport
    from tests.conftest import free_port
    from tests.support.om_transport import FakeTime

    caplog.set_level(logging.DEBUG)
    url = f"https://bot:S3cr%3Ft@127.0.0.1:{free_port()}"  # nothing listens there
    outbox = tmp_path / "outbox"
    config = OpenMetadataConfig.from_dict({"url": url, "outbox_dir": str(outbox)})
    time = FakeTime()
    transport = OpenMetadataTransport(config, sleep=time.sleep, clock=time.clock)
    events = _built(error=f"Runtime Error: POST {url}/api refused")  # dbt's text quoting it
    delivery = delivery_for(
        OpenLineageClient(transport=transport),
        outbox=tmp_path / "kept.jsonl",
        target="om",
        redactor=transport.redactor,
    )
    delivery.send_all(events)
    report = delivery.close()
    assert report.failed == len(events)
    written = {p.name: p for p in outbox.iterdir()}
    assert sorted(written) == ["openmetadata.jsonl", "openmetadata.reasons.log"]
    assert "https://***@127.0.0.1:" in written["openmetadata.reasons.log"].read_text()
    texts = {
        "log": "\n".join(r.getMessage() for r in caplog.records) + caplog.text,
        "problems": "\n".join(report.errors + transport.problems),
        "repr": repr(transport),
        **{name: path.read_text() for name, path in written.items()},
    }
    for where, text in texts.items():
        for secret in ("S3cr%3Ft", "S3cr?t", "S3cr"):
            assert secret not in text, where
    assert {oct(p.stat().st_mode & 0o777) for p in written.values()} == {"0o600"}
