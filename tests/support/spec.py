"""Validate OpenLineage events against OpenLineage's own JSON schemas, offline, formats checked.

The schemas are read from ../shared/openlineage-spec (core 2-0-2, every standard facet, dbt-ol's
dbt facets) and registered under their `$id`s, so every `$ref` and every facet's `_schemaURL`
resolves locally; a `_schemaURL` that names no schema there is an error, not a skip.

`format` is checked with the small checkers below, registered explicitly: jsonschema checks `uri`
and `date-time` only when optional packages (rfc3987 or rfc3986-validator, rfc3339-validator)
happen to be installed, and skips them silently otherwise. These checkers do not depend on what
is installed, and are written from the RFCs, independently of dbt-oml's own URI test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from tests.conftest import ROOT, SHARED

SPEC = SHARED / "openlineage-spec"
#: The schemas of dbt-oml's own facets, shipped with the package (when it has any).
OWN_SCHEMAS = ROOT / "dbt_oml" / "schemas"
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
#: Where each kind of facet belongs in an event (the `$defs` entry a facet's `allOf` starts from).
KINDS = {
    "run": {"RunFacet", "BaseFacet"},
    "job": {"JobFacet", "BaseFacet"},
    "dataset": {"DatasetFacet", "BaseFacet"},
    "input": {"InputDatasetFacet", "BaseFacet"},
    "output": {"OutputDatasetFacet", "BaseFacet"},
}

# -- formats, from the RFCs ---------------------------------------------------------------------

# RFC 3986 section 3, `URI = scheme ":" hier-part [ "?" query ] [ "#" fragment ]`
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_SEGMENT = rf"{_PCHAR}*"
_SEGMENT_NZ = rf"{_PCHAR}+"
_USERINFO = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*"
_IP_LITERAL = rf"\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\.[{_UNRESERVED}{_SUB_DELIMS}:]+)\]"
_REG_NAME = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*"  # IPv4 addresses match it too
_AUTHORITY = rf"(?:{_USERINFO}@)?(?:{_IP_LITERAL}|{_REG_NAME})(?::[0-9]*)?"
_HIER_PART = (
    rf"(?://{_AUTHORITY}(?:/{_SEGMENT})*"  # "//" authority path-abempty
    rf"|/(?:{_SEGMENT_NZ}(?:/{_SEGMENT})*)?"  # path-absolute
    rf"|{_SEGMENT_NZ}(?:/{_SEGMENT})*"  # path-rootless
    r"|)"  # path-empty
)
URI = re.compile(
    rf"[A-Za-z][A-Za-z0-9+\-.]*:{_HIER_PART}(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
)
# RFC 3339 section 5.6 `date-time` (the "T" and "Z" case-insensitive, as 5.6 allows)
DATE_TIME = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:[Zz]|[+-](\d\d):(\d\d))"
)
UUID_TEXT = re.compile(
    r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
)


def is_uri(value: object) -> bool:
    return not isinstance(value, str) or URI.fullmatch(value) is not None


def is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    match = DATE_TIME.fullmatch(value)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    offset_hour, offset_minute = (int(g or 0) for g in match.groups()[6:])
    try:
        date(year, month, day)
    except ValueError:
        return False
    # second 60: a leap second, which RFC 3339 allows
    return hour < 24 and minute < 60 and second <= 60 and offset_hour < 24 and offset_minute < 60


def is_uuid(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return UUID_TEXT.fullmatch(value) is not None


def format_checker() -> FormatChecker:
    """Exactly the formats the OpenLineage schemas use, each one really checked."""
    checker = FormatChecker(formats=())
    checker.checks("uri")(is_uri)
    checker.checks("date-time")(is_date_time)
    checker.checks("uuid")(is_uuid)
    return checker


# -- the validator ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Facet:
    place: str
    """run, job, dataset, input or output"""
    path: str
    key: str
    doc: Mapping[str, Any]


def facets(event: Mapping[str, Any]) -> Iterator[Facet]:
    """Every facet of an event, with where it sits."""
    for place, owner, field in (("run", "run", "facets"), ("job", "job", "facets")):
        for key, doc in ((event.get(owner) or {}).get(field) or {}).items():
            yield Facet(place, f"{owner}.{field}.{key}", key, doc)
    for side, own in (("inputs", "input"), ("outputs", "output")):
        for i, dataset in enumerate(event.get(side) or ()):
            for field, place in (("facets", "dataset"), (f"{own}Facets", own)):
                for key, doc in (dataset.get(field) or {}).items():
                    yield Facet(place, f"{side}[{i}].{field}.{key}", key, doc)


class SpecValidator:
    """Events against RunEvent, facets against their `_schemaURL`, all from local schema files."""

    @classmethod
    def for_dbt_oml(cls) -> SpecValidator:
        """OpenLineage's schemas from ../shared, and dbt-oml's own from the package."""
        return cls(SPEC, *([OWN_SCHEMAS] if OWN_SCHEMAS.is_dir() else []))

    def __init__(self, *folders: Path) -> None:
        resources = []
        for folder in folders:
            for path in sorted(folder.rglob("*.json")):
                doc = json.loads(path.read_text())
                if isinstance(doc, dict) and "$id" in doc:
                    # dbt-run-run-facet.json names no known dialect: read as 2020-12
                    resources.append((doc["$id"], DRAFT202012.create_resource(doc)))
        if not resources:
            raise FileNotFoundError(f"no JSON schema with an $id under {folders}")
        self.registry: Registry[Any] = Registry().with_resources(resources)
        self.formats = format_checker()

    def _validator(self, url: str) -> Draft202012Validator:
        return Draft202012Validator(
            {"$ref": url}, registry=self.registry, format_checker=self.formats
        )

    def schema_errors(self, instance: Any, url: str) -> list[str]:
        """Why `instance` is not valid against the schema at `url` (empty: it is)."""
        return [
            f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}"
            for e in self._validator(url).iter_errors(instance)
        ]

    def facet_errors(
        self, facet: Facet, tolerated: frozenset[tuple[str, str]] = frozenset()
    ) -> list[str]:
        url = facet.doc.get("_schemaURL") if isinstance(facet.doc, Mapping) else None
        if not isinstance(url, str):
            return [f"{facet.path}: no _schemaURL"]
        base, _, fragment = url.partition("#")
        try:
            resolved = self.registry.resolver().lookup(url)
            file = self.registry.contents(base)
        except (Unresolvable, LookupError):
            return [f"{facet.path}: _schemaURL {url} names no schema in the local spec"]
        if not fragment:
            return [f"{facet.path}: _schemaURL {url} points at a file, not at a facet's $defs"]
        declared = {name: prop.get("$ref") for name, prop in (file.get("properties") or {}).items()}
        problems = []
        if declared.get(facet.key) != f"#{fragment}":
            problems.append(
                f"{facet.path}: key {facet.key!r} is not the name {url} declares ({declared})"
            )
        first = ((resolved.contents.get("allOf") or [{}])[0].get("$ref") or "").rpartition("/")[2]
        if first not in KINDS[facet.place] and (facet.place, facet.key) not in tolerated:
            kind = first or "a facet of no known kind"
            problems.append(f"{facet.path}: {kind} does not belong in {facet.place} facets")
        problems += [f"{facet.path}/{e}" for e in self.schema_errors(facet.doc, url)]
        return problems

    def errors(
        self, event: Mapping[str, Any], tolerated: frozenset[tuple[str, str]] = frozenset()
    ) -> list[str]:
        """Every way an event breaks the spec: as a RunEvent, then facet by facet.

        `tolerated`: (place, facet key) pairs allowed outside the place their kind names.
        """
        problems = [f"event/{e}" for e in self.schema_errors(event, RUN_EVENT)]
        if event.get("schemaURL") != RUN_EVENT:
            problems.append(f"event: schemaURL {event.get('schemaURL')!r} is not {RUN_EVENT}")
        for facet in facets(event):
            problems += self.facet_errors(facet, tolerated)
        return problems
