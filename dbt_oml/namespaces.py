"""Derive each catalog's OpenLineage namespace from the profile dbt resolved.

Pure: no I/O and no environment. A namespace names the server a catalog really lives on
(OpenLineage naming spec): a DuckDB file, a PostgreSQL or MySQL server, a SQLite file, and so on.
User names, passwords, tokens and query parameters never survive into a namespace.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from dbt_oml.errors import ConfigError, NamespaceError
from dbt_oml.redaction import mask

if TYPE_CHECKING:
    from dbt_oml.config import Settings


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
_ODBC = re.compile(r"(?:^|;)\s*(?:server|data source|address|addr)\s*=", re.IGNORECASE)
#: host (name, IPv4 or [IPv6]) and an optional port, then the end of the authority.
_AUTHORITY = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[\w.\-]+)(?::(?P<port>\d*))?(?=[/?#]|$)")


_HOST = re.compile(r"\[[0-9A-Fa-f:.]+\]|[\w.\-]+")
_SCHEME = re.compile(r"\s*(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://")


def _is_url(text: str) -> bool:
    return _SCHEME.match(text) is not None


@dataclass(frozen=True, slots=True)
class _Url:
    scheme: str
    host: str
    port: int | None
    path: str


def _split_url(url: str) -> _Url | None:
    """scheme, host, port and path of a URL whose password may hold `@ : / ? #` unencoded.

    The host is what follows the last `@` that is followed by a valid authority (so an `@`
    in the query string can be mistaken for the end of the user info: safe, never a leak). urlsplit
    stops at the first `/`, `?` or `#` and reads a password's fragment as a port (raising a
    ValueError that quotes it). None when no authority parses. Never raises, and never
    returns the user info.

    >>> _split_url("postgresql://etl:s3cr?t/PW@db.internal:6432/src?sslmode=require")
    _Url(scheme='postgresql', host='db.internal', port=6432, path='/src')
    """
    head = _SCHEME.match(url)
    if head is None:
        return None
    scheme, rest = head["scheme"], url[head.end() :].rstrip()
    # with an `@` the authority follows one: position 0 is user info then, never the host
    starts = [i + 1 for i, c in enumerate(rest) if c == "@"] or [0]
    for start in reversed(starts):
        match = _AUTHORITY.match(rest, start)
        if match is None:
            continue
        port = match["port"]
        tail = rest[match.end() :]
        path = tail.split("?", 1)[0].split("#", 1)[0]
        return _Url(
            scheme=scheme.lower(),
            host=match["host"].lower(),
            port=int(port) if port else None,
            path=path,
        )
    return None


def _keyvalues(conn: str) -> dict[str, str]:
    """libpq / MySQL style `key=value key=value` pairs (values may be single-quoted)."""
    return {k.lower(): v.strip("'") for k, v in _KV.findall(conn)}


def _odbc(conn: str) -> tuple[str, str]:
    """(host, port) of an ODBC / ADO string: `Server=tcp:host,port;Database=...`."""
    pairs = {
        k.strip().lower(): v.strip()
        for k, _, v in (p.partition("=") for p in conn.split(";") if "=" in p)
    }
    server = ""
    for key in ("server", "data source", "address", "addr"):
        server = server or pairs.get(key, "")
    host, _, port = server.removeprefix("tcp:").partition(",")
    return host.strip(), port.strip()


def _server(conn: str, *, scheme: str, default_port: int, catalog: str) -> str:
    """`scheme://host:port` from a URI or key=value connection string, secrets dropped.

    Errors name the catalog and what is missing, never the connection string (it holds
    passwords).
    """
    host: str | None
    port: str | int | None
    if _is_url(conn):
        url = _split_url(conn)
        host, port = (url.host, url.port) if url else (None, None)
    elif _ODBC.search(conn):
        host, port = _odbc(conn)
    else:
        pairs = _keyvalues(conn)
        host, port = pairs.get("host") or pairs.get("hostaddr"), pairs.get("port")
    if port is not None and not str(port).isdigit():
        port = None  # a port that is not a number is no port (and may be a secret's fragment)
    if not host:
        raise NamespaceError(
            catalog=catalog,
            adapter=scheme,
            reason="the connection string names no host (a secret or service file?)",
        )
    if host.startswith("/"):  # a Unix socket directory means this machine
        host = "localhost"
    if not _HOST.fullmatch(host):
        raise NamespaceError(
            catalog=catalog, adapter=scheme, reason="the connection string's host does not parse"
        )
    return f"{scheme}://{host.lower()}:{port or default_port}"


def _local_path(path: str, cwd: str) -> str:
    return posixpath.normpath(path if posixpath.isabs(path) else posixpath.join(cwd, path))


def _strip_uri(uri: str, catalog: str) -> str:
    url = _split_url(uri)
    if url is None:
        raise NamespaceError(catalog=catalog, adapter="duckdb", reason="the file URL names no host")
    netloc = f"{url.host}:{url.port}" if url.port else url.host
    return f"{url.scheme}://{netloc}{url.path}"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Ctx:
    cwd: str
    duckdb_default: str | None


def _duckdb(spec: CatalogSpec, ctx: _Ctx) -> str:
    path = spec.path.strip()
    if path in {"", ":memory:"} or path.startswith(":memory:"):
        return (
            "duckdb://memory"
            if ctx.duckdb_default is None
            else _fill(ctx.duckdb_default, spec, path)
        )
    if path.startswith(("md:", "motherduck:")):
        db = path.split(":", 1)[1].split("?", 1)[0] or spec.alias
        return f"motherduck://{db}"
    if _is_url(path):
        return _strip_uri(path, spec.alias)
    if ctx.duckdb_default is not None:
        return _fill(ctx.duckdb_default, spec, path)
    # the path as the profile writes it, as dbt-ol names it: an absolute path would differ per
    # checkout (and per pod's temporary directory), a relative one names the same file everywhere;
    # a `password=...` in it (a path that is no URL: `s3:password=...`) is masked all the same
    return f"duckdb://{mask(path)}"


def _fill(template: str, spec: CatalogSpec, path: str) -> str:
    stem = posixpath.splitext(posixpath.basename(path))[0] or spec.alias
    return template.replace("{alias}", spec.alias).replace("{stem}", stem)


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
        cwd: the directory relative SQLite paths are resolved against.
        duckdb_default: a namespace for DuckDB files (may use `{alias}` and `{stem}`); when
            None, a DuckDB file's namespace is `duckdb://` + its path as the profile writes it
            (dbt-ol's form: a relative path stays relative).

    Raises:
        NamespaceError: an unsupported type, or a connection string without a host.

    >>> namespace_for(CatalogSpec(alias="pg", type="postgres",
    ...     path="host=db.internal port=5433 dbname=src user=etl password=s3cret"))
    'postgres://db.internal:5433'
    >>> namespace_for(CatalogSpec(alias="w", type="duckdb", path="w.duckdb"), cwd="/pods/run")
    'duckdb://w.duckdb'
    >>> namespace_for(CatalogSpec(alias="w", type="duckdb", path="/data/w.duckdb"))
    'duckdb:///data/w.duckdb'
    >>> namespace_for(CatalogSpec(alias="w", type="duckdb", path="w.duckdb"),
    ...     duckdb_default="duckdb://my_dbt")
    'duckdb://my_dbt'
    """
    rule = RULES.get(spec.type.lower())
    if rule is None:
        raise NamespaceError(
            catalog=spec.alias, adapter=spec.type, reason=f"unsupported catalog type {spec.type!r}"
        )
    try:
        return rule(spec, _Ctx(cwd=cwd, duckdb_default=duckdb_default))
    except ValueError:
        # the parsers' messages quote the connection string, which holds passwords
        raise NamespaceError(
            catalog=spec.alias, adapter=spec.type, reason="the connection string does not parse"
        ) from None


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
    named = {alias.lower() for alias in by_catalog}
    for alias, namespace in overrides.items():
        if alias.lower() not in named:  # `CRM=` for catalog crm is crm's, not a second catalog
            by_catalog[alias] = namespace
    fallback = by_catalog[catalogs[0].alias] if catalogs else (duckdb_default or "duckdb://memory")
    return Resolution(
        namespaces=Namespaces(by_catalog=by_catalog, fallback=fallback), problems=tuple(problems)
    )


