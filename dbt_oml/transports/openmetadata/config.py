"""The OpenMetadata transport's settings (`transport:` with `type: openmetadata`).

Parsed from openlineage.yml, dbt-oml.yml or OPENLINEAGE__TRANSPORT__* (values may arrive as
text); `secrets()` are what the transport's redactor masks. An insecure setup (TLS
verification off, credentials over plain http) is named by `insecurities()`, which the
transport says as it is made (a run makes one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attr
from openlineage.client.transport.transport import Config

from dbt_oml.errors import ConfigError
from dbt_oml.om.client import (
    BasicLogin,
    OAuth2ClientCredentials,
    StaticToken,
    TokenFile,
    TokenProvider,
)
from dbt_oml.om.metadata.session import PARTS, dbt_parts
from dbt_oml.redaction import mask
from dbt_oml.transports.options import coerce, known_values


@attr.define
class OpenMetadataConfig(Config):
    """Settings of the OpenMetadata transport (`transport:` in openlineage.yml / dbt-oml.yml)."""

    url: str
    jwt_token: str | None = attr.field(default=None, repr=False)
    jwt_token_file: str | None = None
    user: str | None = None
    password: str | None = attr.field(default=None, repr=False)
    client_id: str | None = None
    client_secret: str | None = attr.field(default=None, repr=False)
    oauth_token_url: str | None = None
    verify: bool | str = True
    owned_namespaces: list[str] = attr.field(factory=lambda: ["duckdb://"])
    services: dict[str, str] = attr.field(factory=dict)
    batch_size: int = 100
    timeout: float = 8.0
    retry_budget: float = 8.0
    outbox_dir: str = "dbt-oml-outbox"
    bootstrap: bool = True
    column_lineage_in_output_facets: bool = True
    allow_empty_column_lineage: bool = False
    #: which of dbt's metadata to write on owned tables (events with dbt-oml's dbt facets)
    dbt_metadata: dict[str, bool] = attr.field(factory=lambda: dict.fromkeys(PARTS, True))
    #: replace descriptions OM holds (a person's edits too) with dbt's, as OM's dbt option does
    update_descriptions: bool = False
    #: the OM classification dbt tags go to
    tags_classification: str = "dbtTags"

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> OpenMetadataConfig:
        values = known_values(cls, params, source="openmetadata transport")
        if not values.get("url"):
            raise ConfigError(
                key="transport.url",
                source="openmetadata transport",
                reason="is missing",
                hint="the OpenMetadata server, e.g. https://om:8585",
            )
        coerce(
            values,
            ints=("batch_size",),
            floats=("timeout", "retry_budget"),
            bools=(
                "bootstrap",
                "column_lineage_in_output_facets",
                "allow_empty_column_lineage",
                "update_descriptions",
            ),
        )
        if "dbt_metadata" in values:
            values["dbt_metadata"] = dbt_parts(values["dbt_metadata"])
        for key in ("services", "owned_namespaces"):
            if isinstance(values.get(key), str):
                values[key] = _parse_text(values[key], key)
        if isinstance(values.get("verify"), str) and values["verify"].lower() in {"true", "false"}:
            values["verify"] = values["verify"].lower() == "true"
        return cls(**values)

    def secrets(self) -> tuple[str | None, ...]:
        """The values to mask wherever they appear (the transport gives them to its redactor)."""
        return (self.jwt_token, self.password, self.client_secret)

    def insecurities(self) -> list[str]:
        """What lets credentials be read on the way (no TLS, or unverified), one line each."""
        url = mask(self.url)
        found = []
        if self.verify is False:
            found.append(f"TLS verification to {url} is OFF: anyone on the path can read the token")
        if self.url.lower().startswith("http://") and self.auth() is not None:
            found.append(f"OpenMetadata at {url} is plain http: the bot's token travels in clear")
        token_url = self.oauth_token_url or ""
        if token_url.lower().startswith("http://") and self.client_secret:
            found.append(
                f"the OAuth2 token URL {mask(token_url)} is plain http: the client secret "
                "travels in clear"
            )
        return found

    def auth(self) -> TokenProvider | None:
        if self.jwt_token_file:
            return TokenFile(Path(self.jwt_token_file).expanduser())
        if self.jwt_token:
            return StaticToken(self.jwt_token)
        if self.client_id and self.client_secret and self.oauth_token_url:
            return OAuth2ClientCredentials(self.oauth_token_url, self.client_id, self.client_secret)
        if self.user and self.password:
            return BasicLogin(self.user, self.password)
        return None


def _parse_text(text: str, key: str) -> Any:
    """`services`/`owned_namespaces` given as text (an environment variable): JSON or a list.

    >>> _parse_text("mssql://src:1433=source_sql", "services")
    {'mssql://src:1433': 'source_sql'}
    >>> _parse_text("duckdb://, md:", "owned_namespaces")
    ['duckdb://', 'md:']
    """
    text = text.strip()
    if text.startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(
                key=f"transport.{key}", source="openmetadata transport", reason=f"bad JSON ({e})"
            ) from e
    items = [p.strip() for p in text.split(",") if p.strip()]
    if key == "owned_namespaces":
        return items
    pairs = [item.rpartition("=") for item in items]
    if any(not sep or not ns or not svc for ns, sep, svc in pairs):
        raise ConfigError(
            key=f"transport.{key}",
            source="openmetadata transport",
            reason="is not NAMESPACE=SERVICE[,...] nor JSON",
            hint='e.g. {"mssql://src:1433": "source_sql"}',
        )
    return {ns.strip(): svc.strip() for ns, _, svc in pairs}
