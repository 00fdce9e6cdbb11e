"""Real passwords on the `servers` target: never in events, dbt-oml's stderr or the outbox.

A dedicated MariaDB user and PostgreSQL role get passwords full of `@ : / # % ;` (PostgreSQL's
also `?` and a space; DuckDB's MySQL DSN parser accepts neither). A good build and a build
whose MariaDB attach fails on a wrong password must not write either password anywhere dbt-oml
writes. Skips when the servers are not reachable.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.conftest import CliRun, copy_project, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.servers]

USER = "dbt_oml_secret"
MYSQL_PW = "p@ss:w/rd#%;My-77"
WRONG_MYSQL_PW = "wr0ng@:/#%;Pw-88"
PG_PW = "p@ss:w/rd?#%; Pg-99"


def _reachable(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _admin() -> Any:
    """A DuckDB connection with both servers attached as their admin users."""
    missing = [n for n, port in (("PostgreSQL", 5432), ("MariaDB", 3306)) if not _reachable(port)]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not reachable on 127.0.0.1 (.ci/run starts them)")
    duckdb_ext = pytest.importorskip("duckdb_ext", reason="needs dbt-oml[offline-ext]")
    import duckdb

    con = duckdb.connect(
        config={
            "extension_directory": duckdb_ext.get_extension_dir(),
            "autoinstall_known_extensions": False,
        }
    )
    con.execute("ATTACH 'host=127.0.0.1 port=3306 user=root' AS m (TYPE mysql)")
    con.execute("ATTACH 'host=127.0.0.1 port=5432 dbname=test user=postgres' AS p (TYPE postgres)")
    return con


def _drop_users(con: Any) -> None:
    con.execute(f"CALL mysql_execute('m', $$DROP USER IF EXISTS '{USER}'@'%'$$)")
    # the role owns what the build created in PostgreSQL: hand it back to postgres first
    drop_role = (
        f"DO $x$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{USER}') THEN "
        f"EXECUTE 'REASSIGN OWNED BY {USER} TO postgres'; EXECUTE 'DROP ROLE {USER}'; "
        "END IF; END $x$"
    )
    con.execute("CALL postgres_execute('p', ?)", [drop_role])


@pytest.fixture(scope="module")
def users(_servers_lock: None) -> Iterator[str]:
    """The dedicated users, dropped again at the end; yields DuckDB's extension directory."""
    con = _admin()
    schemas = con.execute("select schema_name from duckdb_schemas() where database_name = 'm'")
    if ("dbt_oml_crm",) not in schemas.fetchall():
        con.execute("CREATE SCHEMA m.dbt_oml_crm")  # a MySQL database
    _drop_users(con)
    con.execute(f"CALL mysql_execute('m', $$CREATE USER '{USER}'@'%' IDENTIFIED BY '{MYSQL_PW}'$$)")
    con.execute(f"CALL mysql_execute('m', $$GRANT ALL ON *.* TO '{USER}'@'%'$$)")
    # PostgreSQL's loopback trust auth accepts any password: the password still travels the
    # same connection string, which is what must not leak
    con.execute(
        f"CALL postgres_execute('p', $$CREATE ROLE {USER} LOGIN SUPERUSER PASSWORD '{PG_PW}'$$)"
    )
    import duckdb_ext

    try:
        yield duckdb_ext.get_extension_dir()
    finally:
        _drop_users(con)
        con.close()


def _build(tmp: Path, ext_dir: str, mysql_pw: str) -> CliRun:
    proj = copy_project(tmp / "project")
    profiles = proj / "profiles.yml"
    # libpq reads a password with a space only when quoted (MySQL's DSN takes no quotes)
    profiles.write_text(
        profiles.read_text().replace(
            "(' password=' ~ env_var('DBT_OML_PG_PASSWORD'))",
            "(' password=\\\\'' ~ env_var('DBT_OML_PG_PASSWORD') ~ '\\\\'')",
        )
    )
    env = {
        "DUCKDB_EXT_DIR": ext_dir,
        "DBT_OML_MYSQL_USER": USER,
        "DBT_OML_MYSQL_PASSWORD": mysql_pw,
        "DBT_OML_PG_USER": USER,
        "DBT_OML_PG_PASSWORD": PG_PW,
    }
    return run_cli(["build", "--profiles-dir", ".", "--target", "servers"], cwd=proj, env=env)


def _written_by_dbt_oml(run: CliRun) -> dict[str, str]:
    """Every file dbt-oml wrote (events, outbox, reasons, state) and its stderr."""
    out = {"stderr": run.stderr}
    for folder in (run.target / "openlineage", run.target / "dbt_oml"):
        for path in folder.rglob("*") if folder.is_dir() else ():
            if path.is_file() and "lineage-cache" not in path.parts:
                out[str(path)] = path.read_text(errors="replace")
    return out


def _leaks(run: CliRun, *passwords: str) -> list[str]:
    forms = {f for pw in passwords for f in (pw, quote(pw, safe=""), pw.replace(" ", ""))}
    return [
        f"{where}: {f!r}"
        for where, text in _written_by_dbt_oml(run).items()
        for f in forms
        if f in text
    ]


def test_a_good_run_keeps_both_passwords(users: str, tmp_path: Path) -> None:
    run = _build(tmp_path, users, MYSQL_PW)
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(run.events) > 50
    assert _leaks(run, MYSQL_PW, PG_PW) == []


def test_a_failed_attach_keeps_the_wrong_password(users: str, tmp_path: Path) -> None:
    run = _build(tmp_path, users, WRONG_MYSQL_PW)
    assert run.returncode == 2, run.stderr[-3000:]
    [end] = [e for e in run.events if e["eventType"] == "FAIL"]
    message = end["run"]["facets"]["errorMessage"]["message"]
    assert "Access denied" in message
    assert "passwd=***" in message
    assert _leaks(run, WRONG_MYSQL_PW, PG_PW) == []
