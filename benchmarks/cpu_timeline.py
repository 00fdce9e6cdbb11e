"""How many cores a command's process tree keeps busy, every quarter second (from /proc: each
process's user + system time). Shows where a command leaves a core idle, e.g. that plain
`dbt build` keeps about one of two busy (its threads share Python's lock).

    benchmarks/.venv/bin/python benchmarks/cpu_timeline.py -- dbt build --profiles-dir .

Prints `seconds cores [pid:cores ...]` per step. Results: benchmarks/README.md (section 0g).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

STEP = 0.25
TICK = os.sysconf("SC_CLK_TCK")


def _tree(root: int) -> list[int]:
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                todo += [int(p) for p in task.read_text().split()]
            except OSError:
                continue
    return pids


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def main() -> None:
    command = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[int, float] = {}
    due = start + STEP
    while child.poll() is None:
        time.sleep(max(0.0, due - time.perf_counter()))
        due += STEP
        used = {}
        for pid in _tree(child.pid):
            now = _cpu_seconds(pid)
            if now is not None:
                used[pid] = (now - seen.get(pid, 0.0)) / STEP
                seen[pid] = now
        each = " ".join(f"{pid}:{cores:.2f}" for pid, cores in used.items())
        print(f"{time.perf_counter() - start:6.2f} {sum(used.values()):5.2f}  {each}")
    print(f"exit {child.returncode} after {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
