"""A real nats-server for the tests (stopped and restarted on the same port and store), a cluster
of three, and a subprocess whose stderr lines can be waited for. Readiness and progress are waited
on as lines or as conditions in bounded loops, never with sleeps."""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import pytest

from tests.conftest import free_port

NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"
T = TypeVar("T")


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
        stream.close()  # the process is gone: no ResourceWarning when the pipe is collected
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
    """nats-server with JetStream on 127.0.0.1; `stop()` and `start()` keep port and store.

    With `name` and `cluster` (its route URL, the others' and the cluster's name) it is one node
    of a JetStream cluster; `start()` then also waits until it knows the metadata leader.
    """

    def __init__(
        self,
        store: Path,
        port: int | None = None,
        *,
        name: str | None = None,
        cluster: tuple[str, str, list[str]] | None = None,
    ) -> None:
        if not Path(NATS_SERVER).exists():
            pytest.skip("nats-server is not installed (apt-get install nats-server)")
        self.port = port or free_port()
        self.store = store
        self.name = name
        self.cluster = cluster
        self.proc: subprocess.Popen[str] | None = None
        self.log: Lines | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def launch(self) -> NatsServer:
        """Start the process; `wait_ready()` waits for it (a cluster launches all nodes first)."""
        command = [NATS_SERVER, "-js", "-a", "127.0.0.1", "-p", str(self.port)]
        command += ["-sd", str(self.store)]
        if self.name:
            command += ["-n", self.name]
        if self.cluster:
            cluster_name, route, routes = self.cluster
            command += ["--cluster_name", cluster_name, "--cluster", route]
            command += ["--routes", ",".join(routes)]
        self.proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        assert self.proc.stderr is not None
        self.log = Lines(self.proc.stderr)
        return self

    def wait_ready(self, timeout: float = 60) -> NatsServer:
        """Until it serves clients and, in a cluster, answers JetStream requests (they need the
        metadata leader: a node that joins after the election may never log one)."""
        assert self.log is not None
        self.log.wait_for("Server is ready", timeout=timeout)
        if self.cluster:
            # a node that cannot bind its route port says it is ready, then dies: wait for the
            # route listener too, so that a lost port fails here, with the server's own words
            self.log.wait_for("Listening for route connections", timeout=timeout)

            async def answers(js: Any) -> bool:
                await js.account_info()
                return True

            wait_for_value(
                lambda: js_call(self.alive_url(), answers, timeout=PROBE_TIMEOUT),
                f"{self.name}'s JetStream",
                timeout=timeout,
            )
        return self

    def alive_url(self) -> str:
        """The URL, or a failure with the server's last lines when its process has exited."""
        if not self.running:
            tail = self.log.text[-3000:] if self.log else ""
            pytest.fail(f"nats-server {self.name or self.port} exited:\n{tail}")
        return self.url

    def start(self) -> NatsServer:
        self.launch()
        try:
            return self.wait_ready()
        except BaseException:
            self.stop()  # a failed start leaves no server behind (nor a Popen warning later)
            raise

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # no goodbye to the clients: the connection just breaks
            self.proc.wait(timeout=30)
        self.proc = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class NatsCluster:
    """Three nats-servers on loopback forming one JetStream cluster (routes between all)."""

    def __init__(self, root: Path, *, size: int = 3, name: str = "dbt-oml-test") -> None:
        routes = [f"nats://127.0.0.1:{free_port()}" for _ in range(size)]
        self.nodes = [
            NatsServer(
                root / f"n{i}",
                name=f"n{i}",
                cluster=(name, route, [r for r in routes if r != route]),
            )
            for i, route in enumerate(routes, start=1)
        ]

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    def node(self, name: str) -> NatsServer:
        return next(node for node in self.nodes if node.name == name)

    def start(self) -> NatsCluster:
        for node in self.nodes:  # all at once: none elects a leader alone
            node.launch()
        try:
            for node in self.nodes:
                node.wait_ready()
            self._wait_placeable()
        except BaseException:
            self.stop()  # a failed start leaves no server behind (nor a Popen warning later)
            raise
        return self

    def _wait_placeable(self) -> None:
        """Until the cluster places a stream on all its servers (a probe stream made, then
        removed). A metadata leader answers before it knows every peer: until then a stream
        with a replica per server is refused ("no suitable peers for placement")."""
        from nats.js.api import StreamConfig

        probe = StreamConfig(name="READY", subjects=["ready.probe"], num_replicas=len(self.nodes))

        async def place(js: Any) -> bool:
            await js.add_stream(probe)
            await js.delete_stream(probe.name)
            return True

        wait_for_value(
            lambda: js_call(self.urls, place, timeout=PROBE_TIMEOUT), "a stream on every server"
        )

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def running_urls(self) -> list[str]:
        return [node.url for node in self.nodes if node.running]

    def stream_leader(self, stream: str) -> str:
        """The name of the node leading `stream` (waits through an election)."""

        async def leader(js: Any) -> str | None:
            info = await js.stream_info(stream)
            return info.cluster.leader if info.cluster else None

        return str(
            wait_for_value(
                lambda: js_call(self.running_urls(), leader, timeout=PROBE_TIMEOUT),
                f"{stream}'s leader",
            )
        )

    def consumer_leader(self, stream: str, durable: str) -> str:
        async def leader(js: Any) -> str | None:
            info = await js.consumer_info(stream, durable)
            return info.cluster.leader if info.cluster else None

        return str(
            wait_for_value(
                lambda: js_call(self.running_urls(), leader, timeout=PROBE_TIMEOUT),
                f"consumer {durable}'s leader",
            )
        )

    def wait_current(self, stream: str) -> None:
        """Until every replica of `stream` has caught up with its leader."""

        async def current(js: Any) -> bool | None:
            cluster = (await js.stream_info(stream)).cluster
            if cluster is None or not cluster.leader:
                return None
            replicas = cluster.replicas or []
            everyone = len(replicas) == len(self.nodes) - 1
            return (everyone and all(r.current and not r.offline for r in replicas)) or None

        wait_for_value(
            lambda: js_call(self.running_urls(), current, timeout=PROBE_TIMEOUT),
            f"{stream} replicas current",
        )


