"""How OM reads a request body, for the OM stand-in (ref §1.2-§1.4, §3.4, §5).

OM parses a body with Jackson and then runs bean validation (`@Valid`), and answers 400 in three
shapes, in this order:

1. malformed JSON → `{"code":400,"message":"Unable to process JSON","details":...}`;
2. a value Jackson cannot bind (wrong type, bad UUID/URI/date, unknown enum value)
   → `{"code":400,"message":"Invalid request format"}`;
3. bean-validation failures, all of them → `{"code":400,"message":"[query param eventTime must not
   be null, query param events size must be between 1 and 2147483647]"}`.

The rules come from OM's JSON schemas, as the models OM generates from them give them back
(om_models: PyPI's openmetadata-ingestion, pinned), read the way the server reads them: unknown
properties are ignored (`additionalProperties: false` is not enforced), `allOf` is ignored
(jsonschema2pojo does not generate it), JSON `null` is the same as absent, and scalars bind to
string fields (Jackson coerces them).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from tests.support.fakes.om_auth import OMError
from tests.support.fakes.om_models import json_schema

OPENLINEAGE = "api/lineage/openlineage"
INT_MAX = 2147483647
_TYPES = """NUMBER TINYINT SMALLINT INT BIGINT BYTEINT BYTES FLOAT DOUBLE DECIMAL NUMERIC TIMESTAMP
    TIMESTAMPZ TIME DATE DATETIME INTERVAL STRING MEDIUMTEXT TEXT CHAR LONG VARCHAR BOOLEAN BINARY
    VARBINARY ARRAY BLOB LONGBLOB MEDIUMBLOB MAP STRUCT UNION SET GEOGRAPHY ENUM JSON UUID VARIANT
    GEOMETRY BYTEA AGGREGATEFUNCTION ERROR FIXED RECORD NULL SUPER HLLSKETCH PG_LSN PG_SNAPSHOT
    TSQUERY TXID_SNAPSHOT XML MACADDR TSVECTOR UNKNOWN CIDR INET CLOB ROWID LOWCARDINALITY YEAR
    POINT POLYGON TUPLE SPATIAL TABLE NTEXT IMAGE IPV4 IPV6 DATETIMERANGE HLL LARGEINT
    QUANTILE_STATE AGG_STATE BITMAP UINT BIT MONEY MEASURE KPI HEIRARCHY HIERARCHYID"""
DATA_TYPES = frozenset(_TYPES.split()) | {"MEASURE HIDDEN", "MEASURE VISIBLE"}  # ref §5.2: 86

# -- values Jackson binds (ref §1.4, §1.3) -------------------------------------------------------

# 2.0.x: SimpleDateFormat "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'" (literal Z) plus the lenient module's
# bare-second form; epoch millis as a 10-19 digit string.
_TIME_2_0 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
# 1.12.x: Jackson's StdDateFormat (ISO-8601: optional seconds/fraction, Z, ±hh[:mm] or no zone).
_TIME_1_12 = re.compile(r"^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d(:?\d\d)?)?)?$")
_EPOCH = re.compile(r"^\d{10,19}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*$")
_URI_BAD = re.compile(r"[\s<>\"{}|\\^`\x00-\x1f\x7f]|%(?![0-9A-Fa-f]{2})")


def parses_as_date(value: Any, version: str) -> bool:
    """Whether OM `version` binds this JSON value to a java.util.Date (ref §1.4)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return True  # epoch millis
    if not isinstance(value, str):
        return False
    pattern = _TIME_1_12 if version.startswith("1.") else _TIME_2_0
    return bool(pattern.match(value) or _EPOCH.match(value))


def is_uuid(value: Any) -> bool:
    """Jackson's UUIDDeserializer: 36 characters, dashes at 8/13/18/23, hex elsewhere."""
    return isinstance(value, str) and bool(_UUID.match(value))


