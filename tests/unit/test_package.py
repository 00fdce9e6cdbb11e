"""Package-level contracts: a pure core, an inert import, a stable public API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import dbt_oml

CORE = [
    "dbt_oml.lineage.model",
    "dbt_oml.lineage.engine",
    "dbt_oml.lineage.batch",
    "dbt_oml.lineage.view",
    "dbt_oml.events.quality",
    "dbt_oml.events.facets",
    "dbt_oml.artifacts",
    "dbt_oml.namespaces",
    "dbt_oml.events.invocation_events",
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
        "dbt_oml.pipeline.sending",
        "dbt_oml.pipeline.outbox",
        "dbt_oml.pipeline.offline",
        "dbt_oml.pipeline.lineage",
        "dbt_oml.lineage.cache",
        "dbt_oml.console",
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


# The warm path of `dbt-oml emit` after dbt's project loading: lineage for every model that ran
# (from the disk cache in target/) and every event built and serialised, in a fresh interpreter.
_WARM_PATH = """
import json, sys
from datetime import datetime, timezone
from pathlib import Path
from dbt_oml.artifacts import read_artifacts
from dbt_oml.config import load_settings
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.invocation_events import iter_events
from dbt_oml.events.serialize import to_json
from dbt_oml.namespaces import Namespaces
from dbt_oml.pipeline.lineage import ProjectPlace, column_lineage_for
from dbt_oml.pipeline.report import Report

target = Path(sys.argv[1])
artifacts = read_artifacts(target)
report = Report()
lineage = column_lineage_for(
    load_settings(cli={}, environ={}, cwd=target, home=target),
    artifacts,
    place=ProjectPlace(project_root=target, target_path=target, dialect="duckdb",
                       default_catalog="warehouse"),
    report=report,
)
invocation = Invocation(invocation_id="i", started_at=datetime.now(timezone.utc), command="build",
                        project_name="jaffle_oml", profile_name="jaffle_oml", dbt_version="1.11")
settings = EventSettings(producer="https://example.com/dbt-oml", adapter_version="0.1.0",
                         cwd=str(target), project_root=str(target))
events = [to_json(e) for e in iter_events(artifacts, invocation=invocation, lineage=lineage,
          namespaces=Namespaces(by_catalog={}, fallback="duckdb://pod"), settings=settings)]
print(json.dumps({"lineage": len(lineage), "events": len(events),
                  "sqlglot": "sqlglot" in sys.modules}))
"""


def _warm_path(target: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _WARM_PATH, str(target)], capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_a_warm_run_never_loads_sqlglot(mini_target: Path) -> None:
    # every model a cache hit: the cache key needs the engine's version, not the engine. The one
    # model that reads a file by path is left out of the run: finding its file takes a parse.
    results = json.loads((mini_target / "run_results.json").read_text())
    results["results"] = [
        r for r in results["results"] if r["unique_id"] != "model.jaffle_oml.stg_web_events"
    ]
    (mini_target / "run_results.json").write_text(json.dumps(results))
    cold = _warm_path(mini_target)  # analyses every model (and fills the cache)
    warm = _warm_path(mini_target)
    assert cold["sqlglot"] is True
    assert warm["sqlglot"] is False
    assert warm["lineage"] == cold["lineage"] == 7
    assert warm["events"] == cold["events"] > 7


def _declared() -> set[str]:
    import re

    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"].values()
    wanted = [*project["dependencies"], *(w for extra in extras for w in extra)]
    names = {re.split(r"[\s\[<>=!~;]", w, maxsplit=1)[0] for w in wanted}
    return {re.sub(r"[-_.]+", "-", n).lower() for n in names}


def test_every_imported_distribution_is_declared() -> None:
    """What dbt_oml imports comes from a distribution pyproject.toml names (not one that only
    happens to be installed because dbt or openlineage-python needs it today)."""
    import ast
    import importlib.metadata
    import re

    imported: set[str] = set()
    for path in Path(dbt_oml.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"dbt_oml", "__future__"}
    dists = importlib.metadata.packages_distributions()
    undeclared = {
        module: names
        for module in sorted(third_party)
        if not (names := {re.sub(r"[-_.]+", "-", d).lower() for d in dists.get(module, [])})
        & _declared()
    }
    assert not undeclared, undeclared


_EXIT = """
import gc, sys
gc.disable()  # the garbage below waits for the interpreter's last collections


class Noisy:
    def __del__(self):
        sys.stderr.write("collected at exit\\n")


cycle = Noisy()
cycle.me = cycle
del cycle
sys.argv = ["dbt-oml", "--version"]
from dbt_oml.cli import main, run
{call}
"""


@pytest.mark.parametrize(
    ("call", "collected"), [("run()", False), ("raise SystemExit(main())", True)]
)
def test_the_command_leaves_its_heap_to_the_system(call: str, collected: bool) -> None:
    """`dbt-oml` (run) exits without the interpreter's last walk of every object (0.55-0.75 s
    after a 500-model build); `main` returns, for callers that live on, and changes nothing."""
    proc = subprocess.run(
        [sys.executable, "-c", _EXIT.format(call=call)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("dbt-oml")
    assert ("collected at exit" in proc.stderr) is collected


def test_the_console_script_is_the_exiting_entry() -> None:
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="dbt-oml")
    assert script.value == "dbt_oml.cli:run"
