"""Slim CI on the generated project: how many models `dbt-oml impact --state --selector` selects
against dbt's `state:modified+`, for one changed column in each of several staging models.

The project is `synth_project.py`'s (views over empty tables, so the warehouse cannot say what
changed: tests/integration/test_slim_ci.py holds the selection against real data on the bundled
project). It is built once (the production state); each change edits one staging model's
first `lower(...)` column to `upper(...)` in a copy and compiles it.

    .venv/bin/python benchmarks/slim_ci.py --models 500 --changes 5

Results: benchmarks/README.md, section 10.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth_project

BIN = Path(sys.executable).parent
BUILDABLE = ["--resource-type", "model", "--resource-type", "snapshot", "--resource-type", "seed"]


def _run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:3])} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def _dbt(*args: str, cwd: Path) -> str:
    return _run([str(BIN / "dbt"), *args, "--profiles-dir", "."], cwd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--changes", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dbt-oml-slim-") as scratch:
        prod = synth_project.write_project(Path(scratch) / "prod", args.models)
        _dbt("build", "-q", cwd=prod)
        staging = sorted((prod / "models" / "staging").glob("*.sql"))
        step = max(1, len(staging) // args.changes)
        rows = []
        for model in staging[::step][: args.changes]:
            dev = Path(scratch) / f"dev-{model.stem}"
            shutil.copytree(prod, dev, ignore=shutil.ignore_patterns("logs", "target"))
            path = dev / "models" / "staging" / model.name
            text = path.read_text()
            path.write_text(re.sub(r"lower\(", "upper(", text, count=1))
            _dbt("compile", "-q", cwd=dev)
            state = ["--state", str(prod / "target")]
            selector = _run(
                [str(BIN / "dbt-oml"), "impact", *state, "--selector", "--profiles-dir", "."], dev
            ).split()
            modified = _dbt(
                "ls", "-s", "state:modified+", *state, *BUILDABLE, "-q", "--output", "name", cwd=dev
            ).split()
            assert set(selector) <= set(modified), set(selector) - set(modified)
            rows.append((model.stem, len(selector), len(modified)))
            print(f"{model.stem}: selected {len(selector)}, state:modified+ {len(modified)}")
        ratio = statistics.median(s / m for _, s, m in rows)
        print(f"median selected / state:modified+: {ratio:.2f} over {len(rows)} changes")


if __name__ == "__main__":
    main()
