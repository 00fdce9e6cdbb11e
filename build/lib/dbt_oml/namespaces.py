"""Derive each catalog's OpenLineage namespace from the profile dbt resolved.

Pure: no I/O and no environment. A namespace names the server a catalog really lives on
(OpenLineage naming spec): a DuckDB file, a PostgreSQL or MySQL server, a SQLite file, and so on.
User names, passwords, tokens and query parameters never survive into a namespace.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from dbt_oml.errors import NamespaceError


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogSpec:
    """One catalog of the connection: the main database or an `attach:` entry."""

    alias: str
    """The catalog name dbt renders as the relation's database."""
    type: str
    """duckdb, sqlite, postgres, mysql, mssql, motherduck, ... (the attach `type`)."""
    path: str = field(repr=False)
    """The raw path or connection string; may hold secrets, so it is never shown."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Namespaces:
    """The namespace of every catalog, and the one used for catalogs the profile does not list."""

    by_catalog: Mapping[str, str]
    fallback: str

    def for_database(self, database: str | None) -> str:
        """The namespace of a relation in `database` (case-insensitive catalog match).

        >>> ns = Namespaces(by_catalog={"crm": "mysql://db:3306"}, fallback="duckdb://w")
        >>> ns.for_database("CRM"), ns.for_database(None)
        ('mysql://db:3306', 'duckdb://w')
        """
        if database is None:
            return self.fallback
        if database in self.by_catalog:
            return self.by_catalog[database]
        lowered = {k.lower(): v for k, v in self.by_catalog.items()}
        return lowered.get(database.lower(), self.fallback)


_KV = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)")


def _keyvalues(conn: str) -> dict[str, str]:
    """libpq / MySQL style `key=value key=value` pairs (values may be single-quoted)."""
    return {k.lower(): v.strip("'") for k, v in _KV.findall(conn)}


def _server(conn: str, *, scheme: str, default_port: int, catalog: str) -> str:
    """`scheme://host:port` from a URI or key=value connection string, secrets dropped."""
    host: str | None
    port: str | int | None
    if "://" in conn:
        parts = urlsplit(conn)
        host, port = parts.hostname, parts.port
    elif ";" in conn:  # ODBC / ADO style: Server=host,port;Database=...
        pairs = {
            k.strip().lower(): v.strip()
            for k, _, v in (p.partition("=") for p in conn.split(";") if "=" in p)
        }
        server = pairs.get("server") or pairs.get("data source") or pairs.get("address") or ""
        server = server.removeprefix("tcp:")
        host, _, port = server.partition(",")
    else:
        pairs = _keyvalues(conn)
        host, port = pairs.get("host") or pairs.get("hostaddr"), pairs.get("port")
    if not host:
        raise NamespaceError(
            catalog=catalog,
            adapter=scheme,
            reason="the connection string names no host (a secret or service file?)",
        )
    if host.startswith("/"):  # a Unix socket directory means this machine
        host = "localhost"
    return f"{scheme}://{host.lower()}:{port or default_port}"


def _local_path(path: str, cwd: str) -> str:
    return posixpath.normpath(path if posixpath.isabs(path) else posixpath.join(cwd, path))


def _strip_uri(uri: str) -> str:
    parts = urlsplit(uri)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return f"{parts.scheme}://{netloc}{parts.path}"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Ctx:
    cwd: str
    duckdb_default: str | None


def _duckdb(spec: CatalogSpec, ctx: _Ctx) -> str:
    path = spec.path.strip()
    if path in {"", ":memory:"} or path.startswith(":memory:"):
        return "duckdb://memory" if ctx.duckdb_default is None else _fill(ctx, spec, path)
    if path.startswith(("md:", "motherduck:")):
        db = path.split(":", 1)[1].split("?", 1)[0] or spec.alias
        return f"motherduck://{db}"
    if "://" in path:
        return _strip_uri(path)
    if ctx.duckdb_default is not None:
        return _fill(ctx, spec, path)
    return f"duckdb://{_local_path(path, ctx.cwd)}"


def _fill(ctx: _Ctx, spec: CatalogSpec, path: str) -> str:
    assert ctx.duckdb_default is not None
    stem = posixpath.splitext(posixpath.basename(path))[0] or spec.alias
    return ctx.duckdb_default.replace("{alias}", spec.alias).replace("{stem}", stem)


def _sqlite(spec: CatalogSpec, ctx: _Ctx) -> str:
    return f"sqlite://{_local_path(spec.path.strip(), ctx.cwd)}"


def _server_rule(scheme: str, port: int) -> Callable[[CatalogSpec, _Ctx], str]:
    def rule(spec: CatalogSpec, _ctx: _Ctx) -> str:
        return _server(spec.path, scheme=scheme, default_port=port, catalog=spec.alias)

    return rule


#: How each catalog type maps to a namespace. Add a row to support a new attach type.
RULES: Mapping[str, Callable[[CatalogSpec, _Ctx], str]] = {
    "duckdb": _duckdb,
    "sqlite": _sqlite,
    "postgres": _server_rule("postgres", 5432),
    "postgresql": _server_rule("postgres", 5432),
    "mysql": _server_rule("mysql", 3306),
    "mariadb": _server_rule("mysql", 3306),
    "mssql": _server_rule("mssql", 1433),
    "sqlserver": _server_rule("mssql", 1433),
    "redshift": _server_rule("redshift", 5439),
}


def namespace_for(spec: CatalogSpec, *, cwd: str = "/", duckdb_default: str | None = None) -> str:
    """The namespace of one catalog.

    Args:
        spec: the catalog, as the profile declares it.
        cwd: the directory relative DuckDB/SQLite paths are resolved against.
        duckdb_default: a namespace for DuckDB files (may use `{alias}` and `{stem}`); when
            None, a DuckDB file's namespace is `duckdb://` + its absolute path.

    Raises:
        NamespaceError: an unsupported type, or a connection string without a host.

    >>> namespace_for(CatalogSpec(alias="pg", type="postgres",
    ...     path="host=db.internal port=5433 dbname=src user=etl password=s3cret"))
    'postgres://db.internal:5433'
    >>> namespace_for(CatalogSpec(alias="w", type="duckdb", path="w.duckdb"), cwd="/pods/run")
    'duckdb:///pods/run/w.duckdb'
    >>> namespace_for(CatalogSpec(alias="w", type="duckdb", path="w.duckdb"),
    ...     duckdb_default="duckdb://my_dbt")
    'duckdb://my_dbt'
    """
    rule = RULES.get(spec.type.lower())
    if rule is None:
        raise NamespaceError(
            catalog=spec.alias, adapter=spec.type, reason=f"unsupported catalog type {spec.type!r}"
        )
    return rule(spec, _Ctx(cwd=cwd, duckdb_default=duckdb_default))


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    namespaces: Namespaces
    problems: tuple[NamespaceError, ...] = ()


def resolve_namespaces(
    catalogs: Sequence[CatalogSpec],
    *,
    overrides: Mapping[str, str],
    duckdb_default: str | None = None,
    cwd: str = "/",
) -> Resolution:
    """Namespaces for every catalog; the first catalog is the connection's main database.

    A catalog whose namespace cannot be derived gets `<type>://<alias>` and is reported in
    `problems`, so one odd attachment never costs the run its events.
    """
    by_catalog: dict[str, str] = {}
    problems: list[NamespaceError] = []
    lowered = {k.lower(): v for k, v in overrides.items()}
    for spec in catalogs:
        override = overrides.get(spec.alias) or lowered.get(spec.alias.lower())
        if override:
            by_catalog[spec.alias] = override
            continue
        try:
            by_catalog[spec.alias] = namespace_for(spec, cwd=cwd, duckdb_default=duckdb_default)
        except NamespaceError as e:
            problems.append(e)
            by_catalog[spec.alias] = f"{spec.type.lower()}://{spec.alias}"
    for alias, namespace in overrides.items():
        by_catalog.setdefault(alias, namespace)
    fallback = by_catalog[catalogs[0].alias] if catalogs else (duckdb_default or "duckdb://memory")
    return Resolution(
        namespaces=Namespaces(by_catalog=by_catalog, fallback=fallback), problems=tuple(problems)
    )
