"""Where a dbt-oml command's time goes, from a py-spy raw (collapsed stacks) profile.

    py-spy record -r 200 -f raw -o prof.txt -- python -m dbt_oml emit --profiles-dir .
    python benchmarks/where_time_goes.py prof.txt

Each sample of the main thread goes to the first phase (in the order below) one of its frames
belongs to; the seconds are samples / rate, so they add up to the wall time py-spy saw. Helper
threads (a worker pool's) are left out: the main thread waiting for the workers is "lineage".
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

#: (phase, pattern on one frame "function (file:line)"), first match along the stack wins.
PHASES: list[tuple[str, re.Pattern[str]]] = [
    ("serialisation (Serde / JSON)", re.compile(r"serde\.py|^(to_json|to_dict|dumps|encode) ")),
    ("writing (transport)", re.compile(r"transport/|outbox\.py|^(write|flush) ")),
    ("client emit (facets, filters)", re.compile(r"openlineage/client/client\.py")),
    ("file pre-check / parse for files", re.compile(r"filerefs\.py")),
    ("event building", re.compile(r"events\.py|facets\.py|dq_events\.py|node_facets\.py")),
    ("lineage (engine, cache)", re.compile(r"lineage_\w+\.py|lineage\.py")),
    ("reading artifacts", re.compile(r"^read_artifacts ")),
    ("dbt project loading", re.compile(r"^resolve_project ")),
    ("imports", re.compile(r"^_find_and_load ")),
]


def phases(raw: str, rate: int) -> Counter[str]:
    out: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        if frames[0].startswith("Thread._bootstrap"):
            continue  # a helper thread: its time overlaps the main thread's
        phase = "other"
        for name, pattern in PHASES:
            if any(pattern.search(f) for f in frames):
                phase = name
                break
        out[phase] += int(count)
    return Counter({k: v / rate for k, v in out.items()})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("profiles", nargs="+", type=Path)
    parser.add_argument("--rate", type=int, default=200)
    args = parser.parse_args()
    tables = {p.stem: phases(p.read_text(), args.rate) for p in args.profiles}
    names = [n for n, _ in PHASES] + ["other"]
    print("| phase | " + " | ".join(tables) + " |")
    print("|---|" + "---|" * len(tables))
    for name in names:
        print(f"| {name} | " + " | ".join(f"{t[name]:.2f}" for t in tables.values()) + " |")
    print("| **total** | " + " | ".join(f"{sum(t.values()):.2f}" for t in tables.values()) + " |")


if __name__ == "__main__":
    main()