def is_java_uri(value: Any) -> bool:
    """Roughly what java.net.URI accepts (relative references included, so "foo" is fine)."""
    if not isinstance(value, str):
        return False
    if _URI_BAD.search(value) or value.count("#") > 1:
        return False
    head = re.split(r"[/?#]", value, maxsplit=1)[0]
    if ":" in head:
        scheme, rest = value.split(":", 1)
        if not _SCHEME.match(scheme) or not rest:
            return False  # "Expected scheme name" / "Expected scheme-specific part"
        if rest == "//":
            return False  # "Expected authority"
    before_fragment = value.split("#", 1)[0]
    authority = re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*://([^/?#]*)", before_fragment)
    outside = before_fragment[authority.end() :] if authority else before_fragment
    return "[" not in outside and "]" not in outside  # brackets only for IPv6 hosts


# -- schemas -------------------------------------------------------------------------------------


class Schemas:
    """Validators for OM's request schemas (om_models), built once each."""

    def __init__(self, version: str) -> None:
        self.version = version
        self._validators: dict[str, Any] = {}

    def validator(self, relative: str) -> Any:
        if relative in self._validators:
            return self._validators[relative]
        import jsonschema

        schema = json_schema(relative, self.version)
        checker = jsonschema.FormatChecker(formats=())
        checker.checks("uuid")(lambda v: not isinstance(v, str) or is_uuid(v))
        checker.checks("uri")(lambda v: not isinstance(v, str) or is_java_uri(v))
        checker.checks("date-time")(lambda v: parses_as_date(v, self.version))
        cls = jsonschema.validators.validator_for(schema)
        self._validators[relative] = cls(schema, format_checker=checker)
        return self._validators[relative]

    def check(self, relative: str | None, body: Any) -> None:
        """Raise OM's 400 for this body, if it has one."""
        if relative is None:
            return
        validator = self.validator(relative)
        bad_format: list[str] = []
        violations: dict[tuple[str, str], str] = {}  # (where, text) -> rule; one per property
        for error in validator.iter_errors(_without_nulls(body)):
            where = ".".join(str(p) for p in error.absolute_path)
            if "allOf" in error.absolute_schema_path or error.validator == "additionalProperties":
                continue  # not generated / ignored by OM's ObjectMapper
            message = _bean_message(error)
            if message is not None:
                violations.update(((where, text), rule) for rule, text in message)
            elif not _coerced(error):
                bad_format.append(f"{where or 'body'}: {error.message}")
        if bad_format:
            raise OMError(400, "Invalid request format", rule="format", detail=bad_format[0])
        if violations:
            texts = [text for _, text in violations]
            raise OMError(
                400,
                "[" + ", ".join(texts) + "]",
                rule=next(iter(violations.values())),
            )


def _without_nulls(value: Any) -> Any:
    """Jackson binds `"x": null` like an absent x (bean validation then says "must not be null")."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _leaf(error: Any) -> str:
    return next((str(p) for p in reversed(error.absolute_path) if isinstance(p, str)), "body")


def _bean_message(error: Any) -> list[tuple[str, str]] | None:
    """Hibernate Validator's text for constraint errors, None for binding (format) errors."""
    kind, schema = error.validator, error.schema
    if kind == "required":
        return [
            ("required", f"query param {name} must not be null")
            for name in error.validator_value
            if isinstance(error.instance, dict) and name not in error.instance
        ]
    if kind in ("minItems", "maxItems", "minLength", "maxLength", "minProperties"):
        items = kind.endswith("Items")
        low = schema.get("minItems" if items else "minLength", 0)
        high = schema.get("maxItems" if items else "maxLength", INT_MAX)
        return [("size", f"query param {_leaf(error)} size must be between {low} and {high}")]
    if kind == "pattern":
        return [("pattern", f'query param {_leaf(error)} must match "{error.validator_value}"')]
    if kind == "minimum":
        text = f"must be greater than or equal to {error.validator_value}"
        return [("range", f"query param {_leaf(error)} {text}")]
    if kind == "maximum":
        text = f"must be less than or equal to {error.validator_value}"
        return [("range", f"query param {_leaf(error)} {text}")]
    return None


