"""Masking secrets: `mask` for the shapes a secret takes in text, and `Redactor`, one per run,
for the secret values that run knows.

`mask` is pure: URL userinfo (`scheme://user:pass@host`), secret-looking key=value pairs in
query strings, DSNs, JSON and error texts (`password`, `passwd`, `pwd`, `token`, `secret`,
`motherduck_token`, `api_key`, ...) and `Bearer` credentials. A `Redactor` adds the values its
run has met (a profile's password, the OM token, wherever and however encoded they appear); the
command (or the dbt plugin's session) makes it and hands it to everything through which text
leaves the process: the console, the outbox, the events' error messages, dead letters.
There is no process-wide instance: two runs in one process know only their own secrets.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, quote_plus

#: Names of keys whose values are secrets (case-insensitive, any prefix: PGPASSWORD, jwt_token).
SECRET_KEY = re.compile(
    r"^[A-Za-z0-9_.\-]*(?:password|passwd|passphrase|pwd|token|secret|api_?key|apikey"
    r"|access_?key|private_?key|credentials?|signature|sig)$",
    re.IGNORECASE,
)
_SECRET_KEYS = (
    r"(?:[A-Za-z0-9_]*(?:password|passwd|passphrase|pwd|token|secret|api_?key|apikey|access_?key"  # noqa: S105 - a pattern of key names, not a secret
    r"|private_?key|credentials?|signature|sig))"
)
_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*://"
#: One URL: a scheme, then up to whitespace, a quote, or a comma that starts the next URL.
_URL = re.compile(rf"(?P<scheme>{_SCHEME})(?P<rest>(?:[^\s'\"<>,]|,(?!{_SCHEME}))+)")
_KEY_VALUE = re.compile(
    rf"(?P<key>\b{_SECRET_KEYS}['\"]?\s*(?:=|:)\s*)"
    r"(?P<value>'[^'\n]*'|\"(?:[^\"\\\n]|\\.)*\"|[^\s&;,'\"}\\]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"\b(?P<kind>Bearer|Basic)\s+[A-Za-z0-9\-._~+/]{6,}=*", re.IGNORECASE)
MASK = "***"
#: The free-text fields of an errorMessage facet.
_FREE_TEXT = frozenset({"message", "stackTrace"})
#: Shorter values are not remembered: masking every "a" or "pw" would garble all output.
MIN_SECRET_LENGTH = 3


def _host_start(char: str) -> bool:
    return char.isalnum() or char in {"[", "_"}


def _userinfo_end(rest: str) -> int:
    """Index of the `@` that ends a URL's user info (the last one before a host), or -1."""
    at = rest.rfind("@")
    while at >= 0 and not _host_start(rest[at + 1 : at + 2]):
        at = rest.rfind("@", 0, at)
    return at if at > 0 else -1


def _mask_userinfo(match: re.Match[str]) -> str:
    rest = match["rest"]
    end = _userinfo_end(rest)
    return match[0] if end < 0 else f"{match['scheme']}{MASK}{rest[end:]}"


def _mask_value(match: re.Match[str]) -> str:
    value = match["value"]
    quoted = value[:1] if value[:1] in {"'", '"'} else ""
    return f"{match['key']}{quoted}{MASK}{quoted}"


def _encodings(value: str) -> set[str]:
    """The ways a secret shows up in text: as is, URL-encoded, JSON- and repr-escaped."""
    out = {value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]}
    out.add(repr(value)[1:-1])
    return {v for v in out if len(v) >= MIN_SECRET_LENGTH}


