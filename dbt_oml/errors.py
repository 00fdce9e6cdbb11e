"""The one exception tree of dbt_oml.

    DbtOmlError
     ├── ConfigError          a bad or missing setting (carries the key and where it came from)
     ├── ArtifactError        a missing, unreadable or unsupported dbt artifact (carries the path)
     ├── NamespaceError       a catalog whose namespace cannot be derived (carries the catalog)
     ├── LineageError         SQL that could not be analysed (carries the model unique_id)
     └── DeliveryError        a transport could not deliver
          ├── TransientDeliveryError   retrying may help (timeouts, 5xx)
          │    └── UnreachableError    nothing answers (refused, unknown host): retry briefly
          └── TerminalDeliveryError    retrying will not help (4xx, auth, rejected payload)

Every error composes its own one-line message from structured attributes: what failed, where,
and what to do next. Messages never contain secrets.
"""

from __future__ import annotations


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


class DeliveryError(DbtOmlError):
    """A transport could not deliver events."""

    def __init__(self, *, target: str, reason: str, hint: str = "") -> None:
        self.target = target
        self.reason = reason
        self.hint = hint
        msg = f"delivery to {target} failed: {reason}"
        super().__init__(f"{msg}; {hint}" if hint else msg)


class TransientDeliveryError(DeliveryError):
    """Delivery failed in a way that retrying later may fix."""


class TerminalDeliveryError(DeliveryError):
    """Delivery failed in a way that retrying will not fix."""


class UnreachableError(TransientDeliveryError):
    """Nothing answered at all (connection refused, unknown host): worth one quick retry only."""