def _coerced(error: Any) -> bool:
    """Jackson's scalar coercion: a number or boolean binds to a String field (not to a UUID or
    URI); epoch millis (an integer) bind to a Date."""
    if error.validator != "type" or not isinstance(error.instance, (int, float, bool)):
        return False
    expected = error.validator_value
    if "string" not in ([expected] if isinstance(expected, str) else expected):
        return False
    fmt = error.schema.get("format")
    if fmt == "date-time":
        return isinstance(error.instance, int) and not isinstance(error.instance, bool)
    return fmt not in ("uuid", "uri")


# -- OpenLineage bodies (ref §1.2, §1.3) ---------------------------------------------------------


def check_openlineage(schemas: Schemas, body: Any, *, batch: bool) -> list[dict[str, Any]]:
    """The events of a valid body, or OM's 400. The whole batch is refused for one bad event."""
    relative = f"{OPENLINEAGE}/openLineage{'BatchRequest' if batch else 'RunEvent'}.json"
    if not isinstance(body, dict):
        raise OMError(400, "Invalid request format", rule="format", detail="not an object")
    events = body.get("events") if batch else [body]
    schemas.check(relative, body)
    return list(events or [])


# -- tables (ref §3.4) ---------------------------------------------------------------------------


def check_columns(columns: list[dict[str, Any]]) -> None:
    """DatabaseUtil.validateColumns: the IllegalArgumentExceptions of ref §3.4 (400)."""
    seen: set[str] = set()
    primary_keys = 0
    for column in columns:
        name, data_type = column.get("name"), column.get("dataType")
        if not name or data_type is None:  # bean validation, when no schema did it
            raise OMError(400, "[query param dataType must not be null]", rule="required")
        if data_type not in DATA_TYPES:
            raise OMError(400, "Invalid request format", rule="format", detail=str(data_type))
        if name in seen:
            raise OMError(400, f"Column name {name} is repeated", rule="column")
        seen.add(name)
        if data_type in {"CHAR", "VARCHAR", "BINARY", "VARBINARY"} and (
            column.get("dataLength") is None
        ):
            raise OMError(
                400,
                "For column data types char, varchar, binary, varbinary dataLength must not be null",
                rule="column",
            )
        if data_type == "ARRAY" and column.get("arrayDataType") is None:
            raise OMError(
                400, "For column data type array, arrayDataType must not be null", rule="column"
            )
        if data_type == "STRUCT":
            if column.get("children") is None:
                raise OMError(
                    400, "For column data type struct, children must not be null", rule="column"
                )
            check_columns(column["children"])
        if column.get("scale") is not None:
            if column.get("precision") is None:
                raise OMError(
                    400,
                    f"Scale is set but precision is not set for the column {name}",
                    rule="column",
                )
            if column["scale"] > column["precision"]:
                raise OMError(
                    400,
                    f"Scale can't be greater than the precision for the column {name}",
                    rule="column",
                )
        if column.get("constraint") == "PRIMARY_KEY":
            primary_keys += 1
    if primary_keys > 1:  # ref §3.4 gives the status, not the text: this wording is ours
        raise OMError(400, "More than one column has a PRIMARY_KEY constraint", rule="column")


def stored_columns(table_fqn: str, columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Columns as OM stores them: server-set FQN, `dataTypeDisplay` lower-cased (defaulting to
    the data type), `arrayDataType` dropped on non-arrays (ref §3.4)."""
    out = []
    for column in copy.deepcopy(columns):
        fqn = f"{table_fqn}.{quote(column['name'])}"
        column["fullyQualifiedName"] = fqn
        column["dataTypeDisplay"] = str(column.get("dataTypeDisplay") or column["dataType"]).lower()
        if column["dataType"] != "ARRAY":
            column.pop("arrayDataType", None)
        if column.get("children"):
            column["children"] = stored_columns(fqn, column["children"])
        out.append(column)
    return out


def quote(name: str) -> str:
    """FullyQualifiedName.quoteName: a name containing `.` is wrapped in double quotes."""
    return f'"{name}"' if "." in name else name
