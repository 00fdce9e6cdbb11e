"""Shared fixtures: environment isolation, the mini artifacts, and runs of the bundled project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.forkserver import ForkServer
from tests.support.parse_cache import SAVED, give_parse

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "integration_project"
MINI = Path(__file__).resolve().parent / "fixtures" / "artifacts" / "mini"
SHARED = ROOT.parent / "shared"
_ISOLATED_PREFIXES = ("DBT_OML_", "OPENLINEAGE", "DBT_")
#: One small model of the bundled project, with stable DuckDB namespaces (duckdb://pod/<alias>).
RUN_STG_ORDERS = [
    "run",
    "--profiles-dir",
    ".",
    "-s",
    "stg_orders",
    "--duckdb-namespace",
    "duckdb://pod/{alias}",
]


#: The slowest files of tests/integration, slowest first (measured: one `make test`, each file's
#: summed setup and call times, 2026-12-02). xdist (loadfile, --no-loadscope-reorder in the
#: Makefile) hands files out in this order, so the long ones start first and the short ones fill
#: the end (longest processing time first); files not named follow in their own order. Kept
#: apart: the two `servers` modules (they take one lock in turn) and the first users of the
#: `built` build (one worker builds it, another would wait).
SLOWEST_FIRST = (
    "test_cluster",
    "test_slim_ci",
    "test_om_faults",
    "test_build",
    "test_openmetadata",
    "test_plugin",
    "test_om_dbt_metadata",
    "test_jetstream",
    "test_hostile",
    "test_relay_delivery",
    "test_relay_service",
    "test_spec",
    "test_plugin_profile",
    "test_secrets",
    "test_plugin_crash",
    "test_explorer",
    "test_servers",
    "test_column_lineage",
    "test_impact",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}

    def order(item: pytest.Item) -> int:
        slow = item.path.parent.name == "integration" and item.path.stem in rank
        return rank[item.path.stem] if slow else len(rank)

    items.sort(key=order)


def pytest_report_header() -> list[str]:
    from importlib.metadata import version

    names = ["dbt-core", "dbt-duckdb", "duckdb", "sqlglot", "openlineage-python"]
    return ["versions: " + ", ".join(f"{n} {version(n)}" for n in names)]


@pytest.fixture(autouse=True)
def _clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith(_ISOLATED_PREFIXES) or key.lower().endswith("_proxy"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DO_NOT_TRACK", "1")


@pytest.fixture(autouse=True)
def _own_logger() -> Iterator[None]:
    """A command run in this process sets up the `dbt_oml` logger (its level, its stderr
    handler, no propagation): each test gets it back as it found it, so a quiet command's
    WARNING level never hides a later test's INFO lines from caplog."""
    import logging

    logger = logging.getLogger("dbt_oml")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    yield
    logger.handlers[:], logger.level, logger.propagate = saved


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]]
    project: Path
    target: Path


#: Listening ports come from below the kernel's ephemeral range (32768-60999 on Linux): a port
#: released there can become the source port of any outgoing connection (a test's HTTP or NATS
#: client) before the server that was meant to bind it starts, and a nats-server that loses its
#: route port that way says "Server is ready" and then dies. Each pytest-xdist worker draws from
#: its own block, so two workers never hand out the same port either.
_PORT_BLOCK, _PORT_BASE, _PORT_WORKERS = 1500, 17000, 10


def _ports() -> Iterator[int]:
    import random

    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    low = _PORT_BASE + (int(worker or 0) % _PORT_WORKERS) * _PORT_BLOCK
    start = random.randrange(_PORT_BLOCK)  # another session on this machine starts elsewhere
    for i in range(_PORT_BLOCK):
        yield low + (start + i) % _PORT_BLOCK