class Redactor:
    """Masks secrets in text. Thread-safe; known secret values can be added at any time."""

    def __init__(self) -> None:
        self._values: list[str] = []
        self._known: set[str] = set()
        self._lock = threading.Lock()

    def add(self, *values: str | None) -> None:
        """Remember secret values (a password, a token) to mask wherever they appear."""
        with self._lock:
            for value in values:
                if value and len(value.strip()) >= MIN_SECRET_LENGTH:
                    self._known.update(_encodings(value))
            self._values = sorted(self._known, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        """The text with every known value and every secret shape masked.

        >>> redactor = Redactor()
        >>> redactor.add("hunter2-xyz")
        >>> redactor("connect failed: auth hunter2-xyz rejected; token=abc")
        'connect failed: auth *** rejected; token=***'
        """
        out = str(text)
        with self._lock:
            values = self._values
        for value in values:  # first: a known value is masked whole, whatever it contains
            if value in out:
                out = out.replace(value, MASK)
        return mask(out)

    def event(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of an event's JSON form with its free texts (error message, stack trace)
        redacted.

        Only the free texts: names, namespaces and SQL are data, and masking a known secret
        that happens to be a common word ("test", "postgres") there would corrupt the event.

        >>> Redactor().event({"run": {"facets": {"errorMessage": {"message": "passwd=x1 bad"}}}})
        {'run': {'facets': {'errorMessage': {'message': 'passwd=*** bad'}}}}
        """
        out = dict(doc)
        run = out.get("run")
        facets = run.get("facets") if isinstance(run, Mapping) else None
        error = facets.get("errorMessage") if isinstance(facets, Mapping) else None
        if isinstance(run, Mapping) and isinstance(facets, Mapping) and isinstance(error, Mapping):
            texts = {k: self(v) for k, v in error.items() if k in _FREE_TEXT and isinstance(v, str)}
            out["run"] = {**run, "facets": {**facets, "errorMessage": {**error, **texts}}}
        return out


def mask(text: str) -> str:
    """Mask user:password@ in URLs, secret key=value pairs and Bearer/Basic credentials.

    >>> mask("POST https://bob:pw@om:8585/api?token=abc&x=1 failed")
    'POST https://***@om:8585/api?token=***&x=1 failed'
    >>> mask("IO Error: host=db user=etl passwd=TOPSECRET port=3306")
    'IO Error: host=db user=etl passwd=*** port=3306'
    >>> mask("nats://relay:n@ts/pw@nats-1:4222,nats://nats-2:4222 refused")
    'nats://***@nats-1:4222,nats://nats-2:4222 refused'
    """
    out = _URL.sub(_mask_userinfo, str(text))
    out = _KEY_VALUE.sub(_mask_value, out)
    return _BEARER.sub(lambda m: f"{m['kind']} {MASK}", out)


def secrets_in(text: str) -> list[str]:
    """The secret values a text carries: URL passwords and secret key=value values.

    >>> secrets_in("host=db user=etl password='a b c' port=1")
    ['a b c']
    >>> secrets_in("postgresql://etl:s3cr?t@db/x")
    ['s3cr?t']
    """
    found = []
    for match in _URL.finditer(text):
        info = match["rest"][: max(_userinfo_end(match["rest"]), 0)]
        _, sep, password = info.partition(":")
        found.append(password if sep else info)
    for match in _KEY_VALUE.finditer(text):
        value = match["value"]
        found.append(value[1:-1] if value[:1] in {"'", '"'} else value)
    return [v for v in found if v]


def secrets_of(doc: object) -> list[str]:
    """Secret values in a mapping (a profile target, a transport config), at any depth.

    Values of secret-named keys (`password`, `jwt_token`, ...) and secrets inside strings
    (connection strings with passwords, URLs with user info).

    >>> secrets_of({"type": "x", "auth": {"api_key": "k123"}, "url": "https://u:pw99@h"})
    ['k123', 'pw99']
    """
    out: list[str] = []
    if isinstance(doc, Mapping):
        for key, value in doc.items():
            scalar = isinstance(value, str | int) and not isinstance(value, bool)
            if scalar and SECRET_KEY.match(str(key)):
                out.append(str(value))
            else:
                out += secrets_of(value)
    elif isinstance(doc, list | tuple | set | frozenset):
        for item in doc:
            out += secrets_of(item)
    elif isinstance(doc, str):
        out += secrets_in(doc)
    return out
