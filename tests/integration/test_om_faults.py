"""The fault matrix of issue 10: every OpenMetadata failure, sent directly and through `flush`.

Each cell runs real dbt (`build -s stg_orders stg_customers`, 18 events) against the loopback OM
stand-in with one fault, and counts: dbt's exit code, what OM holds (the run's lineage where events
were delivered; nothing it held before is damaged), what the outbox holds, that delivered + kept +
rejected = every event built (nothing lost), and that each cause is one ERROR line.

The builds skip `dbt docs generate`: the matrix is about delivery, and the run reads the two
views' real columns from the warehouse at its end instead, so the events carry the same column
lineage. The OM-down build is made once: its cell checks it, and each flush cell flushes a copy
(`flush` runs no dbt: in this process). The other cells start from a fresh copy of the project
(with dbt's saved parse of the same files: copy_project).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    RUN_STG_ORDERS,
    CliRun,
    copy_project,
    free_port,
    run_cli,
    run_in_process,
)
from tests.support.fakes.openmetadata import FakeOpenMetadata, Principal, serve

pytestmark = pytest.mark.integration
#: `build -s stg_orders stg_customers`: the invocation's, the models' and their tests' runs,
#: START and end
EVENTS = 18
BUILD = ["build", *RUN_STG_ORDERS[1:5], "stg_customers", *RUN_STG_ORDERS[5:], "--no-docs-generate"]
#: the run's two edges: each model from its CRM source (under the foreign service)
STG_ORDERS = (
    "crm_ingested.crm.sales.order_lines_v2",
    "duckdb_pod_warehouse.warehouse.staging.stg_orders",
)
STG_CUSTOMERS = (
    "crm_ingested.crm.sales.Customers",
    "duckdb_pod_warehouse.warehouse.staging.stg_customers",
)
#: the words of each failure's cause, which must be one ERROR line (no duplicate, no echo)
CAUSES = {
    "om down": "connection refused",
    "hanging": "timed out",
    "401": "token missing or expired",
    "403 create": "[Create] not allowed",
    "400 for one event": "Invalid request format",
    "failedEvents": "OpenMetadata failed it: boom",
}


@contextmanager
def _hanging_server() -> Iterator[str]:
    """A server that accepts connections and never answers (OM stuck in a GC pause)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop, held = threading.Event(), []

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()


def _is_stg_orders(event: dict[str, Any]) -> bool:
    return event.get("eventType") == "COMPLETE" and any(
        o.get("name", "").endswith("stg_orders") for o in event.get("outputs") or []
    )


def _seed_foreign(om: FakeOpenMetadata) -> None:
    """Something OM already holds that no run may damage."""
    om.seed_table(
        "crm_ingested.crm.sales.order_lines_v2",
        "Mysql",
        {
            "description": "Ingested by OM's MySQL connector.",
            "columns": [
                {"name": n, "dataType": "INT", "description": f"ingested {n}"}
                for n in (
                    "order_id",
                    "line_no",
                    "customer_id",
                    "amount_cents",
                    "status",
                    "ordered_at",
                )
            ],
        },
    )


def _state(om: FakeOpenMetadata) -> dict[str, Any]:
    return {
        fqn: (t.get("description"), [(c["name"], c.get("description")) for c in t["columns"]])
        for fqn, t in om.entities["table"].items()
    }


Fault = Callable[[FakeOpenMetadata], None]
FAULTS: dict[str, tuple[Fault | None, str]] = {
    # name: (how to break the stand-in, what happens to the events: delivered|kept|one-rejected)
    "om down": (None, "kept"),
    # the batch endpoint itself answers 503 twice, then takes the batch
    "503 x2": (lambda om: om.fail_next([503, 503], "/api/v1/openlineage/"), "delivered"),
    "hanging": (None, "kept"),
    "401": (lambda om: om.principals.clear(), "kept"),
    "403 settings": (None, "delivered"),  # the scoped bot itself: settings are admin-only
    "403 create": (
        lambda om: om.add_token(
            "bot-jwt", Principal("lineage-bot", roles=frozenset({"LineageBotRole"}))
        ),
        "kept",
    ),
    "400 for one event": (lambda om: om.reject_events(_is_stg_orders), "one-rejected"),
    "failedEvents": (
        lambda om: om.fail_events(lambda e: "boom" if _is_stg_orders(e) else None),
        "one-rejected",
    ),
}


#: Settings a cell needs beyond the common ones: the 503s come at the batch post, after the
#: bootstrap and dbt metadata requests, so the run's budget (counted from its first request) must
#: still hold two backoffs (0.5 s + 1 s) then
CELL_ENV = {"503 x2": {"OPENLINEAGE__TRANSPORT__RETRY_BUDGET": "30"}}


def _env(url: str, token: Path, **extra: str) -> dict[str, str]:
    env = {
        "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
        "OPENLINEAGE__TRANSPORT__URL": url,
        "OPENLINEAGE__TRANSPORT__JWT_TOKEN_FILE": str(token),
        "OPENLINEAGE__TRANSPORT__SERVICES": "duckdb://pod/crm=crm_ingested",
        "OPENLINEAGE__TRANSPORT__TIMEOUT": "1",
        "OPENLINEAGE__TRANSPORT__RETRY_BUDGET": "3",
    }
    env.update(extra)
    return env


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _delivered(run: CliRun) -> int:
    found = re.search(r"(\d+) delivered to", run.stderr)
    return int(found.group(1)) if found else 0


