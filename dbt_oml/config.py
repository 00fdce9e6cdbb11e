"""dbt-oml's settings and the one function that reads them.

`load_settings` is the only code in dbt_oml that reads the environment or a config file.
Precedence, lowest first: defaults < config file (dbt-oml.yml) < DBT_OML_* environment variables
(and the OpenLineage variables dbt-ol honours) < command-line flags the user actually gave.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from dbt_oml.errors import ConfigError
from dbt_oml.redaction import SECRET_KEY, secrets_of
from dbt_oml.runs import JobNaming, Orchestrator, RunRef

#: The config file looked for in the working directory when none is named.
DEFAULT_CONFIG_FILE: Final = "dbt-oml.yml"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything dbt-oml itself can be told. See the README's configuration reference."""

    namespaces: Mapping[str, str] = field(default_factory=dict)
    """Namespace per catalog (dbt database / attach alias), overriding the derived one."""
    duckdb_namespace: str | None = None
    """Namespace for DuckDB files without an override; may use {alias} and {stem}."""
    docs_generate: bool = True
    """Run `dbt docs generate` after building, for catalog.json (real columns and types)."""
    fail_on_emit_error: bool = False
    """Exit 4 when dbt succeeded but events could not be delivered."""
    job_naming: JobNaming = JobNaming.DBT_OL
    """Node job names: dbt-ol's (histories continue) or unique_id (stable)."""
    job_namespace: str = "dbt"
    """Namespace of the jobs (OPENLINEAGE_NAMESPACE, as for dbt-ol)."""
    parent_job_name: str | None = None
    """Name of the invocation's job; default dbt-run-<project> (as for dbt-ol)."""
    dry_run: bool = False
    """Print the events as one JSON document on stdout and send nothing."""
    column_lineage: bool = True
    """Derive column lineage from the compiled SQL (sqlglot)."""
    allow_empty_column_lineage: bool = False
    """Send even when no event carries column lineage (OpenMetadata would lose what it has)."""
    explorer: bool = False
    """After a build, write the column-lineage explorer page next to the events."""
    outbox_dir: Path | None = None
    """Where undelivered events are kept for `dbt-oml replay`; default <target>/dbt_oml/outbox."""
    events_file: Path | None = None
    """File for the embedded default transport; default <target>/openlineage/events.jsonl."""
    transport: Mapping[str, Any] | None = field(default=None, repr=False)
    """An openlineage-python transport config; None = the client's own configuration."""
    relay: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """`dbt-oml relay`: jetstream, openmetadata, durable, batch, dead_letter_subject."""
    orchestrator: Orchestrator | None = None
    """The orchestrator run that started dbt (OPENLINEAGE_CONTEXT, _PARENT_ID, _ROOT_PARENT_ID)."""
    om_transport: Mapping[str, Any] | None = field(default=None, repr=False)
    """The openmetadata transport the seed script's OM_* variables describe, if any."""
    openlineage_configured: bool = False
    """Whether openlineage-python has a configuration of its own (file or environment)."""
    oml_log_level: str = "INFO"
    """Level of dbt-oml's own log lines on stderr."""
    config_file: Path | None = None
    """The config file that was read, if any."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Secret values seen while reading (passwords, tokens), for the redactor to mask."""


