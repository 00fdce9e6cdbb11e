"""The OpenMetadata run's retries (tenacity, with dbt_oml.retry's backoff): a time budget and a
breaker.

Every request to OpenMetadata in a run (settings, bootstrap, batches, lineage reads) draws on the
same RetryBudget. The budget is the time one spell of failures may cost, counted from the start
of the first attempt that failed (so a request that hung until its timeout has already spent that
much) and ended by the next success; a retry's request timeout is capped at what is left of it
(`time_left`). Transient failures are retried with exponential backoff while the budget lasts; a
refused connection (nothing listens) gets two quick retries only. Once a call fails for good the
breaker opens: every later call fails at once, so the rest of the run goes to the outbox in
milliseconds instead of waiting a timeout per batch. The JetStream publish and the relay's
reconnects use the same pieces (`dbt_oml.retry`) with tenacity's async retrying. Clock and
sleep are injected (tenacity's `sleep`), so tests never wait.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TypeVar

import tenacity
from tenacity import RetryCallState

from dbt_oml.errors import TransientDeliveryError, UnreachableError
from dbt_oml.retry import Wait, exponential, within

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Retries for a refused connection: OM restarting gets a moment, OM gone costs ~1.5 s.
UNREACHABLE_RETRIES = 2


def retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Retry-After in seconds: delta-seconds, or an HTTP date counted from `now` (the caller's
    wall clock; the real one when not given); None when absent or unreadable.

    >>> retry_after("7"), retry_after("soon"), retry_after(None)
    (7.0, None, None)
    >>> retry_after("Wed, 02 Dec 2026 10:00:30 GMT",
    ...             now=datetime(2026, 12, 2, 10, 0, tzinfo=timezone.utc))
    30.0
    """
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, says RFC 5322
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def _honouring_retry_after(wait: Wait) -> Wait:
    """`wait`, or longer when the server said how long (429's Retry-After)."""

    def waited(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        after = getattr(error, "retry_after", None)
        return max(wait(state), after) if isinstance(after, int | float) else wait(state)

    return waited


def _log_retry(state: RetryCallState) -> None:
    delay = state.next_action.sleep if state.next_action else 0.0
    logger.debug("OpenMetadata unavailable; retrying in %.1fs", delay)


class RetryBudget:
    """Retries transient failures for at most `seconds` per spell of failures (see the module)."""

    def __init__(
        self,
        seconds: float,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        first_delay: float = 0.5,
        max_delay: float = 8.0,
    ) -> None:
        self.seconds = seconds
        self.clock, self.sleep = clock, sleep
        self.wait = exponential(first_delay, max_delay)
        #: when the current spell of failures must end (None: the last call succeeded)
        self._deadline: float | None = None
        self.broken: TransientDeliveryError | None = None

    def reset(self) -> None:
        """A fresh budget and a closed breaker (a long-running relay: one per batch)."""
        self._deadline = None
        self.broken = None

    def time_left(self) -> float | None:
        """Seconds left of the current spell of failures; None when nothing is failing (a
        request then gets its full timeout)."""
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - self.clock())

    def call(self, action: Callable[[], T]) -> T:
        """`action()`, retried on transient failures; raises the last one when out of budget."""
        if self.broken is not None:
            raise self.broken
        wait = _honouring_retry_after(self.wait)
        started = [self.clock()]
        refused = 0

        def attempt() -> T:
            started[0] = self.clock()
            return action()

        def give_up(state: RetryCallState) -> bool:
            nonlocal refused
            if self._deadline is None:  # this spell began when the failed attempt did
                self._deadline = started[0] + self.seconds
            if state.outcome is not None and isinstance(
                state.outcome.exception(), UnreachableError
            ):
                refused += 1
                if refused > UNREACHABLE_RETRIES:
                    return True
            return within(self._deadline, self.clock, wait)(state)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(TransientDeliveryError),
            stop=give_up,
            wait=wait,
            sleep=self.sleep,
            before_sleep=_log_retry,
            reraise=True,
        )
        try:
            result = retrying(attempt)
        except TransientDeliveryError as e:
            self.broken = e
            raise
        self._deadline = None  # a success ends the spell
        return result
