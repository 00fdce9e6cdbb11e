"""The `servers` target: sources in MariaDB, marts in PostgreSQL, both on loopback.

.ci/run starts both servers when they are not running; elsewhere these tests skip with the reason.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliRun, copy_project, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.servers]

#: PostgreSQL's loopback trust auth accepts any password; it still travels the attach string.
PG_PW = "pg-Servers-SECRET-7"
#: Never sent to MariaDB (root has none); only the offline emit's profile renders it.
MYSQL_PW = "my-Servers-SECRET-8"


def _reachable(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def servers_run(_servers_lock: None, tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    missing = [
        name for name, port in (("PostgreSQL", 5432), ("MariaDB", 3306)) if not _reachable(port)
    ]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not reachable on 127.0.0.1 (.ci/run starts them)")
    duckdb_ext = pytest.importorskip("duckdb_ext", reason="needs dbt-oml[offline-ext]")
    import duckdb

    ext_dir = duckdb_ext.get_extension_dir()
    con = duckdb.connect(
        config={"extension_directory": ext_dir, "autoinstall_known_extensions": False}
    )
    con.execute("ATTACH 'host=127.0.0.1 port=3306 user=root' AS m (TYPE mysql)")
    schemas = con.execute("select schema_name from duckdb_schemas() where database_name = 'm'")
    if ("dbt_oml_crm",) not in schemas.fetchall():
        con.execute("CREATE SCHEMA m.dbt_oml_crm")  # a MySQL database
    con.close()
    proj = copy_project(tmp_path_factory.mktemp("servers") / "project")
    return run_cli(
        ["build", "--profiles-dir", ".", "--target", "servers"],
        cwd=proj,
        env={"DUCKDB_EXT_DIR": ext_dir, "DBT_OML_PG_PASSWORD": PG_PW},
    )


def _written(run: CliRun) -> dict[str, str]:
    """dbt-oml's stdout and stderr, and every file it wrote (events, outbox, reasons, state)."""
    out = {"stdout": run.stdout, "stderr": run.stderr}
    for folder in (run.target / "openlineage", run.target / "dbt_oml"):
        for path in folder.rglob("*") if folder.is_dir() else ():
            if path.is_file() and "lineage-cache" not in path.parts:
                out[str(path)] = path.read_text(errors="replace")
    return out


def _leaks(run: CliRun, *secrets: str) -> list[str]:
    return [f"{where}: {s}" for where, text in _written(run).items() for s in secrets if s in text]


def test_servers_build_succeeds(servers_run: CliRun) -> None:
    assert servers_run.returncode == 0, servers_run.stderr[-3000:]


def _namespaces(events: list[dict[str, Any]]) -> dict[str, str]:
    namespaces = {}
    for event in events:
        for d in event["inputs"] + event["outputs"]:
            namespaces[d["name"].split(".")[0]] = d["namespace"]
    return namespaces


def test_server_namespaces(servers_run: CliRun) -> None:
    namespaces = _namespaces(servers_run.events)
    assert namespaces["crm"] == "mysql://127.0.0.1:3306"
    assert namespaces["dw"] == "postgres://127.0.0.1:5432"
    assert namespaces["warehouse"] == "duckdb://warehouse.duckdb"  # as profiles.yml writes it
    # the build attached PostgreSQL with PG_PW in its connection string
    assert "dw -> postgres://127.0.0.1:5432" in servers_run.stderr
    assert _leaks(servers_run, PG_PW) == []
    assert not any("password" in e or "passwd" in e for e in map(str, servers_run.events))


def test_mixed_case_survives_the_servers(servers_run: CliRun) -> None:
    names = {d["name"] for e in servers_run.events for d in e["inputs"] + e["outputs"]}
    assert "crm.dbt_oml_crm.Customers" in names
    assert "dw.marts.RevenueByCountry" in names


def test_servers_schema_from_catalog(servers_run: CliRun) -> None:
    stg = [e for e in servers_run.events if e["job"]["name"].endswith("stg_customers.build.run")]
    source = stg[-1]["inputs"][0]
    types = {f["name"]: f.get("type") for f in source["facets"]["schema"]["fields"]}
    assert types["CustomerId"] == "INTEGER"
    assert "VARCHAR" in (types["FirstName"] or "")


def test_secrets_never_reach_namespaces(servers_run: CliRun, tmp_path: Path) -> None:
    """The servers build's artifacts, emitted again with both passwords in the profile."""
    proj = copy_project(tmp_path / "p", parsed=False)
    shutil.copytree(
        servers_run.target, proj / "target", ignore=shutil.ignore_patterns("openlineage")
    )
    run = run_cli(
        ["--dry-run", "emit", "--profiles-dir", ".", "--target", "servers"],
        cwd=proj,
        env={"DBT_OML_PG_PASSWORD": PG_PW, "DBT_OML_MYSQL_PASSWORD": MYSQL_PW},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    shown = "dbt-oml: namespaces: crm -> mysql://127.0.0.1:3306, dw -> postgres://127.0.0.1:5432"
    assert shown in run.stderr
    events = json.loads(run.stdout)["events"]
    assert _namespaces(events)["dw"] == "postgres://127.0.0.1:5432"
    assert _namespaces(events)["crm"] == "mysql://127.0.0.1:3306"
    assert _leaks(run, PG_PW, MYSQL_PW) == []
