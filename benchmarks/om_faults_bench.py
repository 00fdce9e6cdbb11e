"""What OpenMetadata down or hanging costs a whole command, against the same run with a file.

Run with `make bench-om-faults` (issue 10). Every variant is the whole command on a fresh copy of
the bundled project (profile dir `.`, target local), timed around the process as the user waits
for it; the variants are interleaved and each cell is the median of the repeats.

- `dbt-oml build`: the file transport (baseline), OM refused (a loopback port nothing listens on),
  OM hanging (a loopback server in this process that accepts connections and never answers),
  each with a bot JWT and with a user's login (user/password), all with the default settings
  (timeout, retry budget, batch size: what a user gets), plus one hanging run with batch size 10
  (so a timeout paid per batch would show);
- plain `dbt build` with the plugin on: the file transport (baseline), OM refused, OM hanging.

For every OM run it also counts the events kept in `target/dbt_oml/outbox/*.jsonl` against the
events the run built (its `dbt-oml: N events` summary line): nothing may be lost. Loopback only;
every command has a timeout, so the benchmark ends by itself.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "integration_project"
DBT = str(Path(sys.executable).with_name("dbt"))
ISOLATED = ("DBT_OML_", "OPENLINEAGE", "DBT_")
#: the small batch of the variant that would show a timeout paid per batch
BATCH = 10
#: a command that takes longer than this is a failure, not a sample
COMMAND_TIMEOUT = 600
SUMMARY = re.compile(r"dbt-oml: (\d+) events")


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def hanging_server() -> Iterator[int]:
    """A loopback port that accepts connections and never answers; yields the port."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            held.append(conn)  # never read, never answered, closed when the run is over

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
        for conn in held:
            conn.close()


@contextmanager
def no_server() -> Iterator[int]:
    yield free_port()


def env_for(extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of tests/conftest.py clean_env, proxies dropped, plus the variant's own."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(ISOLATED) and not k.lower().endswith("_proxy")
    }
    return env | {"DO_NOT_TRACK": "1", **extra}


def om_env(port: int, *, login: bool, batch: int | None) -> dict[str, str]:
    """The OpenMetadata transport at `port` with default settings; a user's login or a JWT."""
    env = {
        "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
        "OPENLINEAGE__TRANSPORT__URL": f"http://127.0.0.1:{port}",
    }
    if login:
        env |= {
            "OPENLINEAGE__TRANSPORT__USER": "admin@open-metadata.org",
            "OPENLINEAGE__TRANSPORT__PASSWORD": "admin",
        }
    else:
        env |= {"OPENLINEAGE__TRANSPORT__JWT_TOKEN": "x"}
    if batch is not None:
        env["OPENLINEAGE__TRANSPORT__BATCH_SIZE"] = str(batch)
    return env


@dataclass(frozen=True)
class Variant:
    name: str
    command: list[str]
    extra: dict[str, str]
    om: str | None  # None: file transport; "refused" or "hanging"
    baseline: str
    login: bool = False
    batch: int | None = None


WRAPPER = [sys.executable, "-m", "dbt_oml", "build", "--profiles-dir", "."]
PLAIN = [DBT, "build", "--profiles-dir", "."]
PLUGIN = {"DBT_OML_PLUGIN": "1", "PYTHONPATH": str(ROOT)}
W_BASE, P_BASE = "dbt-oml build, file transport", "dbt build + plugin, file transport"
W, P = "dbt-oml build", "dbt build + plugin"
VARIANTS = [
    Variant(W_BASE, WRAPPER, {}, None, W_BASE),
    Variant(f"{W}, OM refused, JWT", WRAPPER, {}, "refused", W_BASE),
    Variant(f"{W}, OM refused, user login", WRAPPER, {}, "refused", W_BASE, login=True),
    Variant(f"{W}, OM hanging, JWT", WRAPPER, {}, "hanging", W_BASE),
    Variant(f"{W}, OM hanging, user login", WRAPPER, {}, "hanging", W_BASE, login=True),
    Variant(f"{W}, OM hanging, JWT, batch {BATCH}", WRAPPER, {}, "hanging", W_BASE, batch=BATCH),
    Variant(P_BASE, PLAIN, PLUGIN, None, P_BASE),
    Variant(f"{P}, OM refused, JWT", PLAIN, PLUGIN, "refused", P_BASE),
    Variant(f"{P}, OM refused, user login", PLAIN, PLUGIN, "refused", P_BASE, login=True),
    Variant(f"{P}, OM hanging, JWT", PLAIN, PLUGIN, "hanging", P_BASE),
]


@dataclass
class Samples:
    walls: list[float] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)  # events in the outbox (OM) or the file
    built: list[int | None] = field(default_factory=list)  # from the run's summary line


def count_lines(paths: list[Path]) -> int:
    return sum(
        sum(1 for line in p.read_text().splitlines() if line.strip()) for p in paths if p.exists()
    )


