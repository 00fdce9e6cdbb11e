"""The one exception tree of dbt_oml, split by what the user must do next.

    DbtOmlError
     ├── ConfigError          fix the configuration: a bad or missing setting (key)      exit 3
     ├── SelectionError       fix the command: a model or column the project lacks       exit 3
     ├── ArtifactError        rebuild the artifacts: missing, unreadable, unsupported    exit 3
     ├── NamespaceError       say where a catalog lives (--namespace): reported, run goes on
     ├── LineageError         one model's SQL could not be analysed: opaque, run goes on
     ├── SharedCacheError     the shared lineage cache failed: one warning, analysed here
     └── DeliveryError        events kept in the outbox; send them later (flush)         exit 4*
          ├── TransientDeliveryError   the server side may recover: retry later (timeouts, 5xx)
          │    ├── UnreachableError    nothing answers (refused, unknown host): retry briefly
          │    └── RateLimitedError    429: retry after the server's Retry-After
          └── TerminalDeliveryError    retrying alone will not help (4xx, a rejected payload)
               └── CredentialError     fix the secret: an unreadable token file, a refused login,
                                       a 401 with a fresh token

    * after dbt ran, dbt's code stands unless --fail-on-emit-error (docs/failures.md).

Every error composes its own one-line message from structured attributes: what failed, where,
and what to do next. Messages never contain secrets. A delivery error from an HTTP answer carries
its `status`; `classify` is the one place that says which statuses are worth a retry.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable


class DbtOmlError(Exception):
    """Base class of every error dbt_oml raises on purpose."""


class ConfigError(DbtOmlError):
    """A setting is invalid or missing."""

    def __init__(self, *, key: str, source: str, reason: str, hint: str = "") -> None:
        self.key = key
        self.source = source
        self.reason = reason
        self.hint = hint
        msg = f"config {key!r} ({source}): {reason}"
        super().__init__(f"{msg}; {hint}" if hint else msg)


class SelectionError(DbtOmlError):
    """The command names a model, column or node the project does not have (or ambiguously)."""

    def __init__(self, *, what: str, reason: str, suggestions: Iterable[str] = ()) -> None:
        self.what = what
        self.reason = reason
        self.suggestions = tuple(suggestions)
        hint = f"; did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"{what}: {reason}{hint}")


class ArtifactError(DbtOmlError):
    """A dbt artifact is missing, not valid JSON, or of an unsupported schema version."""

    def __init__(self, *, path: str, reason: str, hint: str = "") -> None:
        self.path = path
        self.reason = reason
        self.hint = hint
        msg = f"{path}: {reason}"
        super().__init__(f"{msg}; {hint}" if hint else msg)


class NamespaceError(DbtOmlError):
    """A catalog's OpenLineage namespace cannot be derived from the profile."""

    def __init__(self, *, catalog: str, adapter: str, reason: str) -> None:
        self.catalog = catalog
        self.adapter = adapter
        self.reason = reason
        super().__init__(
            f"catalog {catalog!r} ({adapter}): {reason}; set its namespace with "
            f"--namespace {catalog}=<scheme://host:port> or namespaces.catalogs.{catalog} "
            "in dbt-oml.yml"
        )


class LineageError(DbtOmlError):
    """The SQL of one model could not be analysed."""

    def __init__(self, *, unique_id: str, reason: str) -> None:
        self.unique_id = unique_id
        self.reason = reason
        super().__init__(f"{unique_id}: {reason}")


class SharedCacheError(DbtOmlError):
    """The shared lineage cache (`lineage_cache`) could not be read or written: the run goes on
    with its own disk, analysing what it lacks."""

    def __init__(self, *, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"lineage cache {where}: {reason}")


class DeliveryError(DbtOmlError):
    """A transport could not deliver events (`status`: the HTTP answer's, when there was one)."""

    def __init__(
        self, *, target: str, reason: str, hint: str = "", status: int | None = None
    ) -> None:
        self.target = target
        self.reason = reason
        self.hint = hint
        self.status = status
        msg = f"delivery to {target} failed: {reason}"
        super().__init__(f"{msg}; {hint}" if hint else msg)


class TransientDeliveryError(DeliveryError):
    """Delivery failed in a way that retrying later may fix."""


class TerminalDeliveryError(DeliveryError):
    """Delivery failed in a way that retrying will not fix."""


class UnreachableError(TransientDeliveryError):
    """Nothing answered at all (connection refused, unknown host): worth one quick retry only."""


class RateLimitedError(TransientDeliveryError):
    """429 Too Many Requests: retried, waiting at least the server's Retry-After (seconds)."""

    def __init__(self, *, target: str, reason: str, retry_after: float | None = None) -> None:
        super().__init__(target=target, reason=reason, status=429)
        self.retry_after = retry_after


class CredentialError(TerminalDeliveryError):
    """The secret that authenticates to the server is missing, unreadable or refused: fix it.

    A delivery error, so the events of the run are kept in the outbox for `dbt-oml flush`.
    `key` names the setting that holds the secret (`jwt_token_file`, `password`, ...).
    """

    def __init__(
        self, *, key: str, target: str, reason: str, hint: str = "", status: int | None = None
    ) -> None:
        self.key = key
        super().__init__(target=target, reason=reason, hint=hint, status=status)


class Fault(enum.Enum):
    """What a failed answer means for the events it carried."""

    RETRYABLE = "retryable"  # the server may take them later: keep, retry
    TERMINAL = "terminal"  # retrying the same request will not help: fix, then replay


#: Statuses below 500 that a busy or struggling server (or gateway) answers: worth a retry.
RETRYABLE_STATUSES = frozenset({408, 425, 429})


def classify(status: int) -> Fault | None:
    """None for a success (2xx); otherwise whether the answer is worth a retry.

    >>> [classify(s) for s in (204, 503, 400)]
    [None, <Fault.RETRYABLE: 'retryable'>, <Fault.TERMINAL: 'terminal'>]
    """
    if 200 <= status < 300:  # noqa: PLR2004 - the 2xx class
        return None
    if status >= 500 or status in RETRYABLE_STATUSES:  # noqa: PLR2004 - any 5xx
        return Fault.RETRYABLE
    return Fault.TERMINAL


def status_error(
    status: int, *, target: str, reason: str, hint: str = "", retry_after: float | None = None
) -> DeliveryError:
    """The error for a failed answer, by `classify` (429 keeps its Retry-After)."""
    if status == 429:  # noqa: PLR2004
        return RateLimitedError(target=target, reason=reason, retry_after=retry_after)
    kind = TransientDeliveryError if classify(status) is Fault.RETRYABLE else TerminalDeliveryError
    return kind(target=target, reason=reason, hint=hint, status=status)


#: Terminal statuses that blame what was sent (not who sent it, nor where): retrying the same
#: payload will never work, another payload may.
PAYLOAD_STATUSES = frozenset({400, 413, 414, 422})


def blames_payload(error: DeliveryError) -> bool:
    """Whether OM refused this payload for good (a dead letter for the one event concerned),
    rather than the sender (401, 403) or the address (404): those wait for a fix, then retry."""
    return isinstance(error, TerminalDeliveryError) and error.status in PAYLOAD_STATUSES
