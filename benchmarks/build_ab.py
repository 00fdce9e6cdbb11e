"""A change to `dbt-oml build` measured against the code before it: whole command, before and
after dbt's `Done.`, on the synthetic project (synth_project.py), a fresh copy per run.

Variants interleaved in one run: plain `dbt build`, `dbt-oml build` with an older dbt_oml first
on PYTHONPATH (`--before DIR`, e.g. `git archive REV dbt_oml | tar -x -C DIR`), and `dbt-oml
build` as installed, both as `python -m dbt_oml` (the tree's own entry). Medians of the repeats, the spread beside them.

    .venv/bin/python benchmarks/build_ab.py --before /tmp/before --models 500 --repeats 4

Results: benchmarks/README.md (section 0d).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import BIN, Sample, clean_env, fresh_copy, measure, print_walls
from synth_project import write_project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a folder holding dbt_oml/")
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--flag", action="append", default=[], help="a flag for both dbt-oml builds (repeatable)"
    )
    args = parser.parse_args()
    env = clean_env()
    variants = {
        "dbt build": ([str(BIN / "dbt"), "build"], {}),
        "dbt-oml build, before": (
            [str(BIN / "python"), "-m", "dbt_oml", "build", *args.flag],
            {"PYTHONPATH": str(args.before.resolve())},
        ),
        "dbt-oml build, this tree": (
            [str(BIN / "python"), "-m", "dbt_oml", "build", *args.flag],
            {},
        ),
    }
    samples: dict[str, list[Sample]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="dbt-oml-ab-") as work:
        template = Path(work) / "template"
        write_project(template, args.models)
        for repeat in range(args.repeats):
            for name, (command, extra) in variants.items():
                cwd = fresh_copy(template, Path(work) / "run")
                sample = measure([*command, "--profiles-dir", "."], cwd, env | extra)
                samples[name].append(sample)
                print(f"  {name} #{repeat + 1}: {sample.wall:.2f}s", file=sys.stderr)
    print_walls(samples)


if __name__ == "__main__":
    main()
