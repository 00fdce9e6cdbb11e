"""One benchmark command run and measured: its wall time, the peak RSS of its process tree and
the time after dbt's `Done.` line, in the environment every benchmark command runs in.

Shared by e2e_bench.py, build_ab.py, build_pairs.py and pod_memory.py.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent


@dataclass
class Sample:
    wall: float
    rss_mib: float
    after_done: float | None = None
    events_bytes: int = 0


def tree_rss(root: int) -> int:
    """Sum of VmRSS (KiB) of `root` and its descendants, now."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry.name}/statm") as f:
                pages = int(f.read().split()[1])
        except OSError:
            continue
        pid = int(entry.name)
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = pages * (os.sysconf("SC_PAGE_SIZE") // 1024)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


def measure(command: list[str], cwd: Path, env: dict[str, str]) -> Sample:
    """Run one command; wall time, peak tree RSS and the time after dbt's Done line."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    peak, done_at, err = 0, [], []

    def watch_stdout() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not done_at and "Done. PASS=" in line:
                done_at.append(time.perf_counter())

    def watch_stderr() -> None:
        assert proc.stderr is not None
        err.extend(proc.stderr)

    threads = [threading.Thread(target=watch_stdout), threading.Thread(target=watch_stderr)]
    for t in threads:
        t.start()
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.02)
    end = time.perf_counter()
    for t in threads:
        t.join()
    if proc.returncode != 0:
        raise SystemExit(f"{command} failed in {cwd}:\n{''.join(err)[-3000:]}")
    return Sample(
        wall=end - start,
        rss_mib=peak / 1024,
        after_done=end - done_at[0] if done_at else None,
    )


#: Services whose Kubernetes links every command's environment holds (`--service-links`).
SERVICES = 0


def service_links(services: int) -> dict[str, str]:
    """What Kubernetes puts in a pod's environment for `services` services of one TCP port
    each in its namespace (service links are on by default): 7 variables per service."""
    out: dict[str, str] = {}
    for i in range(services):
        name, host, port = f"SERVICE_{i:03d}", f"10.96.{i // 250}.{i % 250 + 1}", "8080"
        url = f"tcp://{host}:{port}"
        out |= {
            f"{name}_SERVICE_HOST": host,
            f"{name}_SERVICE_PORT": port,
            f"{name}_PORT": url,
            f"{name}_PORT_{port}_TCP": url,
            f"{name}_PORT_{port}_TCP_PROTO": "tcp",
            f"{name}_PORT_{port}_TCP_PORT": port,
            f"{name}_PORT_{port}_TCP_ADDR": host,
        }
    return out


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENLINEAGE", "DBT_"))}
    env |= service_links(SERVICES)
    env["DO_NOT_TRACK"] = "1"
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # dbt-ol runs `dbt` from PATH
    return env


def ol_env(events: Path) -> dict[str, str]:
    return {
        "OPENLINEAGE__TRANSPORT__TYPE": "file",
        "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH": str(events),
        "OPENLINEAGE__TRANSPORT__APPEND": "true",
    }


def fresh_copy(template: Path, dest: Path) -> Path:
    """`dest` as a new copy of the project `template` (a build never starts from another's)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(template, dest)
    return dest


def print_walls(samples: dict[str, list[Sample]]) -> None:
    """Each variant's wall time, spread, and time before and after dbt's `Done.`, as a table."""
    print("| variant | wall s (median) | min-max s | before Done s | after Done s |")
    print("|---|---|---|---|---|")
    for name, got in samples.items():
        walls = [s.wall for s in got]
        after = [s.after_done or 0.0 for s in got]
        before = [w - a for w, a in zip(walls, after, strict=True)]
        print(
            f"| {name} | {statistics.median(walls):.2f} | {min(walls):.2f}-{max(walls):.2f} "
            f"| {statistics.median(before):.2f} | {statistics.median(after):.2f} |"
        )
