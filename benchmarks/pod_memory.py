"""Peak memory of `dbt-oml emit` (cold and warm cache) and `dbt-ol send-events` on the 2,000-model
project of e2e_bench.py, counted two ways: the sum of the process tree's RSS (as e2e_bench counts
it: a page shared by the workers counts once per process) and the tree's memory cgroup, whose
`total_rss + total_mapped_file` counts each page once, as a pod's memory limit does (the page
cache of written files aside). Needs root and the cgroup v1 memory controller; run
`e2e_bench.py` once first (it builds the project).

    benchmarks/.venv/bin/python benchmarks/pod_memory.py --repeats 3

Results: benchmarks/README.md (section 0f).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e_bench import WORK
from measuring import BIN, clean_env, ol_env, tree_rss

CGROUPS = Path("/sys/fs/cgroup/memory")


def _charged_kib(group: Path) -> int:
    stat = dict(line.split() for line in (group / "memory.stat").read_text().splitlines())
    return (int(stat["total_rss"]) + int(stat["total_mapped_file"])) // 1024


def measure(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, peak RSS sum MiB, peak cgroup memory MiB) of one command."""
    group = CGROUPS / f"dbt_oml_bench_{uuid.uuid4().hex[:8]}"
    group.mkdir()

    def enter() -> None:
        (group / "cgroup.procs").write_text(str(os.getpid()))

    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=enter,  # noqa: PLW1509 - it joins its group before exec; no threads here
        )
        rss = charged = 0
        while proc.poll() is None:
            rss, charged = max(rss, tree_rss(proc.pid)), max(charged, _charged_kib(group))
            time.sleep(0.02)
        wall = time.perf_counter() - start
        err.seek(0)
        said = err.read().decode(errors="replace")
    while True:  # the group empties once the kernel has reaped every member
        try:
            group.rmdir()
            break
        except OSError:
            time.sleep(0.05)
    if proc.returncode != 0:
        raise SystemExit(f"{command} failed:\n{said[-3000:]}")
    return wall, rss / 1024, charged / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    base, pristine = WORK / "emit-2000", WORK / "emit-2000-artifacts"
    target, env = base / "target", clean_env()
    oml = [str(BIN / "dbt-oml"), "emit", "--profiles-dir", ".", "--events-file"]
    events_ol = WORK / "memory-ol.jsonl"
    variants = {
        "dbt-oml emit, cold cache": ([*oml, str(WORK / "memory-oml.jsonl")], {}, True),
        "dbt-oml emit, warm cache": ([*oml, str(WORK / "memory-oml.jsonl")], {}, False),
        "dbt-ol send-events": (
            [str(BIN / "dbt-ol"), "send-events", "--profiles-dir", "."],
            ol_env(events_ol),
            False,
        ),
    }
    got: dict[str, list[tuple[float, float, float]]] = {name: [] for name in variants}
    for repeat in range(args.repeats):
        for name, (command, extra, cold) in variants.items():
            for artifact in ("manifest.json", "run_results.json"):
                shutil.copyfile(pristine / artifact, target / artifact)
            if cold:
                shutil.rmtree(target / "dbt_oml" / "lineage-cache", ignore_errors=True)
            events_ol.unlink(missing_ok=True)
            got[name].append(measure(command, base, env | extra))
            print(f"  {name} #{repeat + 1}: {got[name][-1]}", file=sys.stderr)
    ref = [statistics.median(s[i] for s in got["dbt-ol send-events"]) for i in range(3)]
    print("| command | wall s (x dbt-ol) | peak RSS sum MiB (x) | peak cgroup memory MiB (x) |")
    print("|---|---|---|---|")
    for name, samples in got.items():
        wall, rss, charged = (statistics.median(s[i] for s in samples) for i in range(3))
        print(
            f"| {name} | {wall:.2f} ({wall / ref[0]:.2f}x) | {rss:.0f} ({rss / ref[1]:.2f}x) "
            f"| {charged:.0f} ({charged / ref[2]:.2f}x) |"
        )


if __name__ == "__main__":
    main()
