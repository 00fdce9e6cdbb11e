"""Times as the events and OpenMetadata write them."""

from __future__ import annotations

from datetime import datetime, timezone


def format_time(moment: datetime) -> str:
    """UTC with a `Z` and exactly three fractional digits (what OpenMetadata 2.0 parses right).

    >>> from datetime import datetime, timezone, timedelta
    >>> format_time(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc))
    '2026-01-02T03:04:05.678Z'
    >>> format_time(datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2))))
    '2026-01-02T03:04:05.000Z'
    """
    utc = moment.astimezone(timezone.utc) if moment.tzinfo else moment
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
