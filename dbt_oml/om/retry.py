"""One retry budget for a whole run, and a breaker that stops trying once it is spent.

Every request to OpenMetadata in a run (settings, bootstrap, batches, lineage reads) draws on the
same budget. Transient failures are retried with exponential backoff while the budget lasts; a
refused connection (nothing listens) gets one quick retry only. Once a call fails for good the
breaker opens: every later call fails at once, so the rest of the run goes to the outbox in
milliseconds instead of waiting a timeout per batch. The clock and sleep are injected.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from dbt_oml.errors import TransientDeliveryError, UnreachableError

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Retries for a refused connection: OM restarting gets a moment, OM gone costs ~1.5 s.
UNREACHABLE_RETRIES = 2


class RetryBudget:
    """Retries transient failures within `seconds` in total, counted from the first call."""

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
        self.first_delay, self.max_delay = first_delay, max_delay
        self._deadline: float | None = None
        self.broken: TransientDeliveryError | None = None

    def reset(self) -> None:
        """A fresh budget and a closed breaker (a long-running relay: one per batch)."""
        self._deadline = None
        self.broken = None

    def call(self, action: Callable[[], T]) -> T:
        """`action()`, retried on transient failures; raises the last one when out of budget."""
        if self.broken is not None:
            raise self.broken
        if self._deadline is None:
            self._deadline = self.clock() + self.seconds
        delay, refused = self.first_delay, 0
        while True:
            try:
                return action()
            except UnreachableError as e:
                refused += 1
                if refused > UNREACHABLE_RETRIES or self.clock() + delay > self._deadline:
                    self.broken = e
                    raise
            except TransientDeliveryError as e:
                if self.clock() + delay > self._deadline:
                    self.broken = e
                    raise
            logger.debug("OpenMetadata unavailable; retrying in %.1fs", delay)
            self.sleep(delay)
            delay = min(delay * 2, self.max_delay)