@contextmanager
def _om_with(fault: str) -> Iterator[tuple[FakeOpenMetadata, str]]:
    om = FakeOpenMetadata.with_bot()
    _seed_foreign(om)
    breaker, _ = FAULTS[fault]
    if fault == "om down":
        yield om, f"http://127.0.0.1:{free_port()}"
    elif fault == "hanging":
        with _hanging_server() as url:
            yield om, url
    else:
        if breaker is not None:
            breaker(om)
        with serve(om) as url:
            yield om, url


def _column_lineage(om: FakeOpenMetadata, edge: tuple[str, str]) -> list[Any] | None:
    """The column lineage OM holds on an edge (None: no such edge)."""
    ends = [om.entity("table", name) for name in edge]
    if None in ends:
        return None
    details = om.edges.get((ends[0]["id"], ends[1]["id"]))  # type: ignore[index]
    return None if details is None else list(details.get("columnsLineage") or [])


def _check(
    om: FakeOpenMetadata, before: dict[str, Any], outbox: Path, delivered: int, fault: str
) -> None:
    kept = _lines(outbox / "openmetadata.jsonl") + _lines(outbox / "openmetadata.rejected.jsonl")
    kept += [
        e
        for f in outbox.glob("*.jsonl")
        if not f.name.startswith("openmetadata")
        for e in _lines(f)
    ]
    assert delivered + len(kept) == EVENTS, (fault, delivered, len(kept))  # nothing lost
    assert {fqn: v for fqn, v in _state(om).items() if fqn in before} == before  # nothing damaged
    expect = FAULTS[fault][1]
    rejected = _lines(outbox / "openmetadata.rejected.jsonl")
    if expect == "delivered":
        assert kept == []
        assert _column_lineage(om, STG_ORDERS), fault  # OM holds the run's lineage
        assert _column_lineage(om, STG_CUSTOMERS), fault
    elif expect == "kept":
        assert (delivered, len(kept), om.edges) == (0, EVENTS, {})
    else:
        assert [_is_stg_orders(e) for e in rejected] == [True], fault
        assert len(kept) == 1
        assert _column_lineage(om, STG_ORDERS) is None, fault  # the rejected one drew nothing
        assert _column_lineage(om, STG_CUSTOMERS), fault  # the others did
    if fault == "503 x2":  # the faults hit the batch post itself, which was then retried
        posts = [r.status for r in om.requests if r.path.startswith("/api/v1/openlineage/")]
        assert posts[:3] == [503, 503, 200], posts


def _once_each(stderr: str, fault: str) -> None:
    """One line per cause per run: no ERROR line twice, and the fault's cause on one line."""
    errors = [line for line in stderr.splitlines() if "ERROR" in line]
    assert len(errors) == len(set(errors)), errors
    if fault in CAUSES:
        lines = [line for line in stderr.splitlines() if CAUSES[fault] in line]
        assert len(lines) == 1, (fault, stderr[-3000:])
        assert lines[0] in errors, (fault, lines)
    else:
        assert errors == [], (fault, errors)


@dataclass(frozen=True)
class KeptRun:
    """The build that met OM down: its project (every event waits in its outbox), its run, and
    the stand-in it never reached, with what that held before."""

    project: Path
    run: CliRun
    om: FakeOpenMetadata
    before: dict[str, Any]


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory: pytest.TempPathFactory) -> KeptRun:
    """A project whose build met OM down (built once: the "om down" cell of test_direct)."""
    proj = copy_project(tmp_path_factory.mktemp("om_down") / "p")
    token = proj / "token"
    token.write_text("bot-jwt\n")
    with _om_with("om down") as (om, url):
        before = _state(om)
        down = run_cli(BUILD, cwd=proj, env=_env(url, token))
    assert down.returncode == 0, down.stderr[-3000:]
    assert len(_lines(proj / "target" / "dbt_oml" / "outbox" / "openmetadata.jsonl")) == EVENTS
    return KeptRun(proj, down, om, before)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_direct(fault: str, kept_run: KeptRun, tmp_path: Path) -> None:
    if fault == "om down":  # the kept run is this cell's build
        proj, om, before, run = kept_run.project, kept_run.om, kept_run.before, kept_run.run
    else:
        proj = copy_project(tmp_path / "p")
        token = proj / "token"
        token.write_text("bot-jwt\n")
        with _om_with(fault) as (om, url):
            before = _state(om)
            run = run_cli(BUILD, cwd=proj, env=_env(url, token, **CELL_ENV.get(fault, {})))
    assert run.returncode == 0, run.stderr[-3000:]  # lineage never changes dbt's code
    _check(om, before, proj / "target" / "dbt_oml" / "outbox", _delivered(run), fault)
    _once_each(run.stderr, fault)
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("fault", list(FAULTS))
def test_flush(fault: str, kept_run: KeptRun, tmp_path: Path) -> None:
    proj = Path(shutil.copytree(kept_run.project, tmp_path / "p"))  # each flushes its outbox
    token = proj / "token"
    outbox = proj / "target" / "dbt_oml" / "outbox"
    with _om_with(fault) as (om, url):
        before = _state(om)
        flushed = run_in_process(
            ["flush"], cwd=proj, env=_env(url, token, **CELL_ENV.get(fault, {}))
        )
    expect = FAULTS[fault][1]
    assert flushed.returncode == (0 if expect == "delivered" else 4), flushed.stderr[-3000:]
    _check(om, before, outbox, _delivered(flushed), fault)
    _once_each(flushed.stderr, fault)
    assert "Traceback" not in flushed.stderr
