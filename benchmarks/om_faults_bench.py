"""What OpenMetadata down or hanging costs a whole command, against the same run with a file.

Run with `make bench-om-faults` (issue 10). Every variant is the whole command on a fresh copy of
the bundled project (profile dir `.`, target local), timed around the process as the user waits
for it; the variants are interleaved and each cell is the median of the repeats.

- `dbt-oml build`: the file transport (baseline), OM refused (a loopback port nothing listens on),
  OM hanging (a loopback server in this process that accepts connections and never answers;
  timeout 2 s, retry budget 5 s, batch size 10, so a per-batch timeout would show);
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
TIMEOUT, BUDGET, BATCH = 2, 5, 10
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


def om_env(port: int, *, hanging: bool) -> dict[str, str]:
    env = {
        "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
        "OPENLINEAGE__TRANSPORT__URL": f"http://127.0.0.1:{port}",
        "OPENLINEAGE__TRANSPORT__JWT_TOKEN": "x",
    }
    if hanging:
        env |= {
            "OPENLINEAGE__TRANSPORT__TIMEOUT": str(TIMEOUT),
            "OPENLINEAGE__TRANSPORT__RETRY_BUDGET": str(BUDGET),
            "OPENLINEAGE__TRANSPORT__BATCH_SIZE": str(BATCH),
        }
    return env


@dataclass(frozen=True)
class Variant:
    name: str
    command: list[str]
    extra: dict[str, str]
    om: str | None  # None: file transport; "refused" or "hanging"
    baseline: str


WRAPPER = [sys.executable, "-m", "dbt_oml", "build", "--profiles-dir", "."]
PLAIN = [DBT, "build", "--profiles-dir", "."]
PLUGIN = {"DBT_OML_PLUGIN": "1", "PYTHONPATH": str(ROOT)}
W_BASE, P_BASE = "dbt-oml build, file transport", "dbt build + plugin, file transport"
VARIANTS = [
    Variant(W_BASE, WRAPPER, {}, None, W_BASE),
    Variant("dbt-oml build, OM refused", WRAPPER, {}, "refused", W_BASE),
    Variant(
        f"dbt-oml build, OM hanging (timeout {TIMEOUT}, budget {BUDGET}, batch {BATCH})",
        WRAPPER,
        {},
        "hanging",
        W_BASE,
    ),
    Variant(P_BASE, PLAIN, PLUGIN, None, P_BASE),
    Variant("dbt build + plugin, OM refused", PLAIN, PLUGIN, "refused", P_BASE),
    Variant(
        f"dbt build + plugin, OM hanging (timeout {TIMEOUT}, budget {BUDGET}, batch {BATCH})",
        PLAIN,
        PLUGIN,
        "hanging",
        P_BASE,
    ),
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
            om_env(port, hanging=variant.om == "hanging") if variant.om else {}
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
