"""A real nats-server for the tests (stopped and restarted on the same port and store), and a
subprocess whose stderr lines can be waited for. Readiness and progress are waited on as lines,
never with sleeps."""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import pytest

from tests.conftest import free_port

NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"


class Lines:
    """The lines a stream writes, collected in a thread; wait for one matching a pattern."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._closed = False
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def wait_for(self, pattern: str, *, after: int = 0, timeout: float = 60) -> int:
        """Index of the first line from `after` on matching `pattern`; fails when none comes."""
        regex = re.compile(pattern)

        def found() -> int | None:
            return next(
                (i for i in range(after, len(self.lines)) if regex.search(self.lines[i])), None
            )

        with self._changed:
            self._changed.wait_for(lambda: found() is not None or self._closed, timeout=timeout)
            index = found()
        if index is None:
            pytest.fail(f"no line matching {pattern!r}; got:\n" + "\n".join(self.lines[-40:]))
        return index

    def wait_closed(self, timeout: float = 60) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._closed, timeout=timeout)

    @property
    def text(self) -> str:
        with self._changed:
            return "\n".join(self.lines)


class NatsServer:
    """nats-server with JetStream on 127.0.0.1; `stop()` and `start()` keep port and store."""

    def __init__(self, store: Path, port: int | None = None) -> None:
        if not Path(NATS_SERVER).exists():
            pytest.skip("nats-server is not installed (apt-get install nats-server)")
        self.port = port or free_port()
        self.store = store
        self.proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> NatsServer:
        command = [NATS_SERVER, "-js", "-a", "127.0.0.1", "-p", str(self.port)]
        self.proc = subprocess.Popen(
            [*command, "-sd", str(self.store)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        Lines(self.proc.stderr).wait_for("Server is ready", timeout=30)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # no goodbye to the clients: the connection just breaks
            self.proc.wait(timeout=30)
        self.proc = None


class Watched:
    """A subprocess whose stderr lines are collected (see Lines)."""

    def __init__(self, command: Sequence[str], *, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        self.stderr = Lines(self.proc.stderr)

    def terminate(self, timeout: float) -> int:
        """SIGTERM, then the exit code (fails when the process outlives `timeout`)."""
        self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            pytest.fail(f"still running after {timeout} s:\n{self.stderr.text[-3000:]}")
        self.stderr.wait_closed()
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


async def _js_call(url: str, call: Any) -> Any:
    import nats

    nc = await nats.connect(url)
    try:
        return await call(nc.jetstream())
    finally:
        await nc.close()


def js_call(url: str, call: Any) -> Any:
    """Run `await call(js)` on a fresh connection (test set-up and checks)."""
    return asyncio.run(_js_call(url, call))