#: The ports this process has yet to hand out (made on first use).
PORTS: dict[str, Iterator[int]] = {}


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released), never handed out twice by
    this process and outside the ephemeral range (see _PORT_BLOCK)."""
    import socket

    for port in PORTS.setdefault("next", _ports()):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use, or a connection to it lingers in TIME_WAIT
            return port
    raise RuntimeError(f"no free port left in this worker's block of {_PORT_BLOCK}")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    # no PYTHONPATH: subprocesses must find dbt_oml (and dbt its plugin) through the install alone
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_ISOLATED_PREFIXES) and k != "PYTHONPATH"
    }
    env["DO_NOT_TRACK"] = "1"
    env.update(extra or {})
    return env


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


_FORK_SERVER: ForkServer | None = None
#: This worker's fork server and saved parse are made once, whichever thread asks first.
_MAKING = threading.RLock()


def _fork_server() -> ForkServer | None:
    """This process's fork server (tests/support/forkserver.py), or None with TESTS_FRESH_PROCESSES=1."""
    global _FORK_SERVER  # noqa: PLW0603 - one per xdist worker, stopped at the end
    if os.environ.get("TESTS_FRESH_PROCESSES") == "1":
        return None
    with _MAKING:
        if _FORK_SERVER is None:
            import tempfile

            scratch = Path(tempfile.mkdtemp(prefix="dbt-oml-forkserver-"))
            _FORK_SERVER = ForkServer(scratch, clean_env())
    return _FORK_SERVER


@pytest.fixture(scope="session", autouse=True)
def _stop_fork_server() -> Iterator[None]:
    yield
    if _FORK_SERVER is not None:
        _FORK_SERVER.stop()
    if _PRISTINE is not None:
        shutil.rmtree(_PRISTINE.parents[2], ignore_errors=True)


def _run(entry: str, args: Sequence[str], cwd: Path, env: dict[str, str], timeout: float) -> CliRun:
    """`entry` ("dbt-oml" or "dbt") with `args`: a child of the fork server, given the sys.argv
    its own process would have, or that process (TESTS_FRESH_PROCESSES=1)."""
    if entry == "dbt":
        command = argv = [str(Path(sys.executable).with_name("dbt")), *args]
    else:
        import dbt_oml

        command = [sys.executable, "-m", "dbt_oml", *args]
        argv = [str(Path(dbt_oml.__file__).with_name("__main__.py")), *args]
    server = _fork_server()
    if server is None:
        proc = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    else:
        proc = server.run(entry, argv, cwd=cwd, env=env, timeout=timeout)
    target = cwd / "target"
    return CliRun(
        returncode=proc.returncode,
        stdout=proc.stdout,
        stderr=proc.stderr,
        events=read_events(target / "openlineage" / "events.jsonl"),
        project=cwd,
        target=target,
    )


