"""Column-lineage accuracy of dbt-oml and its peers, against cases with a known answer.

`make bench-accuracy` runs it (`.venv/bin/python benchmarks/accuracy.py`). The tools:

| tool | virtualenv | requirements |
|---|---|---|
| dbt-oml (`dbt_oml.lineage.model.column_lineage`) | `.venv` (this checkout) | pyproject.toml |
| DataHub's parser (`datahub.sql_parsing.sqlglot_lineage`) | benchmarks/.venv-peers-datahub | requirements-datahub.txt |
| `sqlglot.lineage.lineage` per output column | benchmarks/.venv-peers-sqlglot | requirements-sqlglot.txt |
| dbt-colibri (`DbtColumnLineageExtractor`) | benchmarks/.venv-peers-colibri | requirements-colibri.txt |
| the same dbt-colibri on sqlglot 30.12 (see requirements-colibri-sg3012.txt) | benchmarks/.venv-peers-colibri-sg3012 | requirements-colibri-sg3012.txt |
| openlineage-sql (`openlineage_sql.parse`) | benchmarks/.venv-peers-olsql | requirements-olsql.txt |

A peer's virtualenv is made here when it is missing or older than its requirements file
(`python -m venv`, then `pip install -r`). Each tool runs once, cold, in its own process: a runner
script (benchmarks/accuracy/run_<tool>.py) started with that virtualenv's python, which imports
only its tool and exchanges JSON files with this script; no peer is imported here. Every tool
gets the same SQL, the same schema (tables, columns and types), the same defaults and the same
model columns (accuracy_cases.tool_input). The answers are normalised and scored by
accuracy_scoring (precision, recall, F1 of column, direct, indirect and union edges), overall
and by SQL construct (accuracy_cases.tags_of); seconds per model are the runner's own timing of
each model (the import is reported apart); a model "failed" when the tool raised, logged an
error or timed out on it (what it did return still counts).

    .venv/bin/python benchmarks/accuracy.py                    # all tools, corpus of 300 models
    .venv/bin/python benchmarks/accuracy.py --tools dbt-oml,sqlglot --models 100 --cases
    .venv/bin/python benchmarks/accuracy.py --engine-rev HEAD      # + the committed engine
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import accuracy_scoring as scoring
from accuracy_cases import (
    REPO_CASES,
    ROOT,
    SHARED_CASES,
    TAGS,
    Case,
    generated_cases,
    hand_cases,
    opaque_ids,
    tool_input,
)

BENCH = ROOT / "benchmarks"
WORK = BENCH / ".work" / "accuracy"
RUNNERS = BENCH / "accuracy"


@dataclass(frozen=True)
class Tool:
    key: str
    label: str
    venv: Path
    requirements: Path | None  # None: dbt-oml's own .venv, installed by `make` from pyproject
    kinds: bool  # says DIRECT / INDIRECT per input
    dataset: bool  # reports dataset-level inputs
    runner: str = ""  # benchmarks/accuracy/run_<runner>.py; default: the key
    pythonpath: Path | None = None  # --engine-rev: an older dbt_oml, first on the path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


TOOLS = (
    Tool("dbt-oml", "dbt-oml", ROOT / ".venv", None, kinds=True, dataset=True),
    Tool("datahub", "DataHub sqlglot_lineage", BENCH / ".venv-peers-datahub", BENCH / "requirements-datahub.txt", kinds=False, dataset=True),
    Tool("sqlglot", "sqlglot.lineage (per column)", BENCH / ".venv-peers-sqlglot", BENCH / "requirements-sqlglot.txt", kinds=False, dataset=False),
    Tool("colibri", "dbt-colibri", BENCH / ".venv-peers-colibri", BENCH / "requirements-colibri.txt", kinds=False, dataset=True),
    # what `pip install dbt-colibri` resolved is sqlglot 30.30, on which its set-operation code
    # fails (`Scope.union_scopes` is gone); the same colibri on DataHub's sqlglot 30.12 as well
    Tool("colibri-sg3012", "dbt-colibri on sqlglot 30.12", BENCH / ".venv-peers-colibri-sg3012", BENCH / "requirements-colibri-sg3012.txt", kinds=False, dataset=True, runner="colibri"),
    Tool("olsql", "openlineage-sql", BENCH / ".venv-peers-olsql", BENCH / "requirements-olsql.txt", kinds=False, dataset=False),
)  # fmt: skip


def ensure_venv(tool: Tool) -> None:
    """Make the tool's virtualenv from its pinned requirements when missing or outdated."""
    if tool.requirements is None:
        if not tool.python.exists():
            sys.exit(f"accuracy: {tool.python} is missing: run `make` (or `make bench-accuracy`)")
        return
    stamp = tool.venv / ".installed"
    if stamp.exists() and stamp.stat().st_mtime >= tool.requirements.stat().st_mtime:
        return
    print(f"accuracy: installing {tool.requirements.name} into {tool.venv}", file=sys.stderr)
    if not tool.python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(tool.venv)], check=True)
    pip = [str(tool.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-r", str(tool.requirements)], check=True)
    stamp.touch()


def run_tool(tool: Tool, cases_file: Path, timeout: float) -> dict[str, Any]:
    """The tool's runner in its own process (cold); its answers."""
    answers = cases_file.with_name(f"answers-{tool.key}.json")
    answers.unlink(missing_ok=True)
    env = {
        **os.environ,
        "DO_NOT_TRACK": "1",
        "DISABLE_COLIBRI_TELEMETRY": "1",
        "PYTHONHASHSEED": "0",
        "DATAHUB_TELEMETRY_ENABLED": "false",
    }
    env.pop("PYTHONPATH", None)
    if tool.pythonpath is not None:
        env["PYTHONPATH"] = str(tool.pythonpath)
    command = [
        str(tool.python),
        str(RUNNERS / f"run_{(tool.runner or tool.key).replace('-', '_')}.py"),
    ]
    command += [str(cases_file), str(answers), "--timeout", str(timeout)]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
    wall = time.perf_counter() - start
    if proc.returncode != 0 or not answers.exists():
        sys.exit(
            f"accuracy: the {tool.label} runner failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    doc: dict[str, Any] = json.loads(answers.read_text())
    doc["wall_seconds"] = wall
    return doc


def score(cases: list[Case], doc: dict[str, Any], tool: Tool) -> list[dict[str, Any]]:
    """Per case: the counts of each metric, exactness, failure and seconds."""
    results = {r["id"]: r for r in doc["results"]}
    rows = []
    for case in cases:
        result = results[case.id]
        truth = scoring.truth_of(
            case.expected,
            expected_direct=case.expected_direct,
            alternatives=case.alternatives,
            indirect=case.indirect,
            kinds_known=case.kinds_known,
        )
        answer = scoring.normalise(
            result,
            case.schema,
            default_catalog=case.default_catalog,
            default_schema=case.default_schema,
        )
        rows.append(
            {
                "id": case.id,
                "corpus": case.corpus,
                "tags": case.tags,
                "counts": scoring.score_case(truth, answer, kinds=tool.kinds),
                "exact": scoring.exact(truth, answer),
                "failed": result["failed"],
                "error": result["error"],
                "seconds": result["seconds"],
            }
        )
    return rows


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _metric(rows: list[dict[str, Any]], metric: str) -> scoring.Counts | None:
    return scoring.total(r["counts"][metric] for r in rows)


def _f1(rows: list[dict[str, Any]], metric: str) -> str:
    counts = _metric(rows, metric)
    return _fmt(counts.f1 if counts else None)


def _seconds(rows: list[dict[str, Any]]) -> str:
    return f"{sum(r['seconds'] for r in rows) / max(len(rows), 1):.4f}"


def overall_table(
    scored: dict[str, list[dict[str, Any]]], tools: list[Tool], corpus: set[str]
) -> str:
    lines = [
        "| tool | P | R | F1 column edges | F1 direct | F1 indirect | F1 union | exact cases "
        "| false edges | failed models | s/model |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for tool in tools:
        rows = [r for r in scored[tool.key] if r["corpus"] in corpus]
        col = _metric(rows, scoring.COLUMN) or scoring.Counts()
        union = _metric(rows, scoring.UNION)
        false = union.fp if union is not None else col.fp
        lines.append(
            f"| {tool.label} | {_fmt(col.precision)} | {_fmt(col.recall)} | {_fmt(col.f1)} "
            f"| {_f1(rows, scoring.DIRECT)} | {_f1(rows, scoring.INDIRECT)} | {_f1(rows, scoring.UNION)} "
            f"| {sum(r['exact'] for r in rows)}/{len(rows)} | {false} "
            f"| {sum(r['failed'] for r in rows)} | {_seconds(rows)} |"
        )
    return "\n".join(lines)


def construct_table(
    scored: dict[str, list[dict[str, Any]]], tools: list[Tool], metric: str, corpus: set[str]
) -> str:
    head = "| construct | cases | " + " | ".join(t.label for t in tools) + " |"
    lines = [head, "|---|---|" + "---|" * len(tools)]
    for tag in TAGS:
        ids = {r["id"] for r in scored[tools[0].key] if tag in r["tags"] and r["corpus"] in corpus}
        if not ids:
            continue
        cells = [
            _f1([r for r in scored[t.key] if r["id"] in ids and r["corpus"] in corpus], metric)
            for t in tools
        ]
        lines.append(f"| {tag} | {len(ids)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def corpus_table(
    scored: dict[str, list[dict[str, Any]]], tools: list[Tool], corpora: list[tuple[str, int]]
) -> str:
    lines = [
        "| corpus | cases | " + " | ".join(t.label for t in tools) + " |",
        "|---|---|" + "---|" * len(tools),
    ]
    for corpus, n in corpora:
        cells = []
        for tool in tools:
            rows = [r for r in scored[tool.key] if r["corpus"] == corpus]
            counts = _metric(rows, scoring.COLUMN) or scoring.Counts()
            cells.append(f"{_fmt(counts.f1)} ({sum(r['exact'] for r in rows)} exact)")
        lines.append(f"| {corpus} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def timing_table(
    docs: dict[str, dict[str, Any]], scored: dict[str, list[dict[str, Any]]], tools: list[Tool]
) -> str:
    lines = [
        "| tool | import s | s/model, hand cases | s/model, generated corpus | max s (model) | process wall s |",
        "|---|---|---|---|---|---|",
    ]
    for tool in tools:
        rows = scored[tool.key]
        hand = [r for r in rows if r["corpus"] != "generated"]
        gen = [r for r in rows if r["corpus"] == "generated"]
        slowest = max(rows, key=lambda r: r["seconds"])
        lines.append(
            f"| {tool.label} | {docs[tool.key]['import_seconds']:.2f} | {_seconds(hand)} "
            f"| {_seconds(gen) if gen else '-'} | {slowest['seconds']:.2f} ({slowest['id']}) "
            f"| {docs[tool.key]['wall_seconds']:.1f} |"
        )
    return "\n".join(lines)


def engine_state() -> str:
    """Which dbt-oml engine was measured: HEAD plus the uncommitted diff of dbt_oml/lineage."""

    def git(*args: str) -> str:
        proc = subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
        )
        return proc.stdout.strip()

    diff = git("diff", "--stat", "HEAD", "--", "dbt_oml/lineage")
    untracked = git("ls-files", "--others", "--exclude-standard", "--", "dbt_oml/lineage")
    return "\n".join(
        [
            f"HEAD {git('rev-parse', '--short', 'HEAD')}",
            diff or "(dbt_oml/lineage: no uncommitted change)",
        ]
        + ([f"untracked: {untracked}"] if untracked else [])
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models", type=int, default=300, help="size of the generated corpus (0: none)"
    )
    parser.add_argument("--tools", default=",".join(t.key for t in TOOLS))
    parser.add_argument(
        "--engine-rev", help="also measure dbt-oml's engine of this git revision (git archive)"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per model per tool")
    parser.add_argument(
        "--cases",
        action="store_true",
        help="also print each hand case's column F1 per tool (F: failed, =: exact)",
    )
    args = parser.parse_args(argv)
    tools = [t for t in TOOLS if t.key in args.tools.split(",")]
    WORK.mkdir(parents=True, exist_ok=True)
    state = engine_state()  # before the runs: another engineer may be editing the engine
    hand, notes = hand_cases()
    generated = generated_cases(WORK / f"gen-{args.models}", args.models) if args.models else []
    cases = hand + generated
    cases_file = WORK / "cases.json"
    cases_file.write_text(json.dumps({"cases": [tool_input(c) for c in cases]}))
    docs, scored = {}, {}
    tmp = tempfile.TemporaryDirectory()
    if args.engine_rev:
        from coverage import engine_of  # benchmarks/coverage.py: `git archive REV dbt_oml`

        rev_root = engine_of(args.engine_rev, Path(tmp.name))
        tools.insert(
            1,
            replace(
                TOOLS[0],
                key="dbt-oml-rev",
                label=f"dbt-oml at {args.engine_rev}",
                runner="dbt-oml",
                pythonpath=rev_root,
            ),
        )
    for tool in tools:
        ensure_venv(tool)
        print(f"accuracy: {tool.label} on {len(cases)} models", file=sys.stderr)
        docs[tool.key] = run_tool(tool, cases_file, args.timeout)
        scored[tool.key] = score(cases, docs[tool.key], tool)
        loaded = docs[tool.key].get("loaded_from", {}).get("dbt_oml", "")
        if tool.pythonpath is not None and not loaded.startswith(str(tool.pythonpath)):
            sys.exit(
                f"accuracy: wanted the engine in {tool.pythonpath}, the runner loaded {loaded}"
            )
    tmp.cleanup()
    n_shared = sum(c.corpus == "shared" for c in cases)
    n_repo = sum(c.corpus == "repo" for c in cases)
    left_out = opaque_ids([SHARED_CASES, *REPO_CASES])
    out = [
        f"Cases: {n_shared} shared, {n_repo} repo, {len(generated)} generated "
        f"(lineage_gen.py at {args.models} models); left out (their truth is `opaque`): "
        + (", ".join(left_out) or "none"),
        *notes,
        "",
        "Versions: "
        + "; ".join(
            f"{t.label}: "
            + ", ".join(
                f"{k} {v}" for k, v in docs[t.key]["versions"].items() if v != "not installed"
            )
            + f" (python {docs[t.key]['python']})"
            for t in tools
        ),
        "",
        "dbt-oml engine measured (this checkout): " + state.replace("\n", "; "),
        "",
        f"Hand cases (shared + repo, {n_shared + n_repo}):",
        "",
        overall_table(scored, tools, {"shared", "repo"}),
    ]
    if generated:
        out += [
            "",
            f"Generated corpus ({len(generated)} models; column edges only):",
            "",
            overall_table(scored, tools, {"generated"}),
        ]
    out += [
        "", "Column-edge F1 and exact cases by corpus:", "",
        corpus_table(scored, tools, [("shared", n_shared), ("repo", n_repo), ("generated", len(generated))]),
        "", "Column-edge F1 by construct (hand cases):", "",
        construct_table(scored, tools, scoring.COLUMN, {"shared", "repo"}),
        "", "Union F1 (column + dataset-level edges) by construct (hand cases):", "",
        construct_table(scored, tools, scoring.UNION, {"shared", "repo"}),
        "", "Seconds:", "", timing_table(docs, scored, tools),
    ]  # fmt: skip
    out += [
        "",
        "Failed models (raised, logged an error or timed out; what was returned still counts):",
        "",
    ]
    for tool in tools:
        failed = [r for r in scored[tool.key] if r["failed"]]
        listed = "; ".join(f"{r['id']} ({(r['error'] or '')[:90]})" for r in failed[:12])
        more = f"; and {len(failed) - 12} more" if len(failed) > 12 else ""
        out.append(f"- {tool.label}: {len(failed)}" + (f": {listed}{more}" if failed else ""))
    if args.cases:
        out += ["", "| case | corpus | " + " | ".join(t.label for t in tools) + " |",
                "|---|---|" + "---|" * len(tools)]  # fmt: skip
        for i, case in enumerate(hand):
            cells = []
            for tool in tools:
                row = scored[tool.key][i]
                cell = _fmt(row["counts"][scoring.COLUMN].f1) + ("" if not row["failed"] else " F")
                cells.append(cell + (" =" if row["exact"] else ""))
            out.append(f"| {case.id} | {case.corpus} | " + " | ".join(cells) + " |")
    print("\n".join(out))
    (WORK / "results.json").write_text(
        json.dumps(
            {
                "docs": {
                    k: {kk: vv for kk, vv in d.items() if kk != "results"} for k, d in docs.items()
                },
                "answers": {k: d["results"] for k, d in docs.items()},
                "scored": {
                    k: [
                        {
                            **r,
                            "counts": {
                                m: (c.__dict__ if c else None) for m, c in r["counts"].items()
                            },
                        }
                        for r in rows
                    ]
                    for k, rows in scored.items()
                },
            },
            indent=1,
        )
    )
    print(f"\n(per-case answers and counts: {WORK / 'results.json'})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
