"""The dbt project as dbt's own loaders resolve it (project, profile, target, target path, the
connection's catalogs), for the commands that read artifacts without running dbt."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbt_oml.dbt.quick_project import quick_target
from dbt_oml.errors import ConfigError
from dbt_oml.namespaces import CatalogSpec
from dbt_oml.redaction import secrets_of

logger = logging.getLogger(__name__)


def catalogs_of(adapter_type: str, credentials: Any) -> tuple[CatalogSpec, ...]:
    """The catalogs of a connection: the main database first, then every attachment."""
    database = str(getattr(credentials, "database", "") or "main")
    if adapter_type != "duckdb":
        host = getattr(credentials, "host", None) or getattr(credentials, "server", None)
        port = getattr(credentials, "port", None)
        conn = f"host={host} port={port}" if host else ""
        return (CatalogSpec(alias=database, type=adapter_type, path=conn),)
    path = str(getattr(credentials, "path", "") or ":memory:")
    specs = [CatalogSpec(alias=database, type="duckdb", path=path)]
    for attachment in getattr(credentials, "attach", None) or ():
        att_path = str(attachment.path)
        kind = (attachment.type or "duckdb").lower()
        if attachment.is_ducklake or att_path.startswith("ducklake:"):
            kind = "ducklake"
        alias = attachment.alias or Path(att_path.split("?", 1)[0]).stem
        specs.append(CatalogSpec(alias=alias, type=kind, path=att_path))
    return tuple(specs)


def credential_secrets(credentials: Any) -> tuple[str, ...]:
    """The profile's passwords and tokens, as dbt resolved them (for the run's redactor).

    Covers secret-named fields (password, token, motherduck_token, a secret's `secret`) and
    secrets inside strings (an attachment's `password=`/`passwd=`, a URL's user info).
    """
    to_dict = getattr(credentials, "to_dict", None)
    doc: object
    try:
        doc = to_dict(omit_none=True) if callable(to_dict) else vars(credentials)
    except (TypeError, ValueError, AttributeError):
        doc = getattr(credentials, "__dict__", {})
    return tuple(secrets_of(doc))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectOptions:
    """dbt's project options for the commands that do not run dbt (emit, lineage)."""

    project_dir: Path
    profiles_dir: Path | None = None
    profile: str | None = None
    target: str | None = None
    target_path: Path | None = None
    cli_vars: dict[str, Any] = field(default_factory=dict)
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedProject:
    """What dbt's own loaders make of ProjectOptions."""

    project_name: str
    project_dir: Path
    profile_name: str | None
    project_version: str | None
    target_name: str | None
    target_path: Path
    adapter_type: str
    catalogs: tuple[CatalogSpec, ...] = field(repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """The profile's passwords and tokens, for the run's redactor."""


def target_path_of(options: ProjectOptions) -> Path:
    """dbt's target directory for the project options, without loading a profile.

    --target-path / DBT_TARGET_PATH, else dbt_project.yml's `target-path`, else `target`;
    a relative path is under the project directory, as dbt reads it.
    """
    path = options.target_path
    if path is None:
        configured = _project_value(options.project_dir / "dbt_project.yml", "target-path")
        path = Path(configured or "target")
    return path if path.is_absolute() else options.project_dir / path


def _project_value(path: Path, key: str) -> str | None:
    """A plain (Jinja-free) string setting of dbt_project.yml, if it has one."""
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    value = doc.get(key) if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value and "{{" not in value else None


def resolve_project(options: ProjectOptions) -> ResolvedProject:
    """Resolve project, profile, target and catalogs with dbt's own loaders (no dbt run), or
    as they would for a plain DuckDB target (dbt.quick_project, without loading them)."""
    project_dir = options.project_dir
    if not (project_dir / "dbt_project.yml").is_file():
        raise ConfigError(
            key="project-dir",
            source=str(project_dir),
            reason="has no dbt_project.yml",
            hint="pass --project-dir or set DBT_PROJECT_DIR",
        )
    profiles = options.profiles_dir or (
        project_dir if (project_dir / "profiles.yml").is_file() else Path.home() / ".dbt"
    )
    _check_profiles_dir(profiles)
    return quick_resolved(options, profiles) or dbt_resolved(options, profiles)


def quick_resolved(options: ProjectOptions, profiles: Path) -> ResolvedProject | None:
    """resolve_project for a plain DuckDB target without dbt's loaders (dbt.quick_project), or
    None when only they can say."""
    quick = quick_target(
        options.project_dir,
        profiles,
        profile=options.profile,
        target=options.target,
        target_path=options.target_path,
        cli_vars=options.cli_vars,
        environ=options.environ,
    )
    if quick is None:
        return None
    return ResolvedProject(
        project_name=quick.project_name,
        project_version=quick.project_version,
        project_dir=options.project_dir,
        profile_name=quick.profile_name,
        target_name=quick.target_name,
        target_path=quick.target_path,
        adapter_type="duckdb",
        catalogs=catalogs_of("duckdb", quick.credentials),
        secrets=quick.secrets,
    )


def dbt_resolved(options: ProjectOptions, profiles: Path) -> ResolvedProject:
    """resolve_project by dbt's own loaders."""
    from argparse import Namespace as Args

    from dbt.config.runtime import load_profile, load_project
    from dbt.flags import set_from_args
    from dbt_common.context import set_invocation_context
    from dbt_common.exceptions import DbtBaseException

    project_dir = options.project_dir
    set_invocation_context(dict(options.environ))
    args = Args(PROFILES_DIR=str(profiles), TARGET=options.target, PROFILE=options.profile)
    set_from_args(args, None)
    try:
        loaded = load_profile(
            str(project_dir), options.cli_vars, options.profile, options.target, None
        )
        project = load_project(str(project_dir), False, loaded, options.cli_vars)
    except DbtBaseException as e:
        if "Could not find adapter type" in str(e):
            return _without_adapter(options, profiles)
        raise ConfigError(
            key="profile",
            source=str(profiles),
            reason=dbt_message(e),
            hint="pass --profiles-dir/--target as for dbt",
        ) from e
    target_path = options.target_path or Path(project.target_path)
    adapter = str(loaded.credentials.type)
    return ResolvedProject(
        project_name=str(project.project_name),
        project_version=str(getattr(project, "version", "") or "") or None,
        project_dir=project_dir,
        profile_name=loaded.profile_name,
        target_name=loaded.target_name,
        target_path=target_path if target_path.is_absolute() else project_dir / target_path,
        adapter_type=adapter,
        catalogs=catalogs_of(adapter, loaded.credentials),
        secrets=credential_secrets(loaded.credentials),
    )


def _check_profiles_dir(profiles: Path) -> None:
    """dbt says "Could not find profile named ..." for a missing directory or file, which sends
    people to the wrong place."""
    reason = None if profiles.is_dir() else "the directory does not exist"
    if reason is None and not (profiles / "profiles.yml").is_file():
        reason = "has no profiles.yml"
    if reason is not None:
        raise ConfigError(
            key="profiles-dir",
            source=str(profiles),
            reason=reason,
            hint="pass --profiles-dir (or DBT_PROFILES_DIR) as for dbt",
        )


def dbt_message(error: Exception) -> str:
    r"""dbt's whole message, one line per problem: its heading ("Runtime Error") dropped and a
    list's items (`- local`, `- servers`) joined to the line that introduces them.

    >>> dbt_message(ValueError("Runtime Error\n  No target 'prod'. Valid:\n   - local\n   - dev"))
    "No target 'prod'. Valid: local, dev"
    """
    lines: list[str] = []
    for raw in str(error).strip().splitlines():
        line = raw.strip()
        if not line or (not lines and line.endswith("Error") and " " in line and ":" not in line):
            continue  # blank, or dbt's heading ("Runtime Error", "Compilation Error")
        if line.startswith("- ") and lines:
            joiner = " " if lines[-1].endswith(":") else ", "
            lines[-1] = f"{lines[-1]}{joiner}{line[2:].strip()}"
        else:
            lines.append(line)
    return "\n".join(lines) or type(error).__name__


def _without_adapter(options: ProjectOptions, profiles: Path) -> ResolvedProject:
    """Artifacts from a warehouse whose dbt adapter is not installed here (emit, lineage).

    dbt's loaders still read and render the project and the profile (env_var, vars); the
    target's type, host, port and database give the catalog, as the adapter's credentials would.
    """
    from types import SimpleNamespace

    from dbt.config.profile import read_profile
    from dbt.config.project import load_raw_project
    from dbt.config.renderer import ProfileRenderer

    raw_project = load_raw_project(str(options.project_dir))
    profile_name = options.profile or str(raw_project.get("profile") or "")
    renderer = ProfileRenderer(options.cli_vars)
    raw = read_profile(str(profiles)).get(profile_name) or {}
    target_name = options.target or str(renderer.render_value(raw.get("target") or "default"))
    output = (raw.get("outputs") or {}).get(target_name)
    if not isinstance(output, dict):
        raise ConfigError(
            key="profile",
            source=str(profiles),
            reason=f"no target {target_name!r} in profile {profile_name!r}",
            hint="pass --profiles-dir/--profile/--target as for dbt",
        )
    target = renderer.render_data(output)
    adapter = str(target.get("type") or "")
    credentials = SimpleNamespace(
        host=target.get("host") or target.get("server"),
        port=target.get("port"),
        database=target.get("database") or target.get("dbname") or target.get("project"),
        path=target.get("path"),
        attach=None,
    )
    target_path = options.target_path or Path(str(raw_project.get("target-path") or "target"))
    return ResolvedProject(
        project_name=str(raw_project.get("name") or options.project_dir.name),
        project_version=str(raw_project.get("version") or "") or None,
        project_dir=options.project_dir,
        profile_name=profile_name or None,
        target_name=target_name,
        target_path=(
            target_path if target_path.is_absolute() else options.project_dir / target_path
        ),
        adapter_type=adapter,
        catalogs=catalogs_of(adapter, credentials),
        secrets=tuple(secrets_of(target)),
    )