def run_cli(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> CliRun:
    """Run `dbt-oml` in a process of its own (dbt keeps global state per process): a child of
    the fork server (tests/support/forkserver.py), or a subprocess with TESTS_FRESH_PROCESSES=1."""
    return _run("dbt-oml", args, cwd, clean_env(env), timeout)


def run_in_process(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None
) -> CliRun:
    """`dbt-oml <args>` in this process, for a command that runs no dbt (emit, flush, replay,
    lineage): in `cwd`, with the environment run_cli gives its subprocess (each command makes its
    own redactor); output captured. dbt commands keep global state per process: those go through run_cli."""
    import contextlib
    import io

    from dbt_oml.cli import main

    out, err = io.StringIO(), io.StringIO()
    wanted = clean_env(env)
    with pytest.MonkeyPatch.context() as patch:
        for key in set(os.environ) - set(wanted):
            patch.delenv(key)
        for key, value in wanted.items():
            patch.setenv(key, value)
        patch.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    target = cwd / "target"
    events = read_events(target / "openlineage" / "events.jsonl")
    return CliRun(code, out.getvalue(), err.getvalue(), events, cwd, target)


def run_plain_dbt(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> CliRun:
    """Run plain `dbt` (no wrapper) in a subprocess, where dbt finds dbt-oml's plugin.

    dbt discovers plugins with pkgutil over sys.path: the Makefile's editable install is a
    `.pth` path entry (editable_mode=compat), so no PYTHONPATH is needed, as with a wheel.
    """
    return _run("dbt", args, cwd, clean_env(env), timeout)


def run_script(
    script: str, args: Sequence[str], *, cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Python source `script` with `args` in an interpreter of its own (dbt keeps global state
    per process), in `cwd` and the environment run_cli gives; output captured, exit not checked."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def copy_project(dest: Path, *, parsed: bool = True) -> Path:
    """A fresh copy of the bundled project at `dest`: no warehouse, artifacts, logs or outbox.

    `parsed`: with dbt's saved parse of an untouched copy (tests/support/parse_cache.py), so its first
    command skips dbt's full parse (dbt still re-parses what a test changes, and parses afresh
    for other vars, profile or target). `parsed=False` is the pod's first run: no target/.
    """
    ignore = shutil.ignore_patterns("target*", "logs", "*.duckdb", "*.wal", ".user.yml")
    shutil.copytree(PROJECT, dest, ignore=ignore)
    return give_parse(_pristine_parse(), dest) if parsed else dest


_PRISTINE: Path | None = None


def _pristine_parse() -> Path:
    """This process's saved parse of an untouched copy of the bundled project (`dbt parse`)."""
    global _PRISTINE  # noqa: PLW0603 - one per xdist worker, removed at the end
    with _MAKING:
        if _PRISTINE is None:
            import tempfile

            scratch = Path(tempfile.mkdtemp(prefix="dbt-oml-parse-"))
            proj = copy_project(scratch / "p", parsed=False)
            parse = run_plain_dbt(["parse", "--profiles-dir", "."], cwd=proj)
            if parse.returncode != 0:
                shutil.rmtree(scratch, ignore_errors=True)
                pytest.fail(f"dbt parse of the bundled project failed: {parse.stdout[-3000:]}")
            _PRISTINE = proj / SAVED
    return _PRISTINE


def copy_of_built(built: CliRun, dest: Path) -> Path:
    """The shared build's project, for more commands or to change: its warehouse and its target
    (dbt parses partially instead of afresh), without the events file, and without the lineage
    cache (another xdist worker may be writing it)."""
    assert built.returncode == 0, built.stderr[-3000:]
    return copy_of_run(built, dest)


def copy_of_run(built: CliRun, dest: Path) -> Path:
    """copy_of_built for a run that may have failed (the `failed` build)."""
    ignore = shutil.ignore_patterns("logs", "*.wal", "lineage-cache")
    shutil.copytree(built.project, dest, ignore=ignore)
    (dest / "target" / "openlineage" / "events.jsonl").unlink()
    return give_parse(dest / SAVED, dest)  # its paths moved here: nothing reads the build's copy


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_project(tmp_path / "project")


def _once_per_run(
    tmp_path_factory: pytest.TempPathFactory, name: str, args: Sequence[str]
) -> CliRun:
    """`dbt-oml <args>` in a fresh copy of the project, once for all xdist workers of this run.

    The first worker to get the lock runs it in the run's shared temp directory and records the
    outcome; the others wait on the lock and read it. Tests only read the project it leaves.
    """
    import fcntl

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # not under xdist: this process only
        return run_cli(args, cwd=copy_project(base / name / "project", parsed=False))
    shared = base.parent / name  # base is <run>/popen-gwN: its parent is shared by the workers
    shared.mkdir(exist_ok=True)
    record = shared / "run.json"
    with (shared.parent / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            run = run_cli(args, cwd=copy_project(shared / "project", parsed=False))
            outcome = {"returncode": run.returncode, "stdout": run.stdout, "stderr": run.stderr}
            record.write_text(json.dumps(outcome))
    outcome = json.loads(record.read_text())
    target = shared / "project" / "target"
    return CliRun(
        **outcome,
        events=read_events(target / "openlineage" / "events.jsonl"),
        project=shared / "project",
        target=target,
    )


@pytest.fixture(scope="module")
def _servers_lock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Held by a module on the shared PostgreSQL/MariaDB schemas (marker `servers`) for as long
    as it runs: xdist's workers take those modules in turn, the other workers go on meanwhile."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with (shared / "servers.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """`dbt-oml build` on the bundled project, local target: everything succeeds."""
    return _once_per_run(tmp_path_factory, "built", ["build", "--profiles-dir", "."])


@pytest.fixture(scope="session")
def failed(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """`dbt-oml build` with the failing var: one model fails, its child is skipped."""
    args = ["build", "--profiles-dir", ".", "--vars", "{fail_model: true}"]
    return _once_per_run(tmp_path_factory, "failed", args)


@pytest.fixture
def mini_target(tmp_path: Path) -> Iterator[Path]:
    """A copy of the hand-trimmed artifacts, as a dbt target directory."""
    target = tmp_path / "target"
    shutil.copytree(MINI, target)
    return target
