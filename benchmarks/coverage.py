"""Share of models with column lineage: how many models dbt-oml analyses, how many get a
columnLineage facet (not opaque), and why the others are opaque.

Two corpora, from artifacts alone (no warehouse, no OpenMetadata):

- the bundled project: `integration_project/target` after a build (`make demo`, or
  `dbt-oml build --profiles-dir .` in integration_project). When its artifacts are missing this
  script runs that build first (`--no-build`: say so and stop instead);
- the generated corpus: `benchmarks/lineage_gen.py` at `--models` models (300 by default).

`--engine-rev REV` measures the engine of an older commit next to this checkout's: `git archive
REV dbt_oml` into a temporary directory, then the same measurement in a subprocess with that
directory first on `PYTHONPATH` (the artifacts are the same; only the engine differs). Both the
flat layout of before issue 13 (`dbt_oml.lineage_batch`) and the packages (`dbt_oml.lineage.batch`)
are understood.

    .venv/bin/python benchmarks/coverage.py                        # this checkout
    .venv/bin/python benchmarks/coverage.py --engine-rev c911212^   # before/after issue 19

What is counted is what `dbt-oml emit`/`build` analyses: every model and snapshot that is not
ephemeral, with the seeds' CSV headers, 2 worker processes, no lineage cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "integration_project"
WORK = ROOT / "benchmarks" / ".work" / "coverage"
BUILD_HINT = (
    "cd integration_project && ../.venv/bin/dbt-oml build --profiles-dir .  (or: make demo)"
)
ARTIFACTS = ("manifest.json", "catalog.json")


def _engine() -> tuple[Any, Any, Any, Any]:
    """read_artifacts, analyse_models, ANALYSED_TYPES, seed_headers of whichever layout is first
    on sys.path (the packages since issue 13, the flat modules before)."""
    from dbt_oml.artifacts import read_artifacts

    try:
        from dbt_oml.lineage.batch import ANALYSED_TYPES, analyse_models
        from dbt_oml.pipeline.lineage import seed_headers
    except ImportError:  # the flat layout of before issue 13
        from dbt_oml.lineage_batch import (  # type: ignore[no-redef]
            ANALYSED_TYPES,
            analyse_models,
        )
        from dbt_oml.lineage_run import seed_headers  # type: ignore[no-redef]
    return read_artifacts, analyse_models, ANALYSED_TYPES, seed_headers


def measure(target: Path, project_dir: Path | None) -> dict[str, Any]:
    """Analyse one target's models with the engine on sys.path; counts and opaque reasons."""
    import dbt_oml

    read_artifacts, analyse_models, analysed_types, seed_headers = _engine()
    artifacts = read_artifacts(target)
    nodes = artifacts.manifest.nodes
    wanted = {
        uid
        for uid, n in nodes.items()
        if n.resource_type in analysed_types and n.materialized != "ephemeral"
    }
    headers = seed_headers(artifacts.manifest, project_dir) if project_dir else None
    report = analyse_models(
        artifacts, wanted=wanted, dialect="duckdb", seed_headers=headers, workers=2
    )
    opaque = {uid: why for uid, why in report.opaque.items() if uid in wanted}
    return {
        "engine": str(Path(dbt_oml.__file__).parent),
        "analysed": len(wanted),
        "with_lineage": len([uid for uid in report.models if uid in wanted]),
        "opaque": dict(sorted(opaque.items())),
    }