def _bool(value: object, key: str, source: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:
        return False
    raise ConfigError(key=key, source=source, reason=f"{value!r} is not true or false")


def _mapping(value: object, key: str, source: str) -> dict[str, str]:
    """A catalog=namespace mapping from a dict, JSON, or `a=x,b=y` / repeated `a=x` flags."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    items: list[str]
    if isinstance(value, tuple | list):
        items = [str(v) for v in value]
    else:
        text = str(value).strip()
        if text.startswith("{"):
            try:
                return _mapping(json.loads(text), key, source)
            except json.JSONDecodeError as e:
                raise ConfigError(key=key, source=source, reason=f"invalid JSON ({e})") from e
        items = [p for p in text.split(",") if p.strip()]
    out: dict[str, str] = {}
    for item in items:
        catalog, sep, namespace = item.partition("=")
        if not sep or not catalog.strip() or not namespace.strip():
            raise ConfigError(
                key=key,
                source=source,
                reason=f"{item!r} is not CATALOG=NAMESPACE",
                hint="for example crm=mysql://crm-db:3306",
            )
        out[catalog.strip()] = namespace.strip()
    return out


def _naming(value: object, key: str, source: str) -> JobNaming:
    try:
        return JobNaming(str(value))
    except ValueError:
        valid = ", ".join(m.value for m in JobNaming)
        raise ConfigError(
            key=key, source=source, reason=f"{value!r} is not one of {valid}"
        ) from None


def _level(value: object, key: str, source: str) -> str:
    level = str(value).upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise ConfigError(
            key=key, source=source, reason=f"{value!r} is not DEBUG/INFO/WARNING/ERROR"
        )
    return level


def _str(value: object, key: str, source: str) -> str:
    text = str(value).strip()
    if not text:
        raise ConfigError(key=key, source=source, reason="is empty")
    return text


def _path(value: object, key: str, source: str) -> Path:
    return Path(_str(value, key, source)).expanduser()


def _transport(value: object, key: str, source: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or "type" not in value:
        raise ConfigError(
            key=key,
            source=source,
            reason="must be a mapping with a `type`",
            hint="see the openlineage-python transport docs, e.g. {type: http, url: ...}",
        )
    return dict(value)


#: `relay:` keys that are numbers, with their type (each must be above zero).
_RELAY_NUMBERS: Mapping[str, type[int] | type[float]] = {
    "batch": int,
    "ack_wait": float,
    "fetch_timeout": float,
}
_RELAY_KEYS = frozenset({"jetstream", "openmetadata", "durable", "dead_letter_subject"})


def _relay(value: object, key: str, source: str) -> Mapping[str, Any]:
    allowed = sorted(_RELAY_KEYS | set(_RELAY_NUMBERS))
    if not isinstance(value, Mapping):
        raise ConfigError(
            key=key, source=source, reason="must be a mapping of " + ", ".join(allowed)
        )
    unknown = sorted(set(map(str, value)) - set(allowed))
    if unknown:
        raise ConfigError(
            key=f"{key}.{unknown[0]}",
            source=source,
            reason="unknown setting",
            hint="valid settings: " + ", ".join(allowed),
        )
    out = dict(value)
    for name in ("jetstream", "openmetadata"):
        if name in out and not isinstance(out[name], Mapping):
            raise ConfigError(
                key=f"{key}.{name}", source=source, reason="must be a mapping of transport settings"
            )
    for name in ("durable", "dead_letter_subject"):
        if name in out:
            out[name] = _str(out[name], f"{key}.{name}", source)
    for name, kind in _RELAY_NUMBERS.items():
        if name not in out:
            continue
        try:
            number = kind(out[name])
        except (TypeError, ValueError):
            number = 0
        if number <= 0:
            raise ConfigError(
                key=f"{key}.{name}", source=source, reason=f"{out[name]!r} is not a number above 0"
            )
        out[name] = number
    return out


Parser = Callable[[object, str, str], Any]

#: Every setting: its parser. Env name = DBT_OML_<KEY>, flag = --<key-with-dashes>.
KEYS: Mapping[str, Parser] = {
    "namespaces": _mapping,
    "duckdb_namespace": _str,
    "docs_generate": _bool,
    "fail_on_emit_error": _bool,
    "job_naming": _naming,
    "job_namespace": _str,
    "parent_job_name": _str,
    "dry_run": _bool,
    "column_lineage": _bool,
    "allow_empty_column_lineage": _bool,
    "explorer": _bool,
    "outbox_dir": _path,
    "events_file": _path,
    "transport": _transport,
    "relay": _relay,
    "oml_log_level": _level,
}
#: Settings that cannot come from the environment (structured values).
_FILE_ONLY = frozenset({"transport", "relay"})
#: OpenLineage / dbt-ol variables honoured for compatibility, below their DBT_OML_ names.
COMPAT_ENV: Mapping[str, str] = {
    "OPENLINEAGE_NAMESPACE": "job_namespace",
    "OPENLINEAGE_DBT_JOB_NAME": "parent_job_name",
}
_OL_ENV_MARKERS = ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE_DISABLED")
#: The seed script's variables, accepted so its users can switch: OM_* -> openmetadata transport.
OM_ENV: Mapping[str, str] = {
    "OM_HOST": "url",
    "OM_JWT_TOKEN": "jwt_token",
    "OM_JWT_TOKEN_FILE": "jwt_token_file",
    "OM_USER": "user",
    "OM_PASSWORD": "password",
    "OM_CLIENT_ID": "client_id",
    "OM_CLIENT_SECRET": "client_secret",
    "OM_OAUTH_TOKEN_URL": "oauth_token_url",
}


def _run_ref(value: str, var: str) -> RunRef:
    """`namespace/job_name/run_id`, as dbt-ol reads it (the job name may contain slashes)."""
    namespace, _, rest = value.strip().partition("/")
    name, _, run_id = rest.rpartition("/")
    if not namespace or not name or not run_id:
        raise ConfigError(
            key=var, source="environment", reason=f"{value!r} is not namespace/job/run_id"
        )
    return RunRef(namespace=namespace, name=name, run_id=run_id)


def _context_ref(doc: object, var: str) -> RunRef:
    if not isinstance(doc, Mapping):
        raise ConfigError(key=var, source="environment", reason="parent/root must be objects")
    run, job = doc.get("run") or {}, doc.get("job") or {}
    try:
        return RunRef(
            namespace=str(job["namespace"]), name=str(job["name"]), run_id=str(run["runId"])
        )
    except (KeyError, TypeError) as e:
        raise ConfigError(key=var, source="environment", reason=f"missing {e}") from e


def orchestrator(environ: Mapping[str, str]) -> Orchestrator | None:
    """The orchestrator's runs from dbt-ol's variables: OPENLINEAGE_CONTEXT wins over the IDs.

    >>> orchestrator({"OPENLINEAGE_PARENT_ID": "airflow/dag.task/01a2"}).parent.name
    'dag.task'
    """
    if environ.get("OPENLINEAGE_CONTEXT"):
        var = "OPENLINEAGE_CONTEXT"
        try:
            doc = json.loads(environ[var])
        except json.JSONDecodeError as e:
            raise ConfigError(key=var, source="environment", reason=f"invalid JSON ({e})") from e
        parent_doc = doc.get("parent") if isinstance(doc, Mapping) else None
        if parent_doc is None:
            raise ConfigError(key=var, source="environment", reason="has no parent")
        parent = _context_ref(parent_doc, var)
        root = _context_ref(parent_doc["root"], var) if parent_doc.get("root") else parent
        return Orchestrator(parent=parent, root=root)
    if not environ.get("OPENLINEAGE_PARENT_ID"):
        return None
    parent = _run_ref(environ["OPENLINEAGE_PARENT_ID"], "OPENLINEAGE_PARENT_ID")
    root_id = environ.get("OPENLINEAGE_ROOT_PARENT_ID")
    root = _run_ref(root_id, "OPENLINEAGE_ROOT_PARENT_ID") if root_id else parent
    return Orchestrator(parent=parent, root=root)


def env_name(key: str) -> str:
    """The environment variable of a setting.

    >>> env_name("fail_on_emit_error")
    'DBT_OML_FAIL_ON_EMIT_ERROR'
    """
    return "DBT_OML_" + key.upper()


def _read_file(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(key="config", source=str(path), reason="file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(key="config", source=str(path), reason=f"cannot be read ({e})") from e
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise ConfigError(key="config", source=str(path), reason=f"is not valid YAML{line}") from e
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(key="config", source=str(path), reason="must be a mapping of settings")
    return doc


def _openlineage_configured(environ: Mapping[str, str], cwd: Path, home: Path | None) -> bool:
    if any(environ.get(k) for k in _OL_ENV_MARKERS):
        return True
    if any(k.startswith("OPENLINEAGE__") for k in environ):
        return True
    candidates = [cwd / "openlineage.yml"]
    if home is not None:
        candidates.append(home / ".openlineage" / "openlineage.yml")
    return any(p.is_file() for p in candidates)


#: Environment variables whose values are secrets even when their names do not say so.
_SECRET_ENV_PREFIXES = ("DBT_ENV_SECRET_",)
#: Variables whose names look secret but are not (the shell's working directories).
_NOT_SECRET_ENV = frozenset({"PWD", "OLDPWD"})


def secret_values(environ: Mapping[str, str], *docs: object) -> tuple[str, ...]:
    """Secret values in the environment (by variable name) and in config mappings.

    A variable is secret when its name says so (`OM_JWT_TOKEN`, `DBT_OML_PG_PASSWORD`,
    `OPENLINEAGE__TRANSPORT__AUTH__API_KEY`, dbt's `DBT_ENV_SECRET_*`); a mapping's values
    when their keys do, or when a string carries one (a URL's password, `passwd=` in a DSN).

    >>> secret_values({"OM_JWT_TOKEN": "eyJ.x", "HOME": "/root"}, {"url": "nats://u:pw1@n"})
    ('eyJ.x', 'pw1')
    """
    found = [
        value
        for name, value in environ.items()
        if value
        and name not in _NOT_SECRET_ENV
        and (SECRET_KEY.match(name) or name.startswith(_SECRET_ENV_PREFIXES))
    ]
    found += [v for doc in docs for v in secrets_of(doc)]
    return tuple(dict.fromkeys(found))


def load_settings(
    *,
    cli: Mapping[str, object],
    environ: Mapping[str, str],
    cwd: Path,
    home: Path | None = None,
    profile: Mapping[str, object] | None = None,
) -> Settings:
    """Build Settings from flags, environment and config file, in that order of precedence.

    Args:
        cli: the dbt-oml flags the user actually gave (key -> value), plus optionally "config".
        environ: the process environment (tests pass a dict).
        cwd: the working directory (where dbt-oml.yml and openlineage.yml are looked for).
        home: the user's home directory (for ~/.openlineage/openlineage.yml).
        profile: settings from the `config:` of a `dbt_oml.duckdb` entry in the target's
            `plugins:` (profiles.yml); read like a config file, over dbt-oml.yml.

    Raises:
        ConfigError: an unknown key, or a value that does not parse; names the key and source.
    """
    values: dict[str, Any] = {}
    config_path: Path | None = None
    named = cli.get("config") or environ.get("DBT_OML_CONFIG")
    if named:
        config_path = Path(str(named)).expanduser()
    elif (cwd / DEFAULT_CONFIG_FILE).is_file():
        config_path = cwd / DEFAULT_CONFIG_FILE
    if config_path is not None:
        source = str(config_path)
        for key, value in _read_file(config_path).items():
            if key not in KEYS:
                raise ConfigError(
                    key=str(key),
                    source=source,
                    reason="unknown setting",
                    hint="valid settings: " + ", ".join(sorted(KEYS)),
                )
            values[key] = KEYS[key](value, key, source)
    for key, value in (profile or {}).items():
        source = "profiles.yml (plugins: dbt_oml.duckdb config)"
        if key not in KEYS:
            raise ConfigError(
                key=str(key),
                source=source,
                reason="unknown setting",
                hint="valid settings: " + ", ".join(sorted(KEYS)),
            )
        values[key] = KEYS[key](value, key, source)
    for var, key in COMPAT_ENV.items():
        if environ.get(var):
            values[key] = KEYS[key](environ[var], key, var)
    for key, parse in KEYS.items():
        var = env_name(key)
        if key not in _FILE_ONLY and environ.get(var) not in (None, ""):
            values[key] = parse(environ[var], key, var)
    for key, value in cli.items():
        if key == "config" or value is None:
            continue
        if key not in KEYS:
            raise ConfigError(key=key, source="command line", reason="unknown setting")
        values[key] = KEYS[key](value, key, "--" + key.replace("_", "-"))
    configured = _openlineage_configured(environ, cwd, home)
    om_transport = None
    if environ.get("OM_HOST"):
        om_transport = {"type": "openmetadata"} | {
            key: environ[var] for var, key in OM_ENV.items() if environ.get(var)
        }
        if "transport" not in values and not configured:
            values["transport"] = om_transport
    return Settings(
        **values,
        openlineage_configured=configured,
        config_file=config_path,
        om_transport=om_transport,
        orchestrator=orchestrator(environ),
        secrets=secret_values(environ, values.get("transport"), values.get("relay"), om_transport),
    )


# -- where `dbt-oml relay` reads and writes ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sourced:
    """A transport configuration and where it was read (error messages name the real place)."""

    config: Mapping[str, Any]
    """The transport's settings (`type` included)."""
    source: str
    """Where they came from: a file and key, or the environment variables."""


@dataclass(frozen=True, slots=True)
class RelayEnds:
    """What `dbt-oml relay` reads (a JetStream stream) and where it writes (OpenMetadata)."""

    jetstream: Sourced
    openmetadata: Sourced


def find_transport(config: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    """`config` when it is a transport of this kind, or the one of this kind in a composite.

    >>> find_transport({"type": "composite", "transports": {"a": {"type": "jetstream"}}},
    ...                "jetstream")
    {'type': 'jetstream'}
    """
    if not isinstance(config, Mapping):
        return None
    kind_type = str(config.get("type") or "")
    if kind_type == kind or kind_type.endswith(f".{kind}.{_KIND_CLASSES.get(kind, '')}"):
        return config
    if kind_type == "composite":
        members = config.get("transports") or {}
        for member in members.values() if isinstance(members, Mapping) else members:
            found = find_transport(member, kind)
            if found is not None:
                return found
    return None


#: Class names of our kinds, for `type: dbt_oml.transports.<kind>.<Class>`.
_KIND_CLASSES: Final = {
    "jetstream": "JetStreamTransport",
    "openmetadata": "OpenMetadataTransport",
}
_OL_ENV_SOURCE: Final = "OPENLINEAGE__TRANSPORT__* variables"


def openlineage_transport() -> Sourced | None:
    """The transport openlineage-python configures for itself, and where it found it.

    Found as `OpenLineageClient` finds it (its own lookup, reused): the file named by
    OPENLINEAGE_CONFIG, else ./openlineage.yml, else ~/.openlineage/openlineage.yml, merged over
    the OPENLINEAGE__* variables (the file wins). Reads the process environment, as the client does.

    Raises:
        ConfigError: the file is not valid YAML.
    """
    from openlineage.client.client import OpenLineageClient
    from openlineage.client.utils import deep_merge_dicts

    path = OpenLineageClient._find_yaml_config_path()
    from_file = _read_file(Path(path)) if path else {}
    from_env = OpenLineageClient._load_config_from_env_variables() or {}
    transport = deep_merge_dicts(from_env, from_file).get("transport")
    if not isinstance(transport, Mapping) or not transport.get("type"):
        return None
    sources = [f"{path} transport:"] if isinstance(from_file.get("transport"), Mapping) else []
    if isinstance(from_env.get("transport"), Mapping):
        sources.append(_OL_ENV_SOURCE)
    return Sourced(config=dict(transport), source=" + ".join(sources))


def _producer_transport(settings: Settings) -> Sourced | None:
    """The transport `dbt-oml build` sends with (dbt-oml's config wins over openlineage's)."""
    if settings.transport is not None:
        where = f"{settings.config_file} transport:" if settings.config_file else "OM_* variables"
        return Sourced(config=settings.transport, source=where)
    return openlineage_transport() if settings.openlineage_configured else None


def _relay_source(settings: Settings) -> str:
    return f"{settings.config_file} relay:" if settings.config_file else "no dbt-oml.yml"


def relay_ends(settings: Settings) -> RelayEnds:
    """Where the relay reads: `relay.jetstream`, else the producer's own jetstream transport
    (dbt-oml.yml `transport:`, openlineage.yml, OPENLINEAGE__TRANSPORT__*), so the NATS settings
    are written once. Where it writes: `relay.openmetadata`, else OM_HOST and friends, else an
    openmetadata transport.

    Raises:
        ConfigError: either end is missing; names the places that were looked at.
    """
    relay = settings.relay
    producer = _producer_transport(settings)
    jetstream = find_transport(producer.config if producer else None, "jetstream")
    if "jetstream" in relay:
        source = Sourced(config=relay["jetstream"], source=f"{_relay_source(settings)} jetstream")
    elif producer is not None and jetstream is not None:
        source = Sourced(config=jetstream, source=producer.source)
    else:
        found = (
            f"the producer's transport is {producer.config.get('type')!r} ({producer.source})"
            if producer
            else "no transport is configured (dbt-oml.yml, openlineage.yml, OPENLINEAGE__*)"
        )
        raise ConfigError(
            key="relay.jetstream",
            source=_relay_source(settings),
            reason=f"nothing to read from: {found}",
            hint="set a jetstream transport where dbt-oml build reads it "
            "(OPENLINEAGE__TRANSPORT__TYPE=jetstream, openlineage.yml or dbt-oml.yml), "
            "or relay.jetstream in dbt-oml.yml",
        )
    return RelayEnds(jetstream=source, openmetadata=_relay_target(settings, producer))


def _relay_target(settings: Settings, producer: Sourced | None) -> Sourced:
    if "openmetadata" in settings.relay:
        where = f"{_relay_source(settings)} openmetadata"
        return Sourced(config=settings.relay["openmetadata"], source=where)
    if settings.om_transport is not None:
        return Sourced(config=settings.om_transport, source="OM_* variables")
    om = find_transport(producer.config if producer else None, "openmetadata")
    if producer is not None and om is not None:
        return Sourced(config=om, source=producer.source)
    raise ConfigError(
        key="relay.openmetadata",
        source=_relay_source(settings),
        reason="nowhere to write: no OpenMetadata is configured",
        hint="set OM_HOST (and OM_JWT_TOKEN or OM_JWT_TOKEN_FILE), or relay.openmetadata "
        "in dbt-oml.yml",
    )