def check_overrides(
    overrides: Mapping[str, str], catalogs: Iterable[str | None], *, source: str = "namespaces"
) -> None:
    """Refuse an override that names no catalog of the project (a typo would silently do nothing).

    Args:
        overrides: catalog -> namespace, as configured.
        catalogs: the project's catalogs: the profile's (main database, attachments) and the
            databases of the manifest's relations; matched case-insensitively.
        source: where the overrides were read, for the message.

    Raises:
        ConfigError: one line naming the unknown catalogs (the closest known one for each) and
            listing the project's catalogs.

    >>> check_overrides({"crm": "mssql://s:1433"}, ["crm", "warehouse"])
    >>> check_overrides({"crmm": "mssql://s:1433"}, ["crm", "dw", "warehouse"])
    Traceback (most recent call last):
    ...
    dbt_oml.errors.ConfigError: config 'namespaces' (namespaces): names no catalog of the \
project: 'crmm' (did you mean 'crm'?); its catalogs: crm, dw, warehouse
    """
    known = {c.lower(): c for c in catalogs if c}
    unknown = [name for name in overrides if name.lower() not in known]
    if not unknown:
        return
    names = []
    for name in unknown:
        close = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
        names.append(f"{name!r}" + (f" (did you mean {known[close[0]]!r}?)" if close else ""))
    valid = ", ".join(sorted(set(known.values()), key=str.lower)) or "none"
    raise ConfigError(
        key="namespaces",
        source=source,
        reason=f"names no catalog of the project: {', '.join(names)}",
        hint=f"its catalogs: {valid}",
    )


class _Relation(Protocol):
    @property
    def database(self) -> str | None: ...


def override_error(
    settings: Settings, catalogs: Iterable[str], relations: Iterable[_Relation] = ()
) -> ConfigError | None:
    """check_overrides for the settings' overrides against the profile's catalogs and the
    databases of the manifest's relations; the error returned, None when all are known."""
    names = [*catalogs, *(r.database for r in relations)]
    try:
        check_overrides(
            settings.namespace.namespaces,
            names,
            source=settings.sources.get("namespaces", "namespaces"),
        )
    except ConfigError as e:
        return e
    return None