def wait_for_value(probe: Callable[[], T | None], what: str, *, timeout: float = 120) -> T:
    """Poll `probe` until it returns a value (not None); a NATS fault counts as "not yet".

    Bounded: fails after `timeout` seconds with the last fault. Each probe is a round trip to
    the servers, so the loop paces itself; a short wait between probes spares the CPU.
    """
    from nats.errors import Error as NatsError

    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    pause = threading.Event()
    while time.monotonic() < deadline:
        try:
            value = probe()
        except (NatsError, OSError, asyncio.TimeoutError) as e:
            last, value = e, None
        if value is not None:
            return value
        pause.wait(0.1)  # pacing of a bounded poll, not a wait for something to happen
    pytest.fail(f"no {what} within {timeout} s (last fault: {last!r})")


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


async def _js_call(url: str | list[str], call: Any, timeout: float) -> Any:
    import nats

    servers = [url] if isinstance(url, str) else url
    nc = await nats.connect(servers=servers, allow_reconnect=False, connect_timeout=2)
    try:
        return await call(nc.jetstream(timeout=timeout))
    finally:
        await nc.close()


#: A poll's JetStream request timeout: a request made while a cluster has no leader gets no
#: answer at all, so a poll asks again soon instead of waiting out nats-py's 5 s each time.
PROBE_TIMEOUT = 1.0


def js_call(url: str | list[str], call: Any, *, timeout: float = 5) -> Any:
    """Run `await call(js)` on a fresh connection to a server of `url` (set-up and checks);
    `timeout` per JetStream request (PROBE_TIMEOUT inside a wait_for_value poll)."""
    return asyncio.run(_js_call(url, call, timeout))
