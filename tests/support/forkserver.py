"""A fork server for the tests' dbt commands: a Python that has imported dbt once, forking a
fresh child for each `dbt-oml ...` or `dbt ...` the tests run.

Importing dbt-core, dbt-duckdb and their dependencies costs 3-4 s of CPU per process on this
machine (about half of a one-model `dbt-oml run`), and the suite runs about a hundred such
commands. A forked child starts from the server's state, which is a fresh process's state right
after its imports: no command has run in the server, so dbt's per-process globals are untouched.
The child then becomes the command: its cwd, its environment (replaced whole), its argv and
sys.path[0] as `python -m dbt_oml` or the `dbt` console script would have them, stdin from
/dev/null, stdout and stderr to files; it leaves by the interpreter's normal exit (non-daemon
threads joined, atexit handlers run, streams flushed), and its exit status is the command's.

What a child cannot differ in: it is the real dbt and the real dbt-oml, installed the same way
(the server starts with no PYTHONPATH and not from tests/, so dbt's plugin discovery sees only
the install). What it does differ in, and why that is safe:
- the hash seed is one per server, not one per command (a test that compares two runs' order
  runs one of them in the test's own process, with its own seed);
- output at import time would be swallowed: the server refuses to start if its imports print;
- dbt's dataclasses already have the (de)serialisers they compile on first use (the same code);
- the server's objects are frozen for the garbage collector (`gc.freeze`, as prefork servers
  do): they are never garbage, and a child's collections need not touch, so copy, their pages;
- duckdb is not preloaded (its import starts a thread, which a fork cannot carry).
`TESTS_FRESH_PROCESSES=1` runs every command as a subprocess instead.

Run as a script by the tests (`python tests/support/forkserver.py`): requests are JSON lines on stdin,
replies lines on stdout (the child's pid, then its wait status).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

#: What a dbt-oml build imports that costs time (and every dbt_oml module, walked); the rest
#: comes with these. Not duckdb: its import starts a thread, and a fork of a threaded process
#: aborts at exit ("terminate called without an active exception"). A child imports it (0.2 s),
#: with dbt-duckdb and dbt_oml.duckdb.
PRELOAD = (
    "dbt.cli.main",
    "dbt.task.build",
    "dbt.task.docs.generate",
    "dbt.task.list",
    "dbt.parser.manifest",
    "dbt.adapters.sql",
    "agate",
    "sqlglot",
    "sqlglot.optimizer",
    "openlineage.client",
    "openlineage.client.transport.http",
    "nats",
)
_READY = "ready"


def _preload() -> None:
    import importlib
    import pkgutil

    for name in PRELOAD:
        importlib.import_module(name)
    import dbt_oml

    for info in pkgutil.walk_packages(dbt_oml.__path__, "dbt_oml."):
        if info.name not in ("dbt_oml.__main__", "dbt_oml.duckdb"):
            importlib.import_module(info.name)
    threads = len(os.listdir("/proc/self/task"))
    if "duckdb" in sys.modules or threads != 1:
        msg = f"the fork server must stay single-threaded: duckdb imported or {threads} threads"
        raise RuntimeError(msg)


def _compile_dbt_dataclasses(classes: set[type]) -> None:
    """Give dbt's dataclasses the (de)serialisers they would compile on first use.

    dbt's classes compile their mashumaro methods lazily (`lazy_compilation`): each command paid
    about 0.6 s generating the same code again (a one-model `dbt-oml run`: 5.9 -> 5.3 s). The
    first call of a class's from_dict, from_msgpack, to_dict or to_msgpack builds and keeps that
    method; here it is called on something that cannot be read or written (an empty dict, an
    instance with no fields), which builds the method and then fails, and the failure is
    ignored. What a child runs is the code it would have generated itself.
    """
    for cls in classes:
        with contextlib.suppress(Exception):
            cls.from_dict({})
        with contextlib.suppress(Exception):
            cls.from_msgpack(b"\x80")
        try:
            blank = object.__new__(cls)
        except TypeError:  # abstract: never written itself
            continue
        with contextlib.suppress(Exception):
            cls.to_dict(blank)
        with contextlib.suppress(Exception):
            cls.to_msgpack(blank)


def _build_dbt_file_schemas(classes: set[type]) -> None:
    """Give the classes of dbt's project and profile files the JSON schemas built on first use.

    Every dbt command validates dbt_project.yml, packages.yml, selectors.yml and the profile
    against the JSON schemas of the dbt.contracts.project classes, which dbt builds once per
    process (`dbtClassMixin.json_schema`, an lru_cache per class), each command again: a
    one-model run in a child, 1.83 -> 1.59 s. Built here once: the same schemas from the same
    classes.
    """
    for cls in classes:
        if cls.__module__ in ("dbt.contracts.project", "dbt.contracts.selection"):
            with contextlib.suppress(Exception):
                cls.json_schema()


def _dbt_dataclasses() -> set[type]:
    """dbt's dataclasses: every subclass of dbt_common's dbtClassMixin imported so far."""
    from dbt_common.dataclass_schema import dbtClassMixin

    classes: set[type] = set()
    stack: list[type] = [dbtClassMixin]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in classes:
                classes.add(sub)
                stack.append(sub)
    return classes


def _become(request: dict[str, object]) -> int:
    """In the forked child: turn into the requested command and run it."""
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(str(path), flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(str(request["cwd"]))
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    argv = request["argv"]
    assert isinstance(argv, list)
    sys.argv = [str(a) for a in argv]
    if request["entry"] == "dbt":
        sys.path[0] = str(Path(sys.argv[0]).parent)  # a console script's own directory
        from dbt.cli.main import cli

        cli()  # click exits with the command's code
        return 0
    sys.path[0] = str(request["cwd"])  # `python -m` and `python -c` put the cwd first
    if request["entry"] == "python":  # `python -c <code>`, for this module's own tests
        exec(sys.argv[1], {"__name__": "__main__"})  # noqa: S102 - the test's own code
        return 0
    from dbt_oml.cli import run

    return run()  # the console script's own exit: SystemExit with the command's code


def serve() -> int:
    sys.path[0] = os.getcwd()  # not tests/: nothing of the tests' can be imported from here
    _preload()
    classes = _dbt_dataclasses()
    _compile_dbt_dataclasses(classes)
    _build_dbt_file_schemas(classes)
    # what the server holds is never garbage: a child's collections (and its exit's) skip it,
    # and do not touch, so do not copy, the server's pages (1.1 s -> 0.15 s for an empty child)
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    reply = sys.stdout
    print(_READY, file=reply, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            return _become(request)  # the child leaves through the interpreter's normal exit
        print(pid, file=reply, flush=True)
        _, status = os.waitpid(pid, 0)
        print(status, file=reply, flush=True)
    return 0


class ForkServer:
    """The tests' side: one server per process (xdist worker), started on first use. It runs
    one command at a time: a command from a second thread waits for the one running."""

    def __init__(self, scratch: Path, env: Mapping[str, str]) -> None:
        self._scratch = scratch
        self._env = dict(env)
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._count = 0
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen[bytes]:
        self._scratch.mkdir(parents=True, exist_ok=True)
        log = self._scratch / "forkserver.stderr"
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, __file__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=self._env,
                cwd=self._scratch,
                bufsize=0,
            )
        self._proc = proc
        self._buffer = b""
        try:
            ready = self._line(time.monotonic() + 120)
        except RuntimeError:
            ready = None
        said = log.read_text()
        if ready != _READY or said:
            self.stop()
            msg = f"the fork server did not start cleanly ({ready!r}); it said: {said[-2000:]}"
            raise RuntimeError(msg)
        return proc

    def _line(self, deadline: float) -> str | None:
        """The server's next reply line, or None when the deadline passes first."""
        assert self._proc is not None
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                msg = "the fork server exited"
                raise RuntimeError(msg)
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def run(
        self,
        entry: str,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout: float,
    ) -> subprocess.CompletedProcess[str]:
        """`argv` (argv[0] included) as `entry` ("dbt-oml", "dbt", or "python" for `-c`), like
        subprocess.run with capture_output=True, text=True, timeout=timeout."""
        with self._lock:
            return self._run(entry, argv, cwd, env, timeout)

    def _run(
        self, entry: str, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        proc = self._proc if self._proc and self._proc.poll() is None else self._start()
        assert proc.stdin is not None
        self._count += 1
        out, err = (self._scratch / f"{self._count}.{name}" for name in ("out", "err"))
        request = {
            "entry": entry,
            "argv": list(argv),
            "cwd": str(cwd),
            "env": dict(env),
            "stdout": str(out),
            "stderr": str(err),
        }
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        deadline = time.monotonic() + timeout
        started = self._line(deadline + 60)
        if started is None:
            self.stop()
            msg = "the fork server did not fork the command"
            raise RuntimeError(msg)
        pid = int(started)
        status: str | None = None
        try:
            status = self._line(deadline)
        finally:
            if status is None:  # timed out, or the test was interrupted: the child goes too
                with contextlib.suppress(ProcessLookupError):  # it ended in between
                    os.kill(pid, signal.SIGKILL)
                self._line(time.monotonic() + 60)  # its status, as the server reaped it
        stdout, stderr = (path.read_text(errors="replace") for path in (out, err))
        out.unlink()
        err.unlink()
        if status is None:
            raise subprocess.TimeoutExpired(list(argv), timeout, stdout, stderr)
        code = os.waitstatus_to_exitcode(int(status))
        return subprocess.CompletedProcess(list(argv), code, stdout, stderr)

    def stop(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc.wait(timeout=30)
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None
        shutil.rmtree(self._scratch, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(serve())
