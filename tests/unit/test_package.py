"""Package-level contracts: a pure core, an inert import, a stable public API."""

from __future__ import annotations

import json
import subprocess
import sys

import dbt_oml

CORE = [
    "dbt_oml.lineage.model",
    "dbt_oml.lineage.batch",
    "dbt_oml.lineage.view",
    "dbt_oml.events.quality",
    "dbt_oml.events.facets",
    "dbt_oml.artifacts",
    "dbt_oml.namespaces",
    "dbt_oml.events.builder",
    "dbt_oml.events.invocation",
    "dbt_oml.events.ids",
    "dbt_oml.lineage.filerefs",
]


def _modules_after_import(*modules: str) -> set[str]:
    code = "import json, sys\n" + "".join(f"import {m}\n" for m in modules)
    code += "print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def test_core_imports_no_io_libraries() -> None:
    loaded = _modules_after_import(*CORE)
    # openlineage-python's package __init__ imports its transports (httpx2, requests): that is
    # the client's, not ours. Our core must not pull in click, nats, dbt or our own I/O modules.
    banned = {
        "click",
        "nats",
        "dbt",
        "dbt_oml.cli",
        "dbt_oml.pipeline.live",
        "dbt_oml.dbt.runner",
        "dbt_oml.delivery.emitter",
        "dbt_oml.config",
        "dbt_oml.pipeline.run_state",
        "dbt_oml.pipeline.offline",
        "dbt_oml.pipeline.lineage",
        "dbt_oml.lineage.cache",
        "dbt_oml.pipeline.console",
        "dbt_oml.plugin",
        "dbt_oml.plugin.session",
        "dbt_oml.dbt.relation_columns",
    }
    assert not banned & loaded


def test_import_is_inert_and_cheap() -> None:
    loaded = _modules_after_import("dbt_oml")
    assert "dbt" not in loaded
    assert "openlineage" not in loaded
    assert "sqlglot" not in loaded


def test_the_dbt_plugin_module_is_light_until_switched_on() -> None:
    # dbt imports it in every command; the heavy parts load only in a switched-on session
    loaded = _modules_after_import("dbt_oml.plugin")
    assert not {"openlineage", "sqlglot", "dbt_oml.pipeline.live", "dbt_oml.config"} & loaded


def test_public_api() -> None:
    assert dbt_oml.__all__ == sorted(dbt_oml.__all__)
    for name in dbt_oml.__all__:
        assert hasattr(dbt_oml, name)
