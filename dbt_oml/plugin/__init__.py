"""dbt-core plugin: the events of `dbt-oml build` from inside a plain `dbt build` (opt-in).

dbt-core imports every installed top-level `dbt_*` module and instantiates the classes in its
`plugins` list once per command (`dbt.plugins.manager`, marked experimental by dbt). `dbt_oml`
exposes this module's `plugins` lazily, so the import stays cheap. The plugin does nothing unless
switched on (`DBT_OML_PLUGIN=1`, the dbt var `dbt_oml_plugin: true`, or a `dbt_oml.duckdb` entry in
the dbt-duckdb target's `plugins:`; that order of precedence), and never inside dbt-oml's own dbt
runs. A failure inside it is reported on one line and never breaks or hangs dbt.

The plugin sits beside the CLI, over the pipeline: nothing in dbt_oml may import it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dbt.plugins.manager import dbtPlugin

from dbt_oml.dbt.own_runs import in_own_run
from dbt_oml.plugin.notice import warn

#: The environment variable and the dbt var that switch the plugin on.
ENV_SWITCH = "DBT_OML_PLUGIN"
VAR_SWITCH = "dbt_oml_plugin"


def switched_on(
    environ: Mapping[str, str], dbt_vars: Mapping[str, Any], *, in_profile: bool = False
) -> bool:
    """Whether the plugin is on: the environment variable, else the dbt var, else the profile.

    >>> switched_on({"DBT_OML_PLUGIN": "1"}, {}), switched_on({}, {"dbt_oml_plugin": True})
    (True, True)
    >>> switched_on({"DBT_OML_PLUGIN": "0"}, {"dbt_oml_plugin": True}), switched_on({}, {})
    (False, False)
    >>> switched_on({}, {}, in_profile=True)
    True
    >>> switched_on({}, {"dbt_oml_plugin": False}, in_profile=True)
    False
    """
    from dbt_oml.config import truthy  # here: importing the plugin module stays light

    if environ.get(ENV_SWITCH, "").strip():
        return truthy(environ[ENV_SWITCH])
    var = dbt_vars.get(VAR_SWITCH)
    if var is not None and str(var).strip():
        return truthy(var)
    return in_profile


def profile_settings() -> dict[str, Any] | None:
    """The `config:` of the `dbt_oml.duckdb` entry in the target's `plugins:` (profiles.yml), or
    None when the target has no such entry."""
    import click

    ctx = click.get_current_context(silent=True)
    profile = (ctx.obj or {}).get("profile") if ctx is not None else None
    for entry in getattr(getattr(profile, "credentials", None), "plugins", None) or ():
        if getattr(entry, "module", None) == "dbt_oml.duckdb":
            config = getattr(entry, "config", None)
            return dict(config) if isinstance(config, Mapping) else {}
    return None


def _dbt_vars() -> dict[str, Any]:
    """The project's top-level vars overlaid with --vars, as dbt resolved them."""
    import click
    from dbt.flags import get_flags

    out: dict[str, Any] = {}
    ctx = click.get_current_context(silent=True)
    project = (ctx.obj or {}).get("project") if ctx is not None else None
    project_vars = getattr(getattr(project, "vars", None), "vars", None)
    if isinstance(project_vars, dict):
        out.update({k: v for k, v in project_vars.items() if not isinstance(v, dict)})
    cli_vars = getattr(get_flags(), "VARS", None)  # type: ignore[no-untyped-call]
    if isinstance(cli_vars, dict):
        out.update(cli_vars)
    return out


class DbtOmlPlugin(dbtPlugin):
    """Subscribes a dbt-oml session to dbt's events for this command, when switched on."""

    def initialize(self) -> None:
        try:
            if in_own_run():
                return
            in_profile = profile_settings()
            if not switched_on(os.environ, _dbt_vars(), in_profile=in_profile is not None):
                return
            from dbt_common.events.event_manager_client import add_callback_to_manager

            from dbt_oml.plugin.session import PluginSession

            session = PluginSession.start(os.environ, profile=in_profile)
            if session is not None:
                add_callback_to_manager(session.callback)
        except Exception as e:  # noqa: BLE001 - dbt turns any exception here into a failed command
            warn(f"not started ({type(e).__name__}: {e}); dbt runs without lineage")


plugins = [DbtOmlPlugin]
