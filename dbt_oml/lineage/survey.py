"""One walk over a parsed query before sqlglot qualifies it: its tables, DuckDB file scans
(`from 'data/x.parquet'`) and struct syntax, and whether DuckDB's name resolution (`resolve`) is
needed at all.

Pure: marks file scans in the tree it is given; no I/O.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Final

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.schema import MappingSchema

#: Marks a `from 'path'` table (DuckDB's replacement scan) before sqlglot qualifies tables.
FILE_SCAN: Final = "dbt_oml_file_scan"


def is_file_name(name: str) -> bool:
    """Whether a one-part table name is a path DuckDB reads as a file (a replacement scan)."""
    return "/" in name or "://" in name or "." in name


@dataclass(frozen=True, slots=True)
class Survey:
    """What one walk over a parsed query found, before sqlglot qualifies its tables."""

    tables: list[exp.Table]
    file_scans: list[exp.Table]
    ctes: frozenset[str]
    struct_syntax: bool
    """Deep dotted names, `x.*` on a non-relation, or UNNEST: sqlglot needs help with those."""
    unscoped: str = ""
    """A CTE or subquery that is no query sqlglot can scope (DuckDB's SUMMARIZE, SHOW): its name."""


def survey(tree: exp.Expr) -> Survey:
    """One walk: tables, file scans (`from 'data/x.parquet'`, marked and given DuckDB's alias,
    the file's stem) and struct syntax."""
    tables: list[exp.Table] = []
    files: list[exp.Table] = []
    ctes: set[str] = set()
    aliases: set[str] = set()
    suspects: list[exp.Column] = []
    explode = False
    unscoped = ""
    # sqlglot's compiled walk hands over only these kinds (identifiers, literals and the rest,
    # most of a tree, never reach this loop); the order is the walk's
    for node in tree.find_all(exp.Table, exp.CTE, exp.Subquery, exp.Explode, exp.Column):
        if isinstance(node, exp.Table):
            tables.append(node)
            aliases.add(node.alias_or_name)
            if (
                isinstance(node.this, exp.Identifier)
                and not node.args.get("db")
                and is_file_name(node.name)
            ):
                files.append(node)
                node.meta[FILE_SCAN] = True
                if not node.alias:
                    stem = posixpath.basename(node.name.rstrip("/")).split(".")[0] or node.name
                    node.set("alias", exp.TableAlias(this=exp.to_identifier(stem)))
                    aliases.add(stem)
        elif isinstance(node, exp.CTE | exp.Subquery):
            ctes.add(node.alias_or_name)
            if not isinstance(node.this, exp.Query | exp.Table | exp.UDTF | exp.Subquery):
                unscoped = unscoped or node.this.key.upper()
        elif isinstance(node, exp.Explode):
            explode = True
        elif isinstance(node, exp.Column) and (
            node.args.get("db") or (isinstance(node.this, exp.Star) and node.table)
        ):
            suspects.append(node)
    deep = any(c.table not in aliases and c.table not in ctes for c in suspects)
    return Survey(tables, files, frozenset(ctes), explode or deep, unscoped)


def unqualify_file_scans(found: Survey) -> None:
    """Undo the default catalog and schema sqlglot gives every table, for file scans."""
    for table in found.file_scans:
        table.set("db", None)
        table.set("catalog", None)


def needs_resolution(found: Survey, schema: MappingSchema) -> bool:
    """Does the query read a relation with unknown columns, or use struct syntax sqlglot does
    not resolve by itself?"""
    if found.struct_syntax or found.file_scans:
        return True
    for table in found.tables:
        if isinstance(table.this, exp.Func):
            return True
        if not table.args.get("db") and table.name in found.ctes:
            continue
        if not column_names(schema, table):
            return True
    return False


def column_names(schema: MappingSchema, table: exp.Table) -> list[str]:
    try:
        return schema.column_names(table)
    except SqlglotError:
        return []
