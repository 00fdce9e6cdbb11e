"""DuckDB (and dbt catalog) column types -> OpenMetadata Column definitions.

Pure. OpenMetadata's `dataType` is a closed enum of 86 values and its REST API rejects some
shapes (CHAR/VARCHAR/BINARY/VARBINARY without `dataLength`, ARRAY without `arrayDataType`,
STRUCT without `children`, a scale without a precision). The original spelling is always kept in
`dataTypeDisplay`, so a type that maps to UNKNOWN still reads right in the UI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

#: The fields of an OM column that say its type (om_column writes them).
TYPE_FIELDS: Final = (
    "dataType",
    "dataTypeDisplay",
    "dataLength",
    "precision",
    "scale",
    "arrayDataType",
    "children",
)

#: DuckDB's unbounded strings are declared like SQL Server's varchar(max): 2^31 - 1.
MAX_LENGTH: Final = 2_147_483_647
#: DECIMAL(precision) or DECIMAL(precision, scale).
_DECIMAL_PARAMS: Final = 2

_SIMPLE: Mapping[str, str] = {
    "BOOLEAN": "BOOLEAN",
    "BOOL": "BOOLEAN",
    "LOGICAL": "BOOLEAN",
    "TINYINT": "TINYINT",
    "INT1": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INT2": "SMALLINT",
    "SHORT": "SMALLINT",
    "INTEGER": "INT",
    "INT": "INT",
    "INT4": "INT",
    "SIGNED": "INT",
    "MEDIUMINT": "INT",
    "BIGINT": "BIGINT",
    "INT8": "BIGINT",
    "LONG": "BIGINT",
    "HUGEINT": "NUMBER",
    "UHUGEINT": "NUMBER",
    "VARINT": "NUMBER",
    "BIGNUM": "NUMBER",
    "UTINYINT": "UINT",
    "USMALLINT": "UINT",
    "UINTEGER": "UINT",
    "UBIGINT": "UINT",
    "FLOAT": "FLOAT",
    "FLOAT4": "FLOAT",
    "REAL": "FLOAT",
    "DOUBLE": "DOUBLE",
    "FLOAT8": "DOUBLE",
    "DOUBLE PRECISION": "DOUBLE",
    "DATE": "DATE",
    "TIME": "TIME",
    "TIME WITH TIME ZONE": "TIME",
    "TIMETZ": "TIME",
    "TIMESTAMP": "TIMESTAMP",
    "DATETIME": "TIMESTAMP",
    "TIMESTAMP_S": "TIMESTAMP",
    "TIMESTAMP_MS": "TIMESTAMP",
    "TIMESTAMP_NS": "TIMESTAMP",
    "TIMESTAMP_US": "TIMESTAMP",
    "TIMESTAMP WITHOUT TIME ZONE": "TIMESTAMP",
    "TIMESTAMPTZ": "TIMESTAMPZ",
    "TIMESTAMP WITH TIME ZONE": "TIMESTAMPZ",
    "INTERVAL": "INTERVAL",
    "UUID": "UUID",
    "JSON": "JSON",
    "BLOB": "BLOB",
    "BYTEA": "BLOB",
    "BINARY": "BLOB",
    "VARBINARY": "BLOB",
    "BIT": "BIT",
    "BITSTRING": "BIT",
    "NULL": "NULL",
    "GEOMETRY": "GEOMETRY",
}
_STRINGS = frozenset(
    {"VARCHAR", "TEXT", "STRING", "CHAR", "BPCHAR", "NVARCHAR", "CHARACTER VARYING"}
)
_DECIMALS = frozenset({"DECIMAL", "NUMERIC", "NUMBER"})
_PARAMS = re.compile(r"^(?P<base>[A-Z_ ]+?)\s*\((?P<args>.*)\)$", re.S)


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses or quotes."""
    parts, depth, quote, current = [], 0, "", []
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def _struct_field(part: str) -> tuple[str, str]:
    part = part.strip()
    if part.startswith('"'):
        end = part.index('"', 1)
        while end + 1 < len(part) and part[end + 1] == '"':  # "" escapes a quote
            end = part.index('"', end + 2)
        return part[1:end].replace('""', '"'), part[end + 1 :].strip()
    name, _, rest = part.partition(" ")
    return name, rest.strip()


