"""`dbt build` against `dbt-oml build` in interleaved pairs on the synthetic project: the ratio
of each pair (the same minute of a noisy machine), and its median over the pairs.

A fresh copy of the project for every run (dbt-oml's lineage cache cold, as in a new pod); the
order inside a pair alternates. Wall time and the time after dbt's `Done.`, as e2e_bench.py
measures them.

    benchmarks/.venv/bin/python benchmarks/build_pairs.py --models 500 --pairs 8

Results: benchmarks/README.md (section 0g).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import BIN, Sample, clean_env, fresh_copy, measure, print_walls
from synth_project import write_project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--pairs", type=int, default=8)
    args = parser.parse_args()
    env = clean_env()
    commands = {"dbt build": str(BIN / "dbt"), "dbt-oml build": str(BIN / "dbt-oml")}
    got: dict[str, list[Sample]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="dbt-oml-pairs-") as work:
        template = Path(work) / "template"
        write_project(template, args.models)
        for pair in range(args.pairs):
            order = list(commands) if pair % 2 == 0 else list(reversed(commands))
            for name in order:
                cwd = fresh_copy(template, Path(work) / "run")
                sample = measure([commands[name], "build", "--profiles-dir", "."], cwd, env)
                got[name].append(sample)
                print(f"  {name} #{pair + 1}: {sample.wall:.2f}s", file=sys.stderr)
    print_walls(got)
    ratios = [o.wall / d.wall for d, o in zip(got["dbt build"], got["dbt-oml build"], strict=True)]
    print(
        f"\nper pair, dbt-oml build / dbt build: median {statistics.median(ratios):.3f}, "
        f"range {min(ratios):.3f}-{max(ratios):.3f} ({len(ratios)} pairs)"
    )


if __name__ == "__main__":
    main()
