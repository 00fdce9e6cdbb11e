"""Issue 11, item 9: credentials that could be read on the way are one WARNING per run.

TLS verification off used to warn only when the config came from a dict (a YAML `false`), not
when it came as text from an environment variable; an `http://` OAuth2 token URL sent the client
secret in clear without a word. (Plain http with a token: test_om_safety's
test_plain_http_with_a_token_warns.) A run makes one OpenMetadata transport, which says each
insecurity as it is made: no module state remembers anything between runs (or tests).
"""

from __future__ import annotations

import logging

import pytest
from openlineage.client import OpenLineageClient

from dbt_oml.transports import build_transport_factory
from dbt_oml.transports.openmetadata import OpenMetadataTransport


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize("text", ["false", "False", "FALSE"])
def test_verify_off_as_text_warns(caplog: pytest.LogCaptureFixture, text: str) -> None:
    factory = build_transport_factory()
    config = {"type": "openmetadata", "url": "https://om-unverified:8585", "jwt_token": "t"}
    created = factory.create({**config, "verify": text})
    assert isinstance(created, OpenMetadataTransport)
    assert created.config.verify is False
    assert _warnings(caplog) == [
        "TLS verification to https://om-unverified:8585 is OFF: anyone on the path can read "
        "the token"
    ]


def test_verify_off_from_an_openlineage_variable_warns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for key, value in {
        "TYPE": "openmetadata",
        "URL": "https://om-unverified:8585",
        "JWT_TOKEN": "eyJ0.bot.jwt",
        "VERIFY": "False",  # not JSON: openlineage-python hands it over as text
    }.items():
        monkeypatch.setenv(f"OPENLINEAGE__TRANSPORT__{key}", value)
    client = OpenLineageClient(factory=build_transport_factory())
    assert client.transport.config.verify is False  # type: ignore[attr-defined]
    assert [w for w in _warnings(caplog) if "TLS verification" in w] == [
        "TLS verification to https://om-unverified:8585 is OFF: anyone on the path can read "
        "the token"
    ]


def test_a_plain_http_oauth_token_url_warns(caplog: pytest.LogCaptureFixture) -> None:
    factory = build_transport_factory()
    config = {
        "type": "openmetadata",
        "url": "https://om:8585",
        "client_id": "dbt-oml",
        "client_secret": "oauth-S3cret",
        "oauth_token_url": "http://idp.example/oauth2/token",
    }
    factory.create(dict(config))
    assert _warnings(caplog) == [
        "the OAuth2 token URL http://idp.example/oauth2/token is plain http: the client secret "
        "travels in clear"
    ]
    assert "oauth-S3cret" not in caplog.text


def test_https_everywhere_and_verified_is_quiet(caplog: pytest.LogCaptureFixture) -> None:
    build_transport_factory().create(
        {
            "type": "openmetadata",
            "url": "https://om:8585",
            "client_id": "dbt-oml",
            "client_secret": "oauth-S3cret",
            "oauth_token_url": "https://idp.example/oauth2/token",
            "verify": "true",
        }
    )
    assert _warnings(caplog) == []


def test_each_run_says_it_again(caplog: pytest.LogCaptureFixture) -> None:
    """Two runs in one process (the fork server, a long-lived host) each warn: nothing global
    remembers the first."""
    config = {"type": "openmetadata", "url": "https://om-unverified:8585", "verify": False}
    for _ in range(2):
        build_transport_factory().create({**config, "jwt_token": "t"})
    assert len(_warnings(caplog)) == 2