def _measure_in(engine_root: Path, target: Path, project_dir: Path | None) -> dict[str, Any]:
    """`measure` in a fresh interpreter whose `dbt_oml` is the one under engine_root."""
    command = [sys.executable, __file__, "--measure", str(target)]
    if project_dir is not None:
        command += ["--project-dir", str(project_dir)]
    env = {**os.environ, "PYTHONPATH": str(engine_root), "DO_NOT_TRACK": "1"}
    with tempfile.TemporaryDirectory() as cwd:  # nothing of the checkout by accident
        proc = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=3600
        )
    if proc.returncode != 0:
        sys.exit(f"coverage: measuring with {engine_root} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if Path(result["engine"]) != engine_root / "dbt_oml":
        sys.exit(f"coverage: wanted the engine in {engine_root}, got {result['engine']}")
    return result


def bundled_target(*, build: bool) -> Path:
    """integration_project/target with a manifest and a catalog; built first when missing."""
    target = PROJECT / "target"
    if all((target / name).is_file() for name in ARTIFACTS):
        return target
    if not build:
        sys.exit(f"coverage: no artifacts in {target}; build them first: {BUILD_HINT}")
    print(f"coverage: no artifacts in {target}; building: {BUILD_HINT}", file=sys.stderr)
    dbt_oml_cli = Path(sys.executable).with_name("dbt-oml")
    proc = subprocess.run(
        [str(dbt_oml_cli), "build", "--profiles-dir", "."],
        cwd=PROJECT,
        env={**os.environ, "DO_NOT_TRACK": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not all((target / n).is_file() for n in ARTIFACTS):
        sys.exit(f"coverage: the build failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return target


def generated_target(models: int) -> Path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from lineage_gen import generate

    return generate(WORK / f"gen-{models}", models)


def engine_of(rev: str, into: Path) -> Path:
    """dbt_oml of commit `rev` (`git archive REV dbt_oml`), extracted under `into`."""
    archive = into / "engine.tar"
    with archive.open("wb") as out:
        subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "dbt_oml"],
            stdout=out,
            check=True,
        )
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():  # our own repository's files: refuse anything odd anyway
            if member.name.startswith(("/", "..")) or not (member.isfile() or member.isdir()):
                sys.exit(f"coverage: unexpected member {member.name!r} in git archive {rev}")
        tar.extractall(into)  # noqa: S202 - members checked above
    return into


def _share(row: dict[str, Any]) -> str:
    n, k = row["analysed"], row["with_lineage"]
    return f"{k}/{n} ({100 * k / n:.0f} %)" if n else "0/0"


def _reasons(row: dict[str, Any], limit: int = 4) -> str:
    """Each opaque model with its reason (the first `limit`), then counts of the other reasons."""
    opaque = sorted(row["opaque"].items())
    if not opaque:
        return "none"
    parts = [f"{uid.split('.')[-1]}: {why}" for uid, why in opaque[:limit]]
    rest = Counter(why for _, why in opaque[limit:])
    parts += [f"{n} more: {why}" for why, n in rest.most_common()]
    return "; ".join(parts).replace("|", "\\|")


def table(rows: list[tuple[str, str, dict[str, Any]]]) -> str:
    lines = [
        "| corpus | engine | models analysed | with column lineage | opaque (reason) |",
        "|---|---|---|---|---|",
    ]
    for corpus, engine, row in rows:
        lines.append(
            f"| {corpus} | {engine} | {row['analysed']} | {_share(row)} | {_reasons(row)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=300, help="size of the generated corpus")
    parser.add_argument("--engine-rev", help="also measure the engine of this git revision")
    parser.add_argument("--no-build", action="store_true", help="never build the bundled project")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--project-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:  # the subprocess: one target, the engine on sys.path
        project_dir = Path(args.project_dir) if args.project_dir else None
        print(json.dumps(measure(Path(args.measure), project_dir)))
        return 0
    corpora = [
        ("bundled project", bundled_target(build=not args.no_build), PROJECT),
        (f"lineage_gen.py {args.models} models", generated_target(args.models), None),
    ]
    rows: list[tuple[str, str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        engines = [("this checkout", ROOT)]
        if args.engine_rev:
            engines.insert(0, (f"`{args.engine_rev}`", engine_of(args.engine_rev, Path(tmp))))
        for corpus, target, project_dir in corpora:
            for label, engine_root in engines:
                rows.append((corpus, label, _measure_in(engine_root, target, project_dir)))
    print(table(rows))
    if args.json:
        print(json.dumps([{"corpus": c, "engine": e, **r} for c, e, r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
