"""dbt_oml's one retry mechanism's pieces (tenacity): exponential backoff and a time budget as
a stop. The OpenMetadata client's budget and breaker (om.retry), the JetStream publish and the
relay's reconnects are built from these.
"""

from __future__ import annotations

from collections.abc import Callable

import tenacity
from tenacity import RetryCallState

Wait = Callable[[RetryCallState], float]


def exponential(first: float, maximum: float) -> Wait:
    """Waits of `first`, twice that, and so on, up to `maximum` seconds.

    >>> third = RetryCallState(None, None, (), {})
    >>> third.attempt_number = 3
    >>> exponential(0.5, 8.0)(third), exponential(0.5, 1.5)(third)
    (2.0, 1.5)
    """
    return tenacity.wait_exponential(multiplier=first, max=maximum)


def within(
    deadline: float, clock: Callable[[], float], wait: Wait
) -> Callable[[RetryCallState], bool]:
    """A tenacity stop: give up when the next wait would end after `deadline` (a time budget,
    not a count of tries)."""
    return lambda state: clock() + wait(state) > deadline
