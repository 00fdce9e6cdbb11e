"""OpenMetadata dead or hanging (issue 27 item 7), over real loopback sockets.

Before: a refused login or token endpoint was an ordinary transient failure, retried for the
whole 30 s budget (~21 s with user/password or OAuth against 1.7 s with a JWT), and a request
that hung until its timeout did not count against the budget (~33 s). Now a refused login is
"unreachable" (two quick retries), the budget counts from the start of the attempt that failed,
and a retry's request timeout is capped at what is left of it. The clock and sleep of the budget
are injected; the sockets are real. What it costs in seconds lives in benchmarks/ (section 5).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from dbt_oml.errors import TransientDeliveryError, UnreachableError
from dbt_oml.om.auth import BasicLogin, OAuth2ClientCredentials
from dbt_oml.om.client import MIN_TIMEOUT, OpenMetadataClient
from dbt_oml.om.retry import UNREACHABLE_RETRIES
from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport
from tests.conftest import free_port
from tests.support.om_transport import FakeTime, sample_event


@pytest.fixture
def refused() -> str:
    """A loopback URL nothing listens on."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def hanging() -> Iterator[str]:
    """A loopback URL that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    server.close()
    for conn in held:
        conn.close()


@pytest.mark.parametrize("kind", ["login", "oauth"])
def test_a_refused_login_or_token_endpoint_is_unreachable(refused: str, kind: str) -> None:
    provider: Any = (
        BasicLogin("etl@example.com", "pw")
        if kind == "login"
        else OAuth2ClientCredentials(f"{refused}/oauth/token", "dbt-oml", "s3cret")
    )
    with httpx2.Client() as http, pytest.raises(UnreachableError) as caught:
        provider.token(http, refused)
    assert caught.value.reason == "connection refused"
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    "creds",
    [
        {"jwt_token": "bot-jwt"},
        {"user": "etl@example.com", "password": "pw"},
        {"client_id": "dbt-oml", "client_secret": "s3cret", "oauth_token_url": "<url>/token"},
    ],
    ids=["jwt", "login", "oauth"],
)
def test_om_refusing_connections_costs_two_quick_retries_whatever_the_auth(
    refused: str, tmp_path: Path, creds: dict[str, str]
) -> None:
    """Every auth mode: 3 attempts, 1.5 s of backoff, then the breaker; all events kept."""
    time = FakeTime()
    config = OpenMetadataConfig.from_dict(
        {
            "url": refused,
            "outbox_dir": str(tmp_path / "outbox"),
            **{k: v.replace("<url>", refused) for k, v in creds.items()},
        }
    )
    t = OpenMetadataTransport(config, sleep=time.sleep, clock=time.clock)
    for _ in range(4):
        t.emit(sample_event())
    assert t.close() is False
    kept = (tmp_path / "outbox" / "openmetadata.jsonl").read_text().splitlines()
    assert (t.delivered, len(kept)) == (0, 4)
    assert len(time.slept) == UNREACHABLE_RETRIES
    assert sum(time.slept) == pytest.approx(1.5)


def test_a_retry_waits_at_most_what_is_left_of_the_budget(hanging: str) -> None:
    """The client's 8 s timeout, capped: a hanging OM gets only what the budget has left."""
    http = httpx2.Client(timeout=httpx2.Timeout(8.0, connect=5.0))
    client = OpenMetadataClient(hanging, http=http, auth=None, time_left=lambda: 0.1)
    with pytest.raises(TransientDeliveryError) as caught:
        client.request("GET", "/api/v1/system/version")
    assert caught.value.reason == "timed out"
    sent = caught.value.__cause__.request.extensions["timeout"]  # type: ignore[union-attr]
    assert sent == dict.fromkeys(("connect", "read", "write", "pool"), MIN_TIMEOUT)


def test_a_request_outside_a_spell_of_failures_gets_the_clients_own_timeout() -> None:
    seen: list[dict[str, float]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.extensions["timeout"])
        return httpx2.Response(200, json={"version": "2.0.7"})

    http = httpx2.Client(transport=httpx2.MockTransport(answer), timeout=8.0)
    OpenMetadataClient("http://om.test", http=http, auth=None).request("GET", "/api/v1/x")
    assert seen == [{"connect": 8.0, "read": 8.0, "write": 8.0, "pool": 8.0}]


def test_the_defaults_bound_a_hanging_om_to_one_timeout() -> None:
    """With the defaults, the request that hangs spends the whole budget: no retry follows."""
    config = OpenMetadataConfig.from_dict({"url": "http://om.test", "jwt_token": "x"})
    assert config.timeout >= config.retry_budget
    assert config.timeout + 0.5 <= 10  # issue 27.7: dead or hanging OM adds <= 10 s