def run_once(variant: Variant, dest: Path) -> tuple[float, int, int, int | None, str]:
    cwd = Path(
        shutil.copytree(
            PROJECT,
            dest,
            ignore=shutil.ignore_patterns("target*", "logs", "*.duckdb", "*.wal", ".user.yml"),
        )
    )
    server = hanging_server() if variant.om == "hanging" else no_server()
    with server as port:
        extra = variant.extra | (
            om_env(port, login=variant.login, batch=variant.batch) if variant.om else {}
        )
        env = env_for(extra)
        start = time.perf_counter()
        proc = subprocess.run(
            variant.command,
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
        wall = time.perf_counter() - start
    target = cwd / "target"
    if variant.om:
        kept = count_lines(sorted((target / "dbt_oml" / "outbox").glob("*.jsonl")))
    else:
        kept = count_lines([target / "openlineage" / "events.jsonl"])
    found = SUMMARY.search(proc.stderr)
    built = int(found.group(1)) if found else None
    return wall, proc.returncode, kept, built, proc.stderr


def transport_alone(om: str, login: bool, events: int = 90) -> tuple[float, int, int]:
    """The OpenMetadata transport alone, default settings: `events` events emitted, then
    close(); (seconds, delivered, kept). What the fault adds, without dbt's noise around it."""
    from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport

    server = hanging_server() if om == "hanging" else no_server()
    with server as port, tempfile.TemporaryDirectory(prefix="om-alone-") as tmp:
        env = om_env(port, login=login, batch=None)
        config = OpenMetadataConfig.from_dict(
            {k.removeprefix("OPENLINEAGE__TRANSPORT__").lower(): v for k, v in env.items()}
            | {"outbox_dir": tmp}
        )
        transport = OpenMetadataTransport(config)
        start = time.perf_counter()
        for n in range(events):
            transport.emit(_event(n))
        transport.close()
        wall = time.perf_counter() - start
        kept = count_lines(sorted(Path(tmp).glob("*.jsonl")))
    return wall, transport.delivered, kept


def _event(n: int) -> dict[str, object]:
    dataset = {"namespace": "duckdb://pod", "name": f"warehouse.core.t{n}"}
    return {
        "eventTime": "2026-12-02T10:00:00.000Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/bench",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": f"01a22a97-c811-7ab0-b0d7-{n:012d}"},
        "job": {"namespace": "dbt", "name": f"model.bench.t{n}"},
        "inputs": [{"namespace": "duckdb://pod", "name": "warehouse.core.source"}],
        "outputs": [dataset],
    }


def print_transport_alone(repeats: int) -> None:
    print(
        "\n| OM transport alone, defaults, 90 events | seconds (median) | min-max | delivered / kept |"
    )
    print("|---|---|---|---|")
    for om in ("refused", "hanging"):
        for login in (False, True):
            runs = [transport_alone(om, login) for _ in range(repeats)]
            walls = [r[0] for r in runs]
            counts = "/".join(sorted({f"{r[1]} / {r[2]}" for r in runs}))
            who = "user login" if login else "JWT"
            print(
                f"| OM {om}, {who} | {statistics.median(walls):.2f} "
                f"| {min(walls):.2f}-{max(walls):.2f} | {counts} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--alone", action="store_true", help="only the transport-alone table")
    args = parser.parse_args()
    if args.alone:
        print_transport_alone(args.repeats)
        return
    samples = {v.name: Samples() for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="om-faults-") as tmp:
        for r in range(args.repeats):
            for i, variant in enumerate(VARIANTS):
                wall, code, kept, built, stderr = run_once(variant, Path(tmp) / f"r{r}-v{i}")
                s = samples[variant.name]
                s.walls.append(wall)
                s.codes.append(code)
                s.kept.append(kept)
                s.built.append(built)
                print(
                    f"  {variant.name} #{r + 1}: {wall:.2f}s, exit {code}, {kept}/{built} events",
                    file=sys.stderr,
                )
                if code != 0 or built is None or kept != built:
                    print("    last lines of stderr:\n" + stderr[-1500:], file=sys.stderr)
                shutil.rmtree(Path(tmp) / f"r{r}-v{i}", ignore_errors=True)
    print(
        f"measured {time.strftime('%Y-%m-%d %H:%M')}, bundled project, "
        f"median of {args.repeats}, interleaved"
    )
    print(
        "| variant | wall s (median) | min-max s | extra s vs baseline | x baseline "
        "| events kept / built | exit code |"
    )
    print("|---|---|---|---|---|---|---|")
    for variant in VARIANTS:
        s = samples[variant.name]
        med = statistics.median(s.walls)
        base = statistics.median(samples[variant.baseline].walls)
        kept = "/".join(sorted({str(k) for k in s.kept}))
        built = "/".join(sorted({str(b) for b in s.built}))
        where = "outbox" if variant.om else "file"
        codes = "/".join(sorted({str(c) for c in s.codes}))
        print(
            f"| {variant.name} | {med:.2f} | {min(s.walls):.2f}-{max(s.walls):.2f} "
            f"| {med - base:+.2f} | {med / base:.2f} | {kept} / {built} ({where}) | {codes} |"
        )
    print_transport_alone(args.repeats)


if __name__ == "__main__":
    main()
