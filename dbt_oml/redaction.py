"""The one redactor: every text that leaves the process passes through `redact`.

Pure (no I/O). Knows URL userinfo (`scheme://user:pass@host`), secret-looking key=value pairs in
query strings, DSNs and error texts (`password`, `passwd`, `pwd`, `token`, `secret`,
`motherduck_token`, `api_key`, ...), and any secret *value* registered at start-up (a profile's
password, the OM token), wherever it appears.
"""

from __future__ import annotations

import re
import threading

_SECRET_KEYS = (
    r"(?:[A-Za-z0-9_]*(?:password|passwd|pwd|token|secret|api_?key|apikey|access_?key"
    r"|private_?key|credentials?))"
)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<info>[^/\s@'\"]+)@")
_KEY_VALUE = re.compile(
    rf"(?P<key>\b{_SECRET_KEYS}\b\s*(?:=|:)\s*)(?P<q>['\"]?)(?P<value>[^\s&;,'\"}}]+)",
    re.IGNORECASE,
)
MASK = "***"


class Redactor:
    """Masks secrets in text. Thread-safe; known secret values can be added at any time."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._lock = threading.Lock()

    def add(self, *values: str | None) -> None:
        """Remember secret values (a password, a token) to mask wherever they appear."""
        with self._lock:
            self._values.update(v for v in values if v and len(v) >= 3)

    def __call__(self, text: str) -> str:
        out = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", str(text))
        out = _KEY_VALUE.sub(lambda m: f"{m['key']}{m['q']}{MASK}", out)
        with self._lock:
            values = sorted(self._values, key=len, reverse=True)
        for value in values:
            out = out.replace(value, MASK)
        return out


#: The process-wide redactor: config registers the secrets it reads, every writer calls it.
REDACTOR = Redactor()


def redact(text: str) -> str:
    """Mask user:password@ in URLs, secret key=value pairs and registered secret values.

    >>> redact("POST https://bob:pw@om:8585/api?token=abc&x=1 failed")
    'POST https://***@om:8585/api?token=***&x=1 failed'
    >>> redact("IO Error: host=db user=etl passwd=TOPSECRET port=3306")
    'IO Error: host=db user=etl passwd=*** port=3306'
    """
    return REDACTOR(text)
