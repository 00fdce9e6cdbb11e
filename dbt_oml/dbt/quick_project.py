"""The project and its DuckDB target resolved without dbt-core's config loaders, when that is
safe: what `dbt-oml emit`, `lineage`, `impact` and `verify` need before reading artifacts.

dbt's loaders import most of dbt-core (0.9 s and about 80 MiB before a single artifact is read,
on a cold pod: benchmarks/README.md section 0). The common case needs little of it: a `duckdb`
target whose templates call `env_var` and `var` only. That case is rendered here as dbt renders
it (the same profile and target choice, each string rendered alone, a lone `{{ var(...) }}`
keeping its value's type, dates as ISO text), and its catalogs read as dbt-duckdb reads them
where every version agrees (a file `x.duckdb` is the catalog `x`; attachments by alias or file
stem). Anything else (another adapter, another Jinja name, a filter, a secret variable, a key
whose meaning is dbt-duckdb's, MotherDuck, an unreadable file) returns None, and dbt's loaders
resolve it and say what is wrong. Importing dbt-duckdb's credentials class alone would load the
whole adapter (0.4 s).
tests/unit/test_quick_project.py holds this equal to dbt's loaders.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from types import SimpleNamespace
from typing import Any

from dbt_oml.redaction import secrets_of

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_TEMPLATE = re.compile(r"\{[{%#]")
_LONE_VAR = re.compile(r"^\{\{\s*var\((?P<args>[^{}]*)\)\s*\}\}$")
#: dbt's prefix of variables it keeps out of logs; its placeholder logic is left to dbt.
_SECRET_PREFIX = "DBT_ENV_SECRET"  # noqa: S105 - a name prefix, not a secret


class _UnsureError(Exception):
    """The quick path cannot promise dbt's answer: dbt's loaders decide."""


class _Renderer:
    """dbt's rendering of profile and project values, for env_var and var only."""

    def __init__(self, environ: Mapping[str, str], cli_vars: Mapping[str, Any]) -> None:
        from jinja2 import StrictUndefined
        from jinja2.sandbox import SandboxedEnvironment

        self.environ = environ
        self.cli_vars = cli_vars
        self.env = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
        self.env.globals = {"env_var": self._env_var, "var": self._var}
        self.env.filters = {}

    def _env_var(self, name: str, default: str | None = None) -> str:
        if name.startswith(_SECRET_PREFIX):
            raise _UnsureError
        if name in self.environ:
            return self.environ[name]
        if default is None:
            raise _UnsureError  # dbt's error says it best
        return default

    def _var(self, name: str, default: Any = None) -> Any:
        if name in self.cli_vars:
            return self.cli_vars[name]
        if default is None:
            raise _UnsureError
        return default

    def value(self, value: Any) -> Any:
        if isinstance(value, dt.date):
            return value.isoformat()
        if not isinstance(value, str) or _TEMPLATE.search(value) is None:
            return value
        from jinja2 import TemplateError

        try:
            lone = _LONE_VAR.match(value)
            if lone is not None:  # dbt keeps a single expression's value as it is
                return self.env.compile_expression(f"var({lone['args']})")()
            return self.env.from_string(value).render()
        except (TemplateError, TypeError, ValueError) as e:
            raise _UnsureError from e

    def data(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        return self.value(value)


def _yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise _UnsureError from e
    if not isinstance(doc, dict):
        raise _UnsureError
    return doc


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _UnsureError
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class QuickTarget:
    """What dbt's loaders would make of a project and its DuckDB target (dbt.project reads it
    into a ResolvedProject)."""

    project_name: str
    project_version: str | None
    profile_name: str
    target_name: str
    target_path: Path
    credentials: SimpleNamespace
    """`path`, `database` and `attach` (each `path`, `alias`, `type`, `is_ducklake`)."""
    secrets: tuple[str, ...] = field(repr=False)


def quick_target(
    project_dir: Path,
    profiles: Path,
    *,
    profile: str | None,
    target: str | None,
    target_path: Path | None,
    cli_vars: Mapping[str, Any],
    environ: Mapping[str, str],
) -> QuickTarget | None:
    """What dbt's loaders would give, or None when only they can say."""
    try:
        render = _Renderer(environ, cli_vars)
        return _resolve(
            render,
            project_dir,
            profiles,
            profile_given=profile,
            target_given=target,
            target_path=target_path,
        )
    except _UnsureError:
        return None
    except Exception:  # noqa: BLE001 - a value dbt would refuse: dbt's loaders say why
        return None


def _resolve(
    render: _Renderer,
    project_dir: Path,
    profiles: Path,
    *,
    profile_given: str | None,
    target_given: str | None,
    target_path: Path | None,
) -> QuickTarget:
    project = _yaml(project_dir / "dbt_project.yml")
    name = _text(render.value(project.get("name")))
    version = render.value(project.get("version"))
    if version is not None and not isinstance(version, str):
        raise _UnsureError
    profile_name = profile_given or _text(render.value(project.get("profile")))
    profile = _yaml(profiles / "profiles.yml").get(profile_name)
    if not isinstance(profile, dict):
        raise _UnsureError
    target_name = target_given or _text(render.value(profile.get("target", "default")))
    outputs = profile.get("outputs")
    output = outputs.get(target_name) if isinstance(outputs, dict) else None
    if not isinstance(output, dict) or output.get("type") != "duckdb":
        raise _UnsureError
    rendered = render.data(dict(output))
    credentials = _duckdb_credentials(rendered)
    path = target_path or Path(_text(render.value(project.get("target-path", "target"))))
    return QuickTarget(
        project_name=name,
        project_version=version or None,
        profile_name=profile_name,
        target_name=target_name,
        target_path=path if path.is_absolute() else project_dir / path,
        credentials=credentials,
        secrets=tuple(secrets_of(rendered)),
    )


#: Target keys whose meaning the quick path knows; any other leaves the target to dbt-duckdb.
_KNOWN_KEYS = frozenset(
    {
        "type", "threads", "path", "database", "schema", "attach", "extensions", "settings",
        "config_options", "secrets", "external_root", "use_credential_provider", "filesystems",
        "plugins", "disable_transactions", "keep_open", "module_paths", "retries",
    }
)  # fmt: skip
_ATTACH_KEYS = frozenset({"path", "alias", "type", "secret", "read_only", "is_ducklake", "options"})


def _duckdb_credentials(target: dict[str, Any]) -> SimpleNamespace:
    """What catalogs_of reads of dbt-duckdb's credentials, for a target whose every key and
    name all dbt-duckdb versions read alike (a plain file or :memory:, attachments with a path);
    anything else (MotherDuck, a remote, a database named apart from its file) is unsure."""
    if not _KNOWN_KEYS.issuperset(target):
        raise _UnsureError
    path = target.get("path", ":memory:")
    if not isinstance(path, str):
        raise _UnsureError
    derived = _file_catalog(path)
    attach = []
    for item in target.get("attach") or ():
        if not isinstance(item, dict) or not _ATTACH_KEYS.issuperset(item):
            raise _UnsureError
        att_path, alias, kind = item.get("path"), item.get("alias"), item.get("type")
        if not isinstance(att_path, str) or any(
            v is not None and not isinstance(v, str) for v in (alias, kind)
        ):
            raise _UnsureError
        lake = item.get("is_ducklake")
        attach.append(SimpleNamespace(path=att_path, alias=alias, type=kind, is_ducklake=lake))
    database = target.get("database", derived)
    if database != derived:  # dbt-duckdb allows an attachment's alias, or refuses: its call
        raise _UnsureError
    return SimpleNamespace(path=path, database=database, attach=attach)


def _file_catalog(path: str) -> str:
    """The catalog a DuckDB file opens as, where every dbt-duckdb version agrees: `x.duckdb` ->
    `x`, `:memory:` -> `memory`.

    >>> _file_catalog("/data/warehouse.duckdb"), _file_catalog(":memory:")
    ('warehouse', 'memory')
    """
    if path == ":memory:":
        return "memory"
    if _SCHEME.match(path):
        raise _UnsureError  # md:, ducklake:, s3://: each version names them its own way
    name = PurePath(path).name
    if name.startswith(".") or name.count(".") > 1 or not name.strip("."):
        raise _UnsureError  # `my.db.duckdb`, `.hidden.duckdb`: versions differ
    return name.split(".")[0]