def om_column(name: str, type_: str | None, description: str | None = None) -> dict[str, Any]:
    """An OpenMetadata Column for a column of the given (DuckDB) type.

    >>> email = om_column("email", "VARCHAR")
    >>> email["dataLength"], email["dataTypeDisplay"]
    (2147483647, 'VARCHAR(MAX)')
    >>> om_column("amount", "DECIMAL(12,2)") == {"name": "amount", "dataType": "DECIMAL",
    ...     "dataTypeDisplay": "DECIMAL(12,2)", "precision": 12, "scale": 2}
    True
    >>> om_column("geo", "POINT_2D")["dataType"], om_column("geo", "POINT_2D")["dataTypeDisplay"]
    ('UNKNOWN', 'POINT_2D')
    """
    column: dict[str, Any] = {"name": name, **_type(type_)}
    if description:
        column["description"] = description
    return column


def _type(type_: str | None) -> dict[str, Any]:  # noqa: C901, PLR0911 - a type-mapping ladder, one return per OM type
    spelled = (type_ or "").strip()
    upper = spelled.upper()
    if not upper:
        return {"dataType": "UNKNOWN", "dataTypeDisplay": "unknown"}
    if upper.endswith("]"):  # INTEGER[] (list) or INTEGER[3] (array)
        element = spelled[: spelled.rindex("[")]
        inner = _type(element)
        return {
            "dataType": "ARRAY",
            "arrayDataType": inner["dataType"],
            "dataTypeDisplay": spelled,
        }
    if upper in _SIMPLE:
        return {"dataType": _SIMPLE[upper], "dataTypeDisplay": spelled}
    if upper in _STRINGS:
        return {"dataType": "VARCHAR", "dataLength": MAX_LENGTH, "dataTypeDisplay": "VARCHAR(MAX)"}
    if upper in _DECIMALS:  # DuckDB's default DECIMAL is (18,3)
        return {"dataType": "DECIMAL", "dataTypeDisplay": spelled, "precision": 18, "scale": 3}
    match = _PARAMS.match(upper)
    if match is None:
        return {"dataType": "UNKNOWN", "dataTypeDisplay": spelled}
    base = match.group("base").strip()
    args_upper = match.group("args")
    args = spelled[spelled.index("(") + 1 : spelled.rindex(")")]
    if base in _STRINGS and args_upper.strip().isdigit():
        kind = "CHAR" if base in {"CHAR", "BPCHAR"} else "VARCHAR"
        return {"dataType": kind, "dataLength": int(args_upper), "dataTypeDisplay": spelled}
    if base in _DECIMALS:
        numbers = [p.strip() for p in args_upper.split(",")]
        if all(n.isdigit() for n in numbers) and 1 <= len(numbers) <= _DECIMAL_PARAMS:
            out = {"dataType": "DECIMAL", "dataTypeDisplay": spelled, "precision": int(numbers[0])}
            out["scale"] = int(numbers[1]) if len(numbers) == _DECIMAL_PARAMS else 0
            return out
    if base == "STRUCT":
        children = [om_column(*_struct_field(p)) for p in _split_top(args)]
        return {"dataType": "STRUCT", "dataTypeDisplay": spelled, "children": children}
    if base in {"MAP", "UNION", "ENUM"}:
        return {"dataType": base, "dataTypeDisplay": spelled}
    if base in {"LIST", "ARRAY"}:
        inner = _type(args)
        return {"dataType": "ARRAY", "arrayDataType": inner["dataType"], "dataTypeDisplay": spelled}
    return {"dataType": "UNKNOWN", "dataTypeDisplay": spelled}
