"""The run's retry budget (om.retry, on tenacity): backoff, the refused-connection rule, the breaker.

A fake clock that the injected sleep advances: nothing here waits.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dbt_oml.errors import (
    CredentialError,
    TerminalDeliveryError,
    TransientDeliveryError,
    UnreachableError,
)
from dbt_oml.om.retry import UNREACHABLE_RETRIES, RetryBudget


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def failing(errors: list[Exception], result: str = "ok") -> tuple[Callable[[], str], list[int]]:
    calls = [0]

    def action() -> str:
        calls[0] += 1
        if errors:
            raise errors.pop(0)
        return result

    return action, calls


def budget(clock: Clock, seconds: float = 30.0) -> RetryBudget:
    return RetryBudget(seconds, clock=clock, sleep=clock.sleep)


def test_transient_failures_back_off_exponentially_then_succeed() -> None:
    clock = Clock()
    action, calls = failing([TransientDeliveryError(target="om", reason="503")] * 3)
    assert budget(clock).call(action) == "ok"
    assert (calls[0], clock.slept) == (4, [0.5, 1.0, 2.0])


def test_a_refused_connection_gets_two_quick_retries_then_the_breaker_opens() -> None:
    clock = Clock()
    run = budget(clock)
    refused = UnreachableError(target="om", reason="connection refused")
    action, calls = failing([refused] * 10)
    with pytest.raises(UnreachableError):
        run.call(action)
    assert calls[0] == UNREACHABLE_RETRIES + 1
    assert sum(clock.slept) == pytest.approx(1.5)
    again, later = failing([])
    with pytest.raises(UnreachableError):  # open breaker: no call, no wait
        run.call(again)
    assert (later[0], sum(clock.slept)) == (0, pytest.approx(1.5))


def test_the_budget_is_one_per_run_and_reset_gives_a_new_one() -> None:
    clock = Clock()
    run = budget(clock, seconds=2.0)
    action, _ = failing([TransientDeliveryError(target="om", reason="503")] * 10)
    with pytest.raises(TransientDeliveryError):
        run.call(action)
    assert clock.now <= 2.0  # never a wait past the budget
    assert run.broken is not None
    run.reset()
    assert run.call(failing([])[0]) == "ok"


@pytest.mark.parametrize(
    "error",
    [
        TerminalDeliveryError(target="om", reason="400"),
        CredentialError(key="jwt_token_file", target="/run/token", reason="cannot be read"),
    ],
)
def test_what_retrying_cannot_fix_is_raised_at_once_and_leaves_the_breaker_closed(
    error: Exception,
) -> None:
    clock = Clock()
    run = budget(clock)
    action, calls = failing([error])
    with pytest.raises(type(error)):
        run.call(action)
    assert (calls[0], clock.slept, run.broken) == (1, [], None)


def test_a_429_waits_the_servers_retry_after_then_succeeds() -> None:
    """429 was answered as a terminal 4xx (the batch kept, never retried): now it is retried,
    waiting at least Retry-After (else the usual backoff), within the budget."""
    from dbt_oml.errors import RateLimitedError

    clock = Clock()
    limited = [
        RateLimitedError(target="om", reason="429", retry_after=5.0),
        RateLimitedError(target="om", reason="429"),
    ]
    action, calls = failing(limited)
    assert budget(clock).call(action) == "ok"
    assert (calls[0], clock.slept) == (3, [5.0, 1.0])


def test_a_retry_after_beyond_the_budget_gives_up_at_once() -> None:
    from dbt_oml.errors import RateLimitedError

    clock = Clock()
    action, calls = failing([RateLimitedError(target="om", reason="429", retry_after=3600.0)])
    with pytest.raises(RateLimitedError):
        budget(clock).call(action)
    assert (calls[0], clock.slept) == (1, [])


def test_the_client_reads_429_and_retry_after() -> None:
    import httpx2

    from dbt_oml.errors import RateLimitedError
    from dbt_oml.om.auth import StaticToken
    from dbt_oml.om.client import OpenMetadataClient

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(429, headers={"Retry-After": "12"}, json={"message": "slow down"})

    http = httpx2.Client(transport=httpx2.MockTransport(answer))
    client = OpenMetadataClient("http://om:8585", http=http, auth=StaticToken("t"))
    with pytest.raises(RateLimitedError) as limited:
        client.request("GET", "/api/v1/tables")
    assert limited.value.retry_after == 12.0
    assert "429 slow down" in str(limited.value)


def test_a_request_that_hung_until_its_timeout_has_spent_the_budget() -> None:
    """A hanging OM: the first attempt waits its whole timeout, so no retry follows (issue 27.7)."""
    clock = Clock()
    run = budget(clock, seconds=10.0)
    calls = [0]

    def hangs() -> str:
        calls[0] += 1
        clock.now += 10.0  # the request's read timeout
        raise TransientDeliveryError(target="om", reason="timed out")

    with pytest.raises(TransientDeliveryError):
        run.call(hangs)
    assert (calls[0], clock.slept, clock.now) == (1, [], 10.0)


def test_a_retry_gets_only_what_is_left_of_the_budget_and_a_success_ends_the_spell() -> None:
    clock = Clock()
    run = budget(clock, seconds=10.0)
    seen: list[float | None] = []

    def slow_then_fine() -> str:
        seen.append(run.time_left())
        if len(seen) == 1:
            clock.now += 4.0
            raise TransientDeliveryError(target="om", reason="timed out")
        return "ok"

    assert run.call(slow_then_fine) == "ok"
    assert seen == [None, pytest.approx(5.5)]  # 10 - 4 (the hang) - 0.5 (the first backoff)
    assert run.time_left() is None
