"""What the process environment says beyond DBT_OML_*: dbt-ol's and OpenLineage's variables,
the seed script's OM_* variables, and which values are secrets.

Reads only the `environ` mapping it is given (and, for openlineage.yml, whether files exist).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from dbt_oml.errors import ConfigError
from dbt_oml.redaction import SECRET_KEY, secrets_of
from dbt_oml.runs import Orchestrator, RunRef

#: OpenLineage / dbt-ol variables honoured for compatibility, below their DBT_OML_ names.
COMPAT_ENV: Mapping[str, str] = {
    "OPENLINEAGE_NAMESPACE": "job_namespace",
    "OPENLINEAGE_DBT_JOB_NAME": "parent_job_name",
    "OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME": "extended_job_name",
}
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
#: Environment variables whose values are secrets even when their names do not say so.
_SECRET_ENV_PREFIXES: Final = ("DBT_ENV_SECRET_",)
#: Variables whose names look secret but are not (the shell's working directories).
_NOT_SECRET_ENV: Final = frozenset({"PWD", "OLDPWD"})


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


def _from_context(text: str) -> Orchestrator:
    var = "OPENLINEAGE_CONTEXT"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(key=var, source="environment", reason=f"invalid JSON ({e})") from e
    parent_doc = doc.get("parent") if isinstance(doc, Mapping) else None
    if parent_doc is None:
        raise ConfigError(key=var, source="environment", reason="has no parent")
    parent = _context_ref(parent_doc, var)
    root = _context_ref(parent_doc["root"], var) if parent_doc.get("root") else parent
    return Orchestrator(parent=parent, root=root)


def orchestrator(environ: Mapping[str, str]) -> Orchestrator | None:
    """The orchestrator's runs from dbt-ol's variables: OPENLINEAGE_CONTEXT wins over the IDs.

    >>> orchestrator({"OPENLINEAGE_PARENT_ID": "airflow/dag.task/01a2"}).parent.name
    'dag.task'
    """
    if environ.get("OPENLINEAGE_CONTEXT"):
        return _from_context(environ["OPENLINEAGE_CONTEXT"])
    if not environ.get("OPENLINEAGE_PARENT_ID"):
        return None
    parent = _run_ref(environ["OPENLINEAGE_PARENT_ID"], "OPENLINEAGE_PARENT_ID")
    root_id = environ.get("OPENLINEAGE_ROOT_PARENT_ID")
    root = _run_ref(root_id, "OPENLINEAGE_ROOT_PARENT_ID") if root_id else parent
    return Orchestrator(parent=parent, root=root)


def om_transport(environ: Mapping[str, str]) -> dict[str, str] | None:
    """The openmetadata transport the OM_* variables describe, when OM_HOST is set."""
    if not environ.get("OM_HOST"):
        return None
    return {"type": "openmetadata"} | {
        key: environ[var] for var, key in OM_ENV.items() if environ.get(var)
    }


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
