"""What users wait for: whole commands on the synthetic corpus built as a real dbt-duckdb project.

`make bench` runs it (in benchmarks/.venv, next to dbt-ol). Two parts, variants interleaved,
medians of the repeats, the spread (min-max) next to them:

- emit, 2,000 models: the project is built once (`dbt build`, `dbt docs generate`, then the build's
  run_results.json put back, so both tools read the same artifacts); then `dbt-oml emit` with an
  empty lineage cache (cold), a full one (warm), one staging model's SQL changed, a new pod (no
  cache in target/) over a shared lineage cache another pod's run filled (a folder, and a
  JetStream key-value bucket on the machine's NATS, BENCH_NATS_URL), the floor (no column
  lineage: reading the artifacts and writing the events), and `dbt-ol send-events`, all with the
  file transport. Each row is a ratio to dbt-ol and to the floor.
- build, 500 models: `dbt-oml build` (docs generate on), `--lineage-during-run`,
  `--no-docs-generate`, `dbt-ol build`,
  `dbt build` + `dbt docs generate`, and plain `dbt build`, each in a fresh copy of the project.

Peak RSS is the largest sum of the resident sets of the command's process tree (sampled from
/proc every 20 ms; dbt-oml's lineage workers and dbt-ol's dbt child included). "After Done" is the
time from dbt's `Done. PASS=` line to the end of the command. Column lineage is scored against the
corpus' ground truth: dbt-oml must be exact on every model (else the run exits non-zero, one
line, after the emit table); dbt-ol's recall is shown.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / ".work" / "e2e"
sys.path.insert(0, str(ROOT / "benchmarks"))

import measuring  # noqa: E402
from measuring import BIN, Sample, clean_env, fresh_copy, measure, ol_env  # noqa: E402
from synth_project import write_project  # noqa: E402

#: The machine's NATS with JetStream (the shared-bucket variant's store).
NATS_URL = os.environ.get("BENCH_NATS_URL", "nats://127.0.0.1:4222")
FLOOR = "dbt-oml emit --no-column-lineage (floor)"


@dataclass
class Variant:
    name: str
    samples: list[Sample] = field(default_factory=list)


def built_project(models: int) -> Path:
    """The 2,000-model project with its build's run_results.json and docs generate's catalog."""
    dest = WORK / f"emit-{models}"
    stamp = dest / ".built"
    if stamp.exists():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    write_project(dest, models)
    env, dbt = clean_env(), str(BIN / "dbt")
    print(
        f"  building the {models}-model project once (dbt build + docs generate)", file=sys.stderr
    )
    subprocess.run(
        [dbt, "build", "--profiles-dir", "."],
        cwd=dest,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    shutil.copyfile(dest / "target" / "run_results.json", dest / "run_results.build.json")
    subprocess.run(
        [dbt, "docs", "generate", "--profiles-dir", "."],
        cwd=dest,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    shutil.copyfile(dest / "run_results.build.json", dest / "target" / "run_results.json")
    stamp.write_text("ok")
    return dest


def change_one_model(target: Path, repeat: int) -> None:
    """One staging model edited (as a rebuild after an edit would leave its artifacts)."""
    uid, note = "model.synth.stg_0000", f"\n-- edited {repeat}\n"
    for name, section in (("manifest.json", "nodes"), ("run_results.json", "results")):
        doc = json.loads((target / name).read_text())
        items = doc[section].values() if isinstance(doc[section], dict) else doc[section]
        for item in items:
            if item.get("unique_id") == uid and item.get("compiled_code"):
                item["compiled_code"] = item["compiled_code"].rstrip("\n") + note
        (target / name).write_text(json.dumps(doc))


def lineage_score(
    events: Path, truth: dict[str, dict[str, list[list[str]]]]
) -> tuple[int, int, int, int]:
    """(exact models, models, edges found, edges) of the events' columnLineage vs the truth."""
    by_relation = {".".join(uid.split(".")[-1:]): want for uid, want in truth.items()}
    got: dict[str, dict[str, set[tuple[str, str]]]] = {}
    with events.open() as f:
        for line in f:
            doc = json.loads(line)
            for out in doc.get("outputs") or ():
                facet = (out.get("facets") or {}).get("columnLineage") or (
                    out.get("outputFacets") or {}
                ).get("columnLineage")
                if not facet:
                    continue
                table = out["name"].split(".")[-1]
                got[table] = {
                    column: {(f["name"].split(".")[-1], f["field"]) for f in spec["inputFields"]}
                    for column, spec in facet["fields"].items()
                }
    exact = found = edges = 0
    for table, want in by_relation.items():
        mine = got.get(table, {})
        wanted = {c: {(t, col) for _, _, t, col in inputs} for c, inputs in want.items()}
        exact += mine == wanted
        for column, inputs in wanted.items():
            edges += len(inputs)
            found += len(inputs & mine.get(column, set()))
    return exact, len(by_relation), found, edges


@functools.cache
def _nats_answers(url: str) -> bool:
    """Whether a NATS server listens at `url` (else the JetStream row is left out, said once)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 4222), 2).close()
    except OSError:
        print(f"  no NATS at {url}: the shared JetStream bucket row is left out", file=sys.stderr)
        return False
    return True


def _drop_bucket(url: str) -> None:
    """Delete the benchmark's key-value bucket from the machine's NATS."""
    import asyncio

    import nats

    server, _, bucket = url.rpartition("/")

    async def drop() -> None:
        nc = await nats.connect(server)
        try:
            await nc.jetstream().delete_key_value(bucket)
        finally:
            await nc.close()

    asyncio.run(drop())


def emit_part(models: int, repeats: int) -> tuple[list[str], str | None]:
    """The emit table's rows, and why dbt-oml's column lineage is not exact (None when it is)."""
    base = built_project(models)
    truth = json.loads((base / "truth.json").read_text())
    target, env = base / "target", clean_env()
    oml, ol = str(BIN / "dbt-oml"), str(BIN / "dbt-ol")
    cache = target / "dbt_oml" / "lineage-cache"
    pristine = WORK / f"emit-{models}-artifacts"
    if not pristine.exists():
        pristine.mkdir()
        for name in ("manifest.json", "run_results.json"):
            shutil.copyfile(target / name, pristine / name)

    def reset() -> None:
        for name in ("manifest.json", "run_results.json"):
            shutil.copyfile(pristine / name, target / name)

    out_oml, out_ol = WORK / "emit-oml.jsonl", WORK / "emit-ol.jsonl"

    def oml_emit(prepare: Callable[[int], None], *flags: str) -> Callable[[int], Sample]:
        def run(repeat: int) -> Sample:
            reset()
            prepare(repeat)
            out_oml.unlink(missing_ok=True)
            cmd = [oml, "emit", "--profiles-dir", ".", "--events-file", str(out_oml), *flags]
            sample = measure(cmd, base, env)
            sample.events_bytes = out_oml.stat().st_size
            return sample

        return run

    def warm_up(_: int) -> None:
        measure([oml, "emit", "--profiles-dir", ".", "--events-file", os.devnull], base, env)

    def ol_send(_: int) -> Sample:
        reset()
        out_ol.unlink(missing_ok=True)
        sample = measure([ol, "send-events", "--profiles-dir", "."], base, env | ol_env(out_ol))
        sample.events_bytes = out_ol.stat().st_size
        return sample

    def new_pod(_: int) -> None:
        shutil.rmtree(cache, ignore_errors=True)

    shared_dir = WORK / "shared-lineage-cache"
    shutil.rmtree(shared_dir, ignore_errors=True)
    bucket = f"{NATS_URL}/dbt_oml_bench_{os.getpid()}"
    variants: dict[str, Callable[[int], Sample]] = {
        "dbt-oml emit, cold cache": oml_emit(new_pod),
        "dbt-oml emit, warm cache": oml_emit(lambda _: None),
        "dbt-oml emit, one model changed": oml_emit(lambda r: change_one_model(target, r)),
        # a new pod (no target cache) after another pod's run shared what it analysed
        "dbt-oml emit, new pod, shared folder": oml_emit(
            new_pod, "--lineage-cache", str(shared_dir)
        ),
        **(
            {
                "dbt-oml emit, new pod, shared JetStream bucket": oml_emit(
                    new_pod, "--lineage-cache", bucket
                )
            }
            if _nats_answers(NATS_URL)
            else {}
        ),
        # the floor: read the artifacts, build and write the events, no column lineage
        "dbt-oml emit --no-column-lineage (floor)": oml_emit(lambda _: None, "--no-column-lineage"),
        "dbt-ol send-events": ol_send,
    }
    stores = [str(shared_dir)] + ([bucket] if _nats_answers(NATS_URL) else [])
    for shared in stores:  # another pod's run fills the shared stores
        new_pod(0)
        measure(
            [
                oml,
                "emit",
                "--profiles-dir",
                ".",
                "--events-file",
                os.devnull,
                "--lineage-cache",
                shared,
            ],
            base,
            env,
        )
    samples: dict[str, list[Sample]] = {v: [] for v in variants}
    for r in range(repeats):
        for name, run in variants.items():
            if name.endswith(("warm cache", "changed")):
                reset()
                warm_up(r)  # every model of the pristine artifacts in the cache
            samples[name].append(run(r))
            print(f"  emit {name} #{r + 1}: {samples[name][-1].wall:.2f}s", file=sys.stderr)
    if _nats_answers(NATS_URL):
        _drop_bucket(bucket)
    reset()
    oml_emit(lambda _: None)(0)
    exact, total, _, _ = lineage_score(out_oml, truth)
    ol_send(0)
    _, _, found, edges = lineage_score(out_ol, truth)
    ref = statistics.median(s.wall for s in samples["dbt-ol send-events"])
    floor = statistics.median(s.wall for s in samples[FLOOR])
    ref_rss = statistics.median(s.rss_mib for s in samples["dbt-ol send-events"])
    rows = []
    for name, got in samples.items():
        walls = [s.wall for s in got]
        wall = statistics.median(walls)
        rss = statistics.median(s.rss_mib for s in got)
        rows.append(
            f"| {models} | {name} | {wall:.2f} | {min(walls):.2f}-{max(walls):.2f} | {wall / ref:.2f} "
            f"| {wall / floor:.2f} | {rss:.0f} ({rss / ref_rss:.2f}x) "
            f"| {statistics.median(s.events_bytes for s in got) / 1e6:.1f} |"
        )
    rows.append(
        f"| {models} | column lineage vs ground truth | | | | | | dbt-oml exact on {exact}/{total} "
        f"models; dbt-ol recall {found / max(edges, 1):.1%} of {edges} edges |"
    )
    inexact = None
    if total == 0 or exact != total:
        inexact = (
            f"e2e_bench: FAIL: dbt-oml's column lineage is exact on {exact}/{total} models of the "
            f"corpus' ground truth (every model must be); events in {out_oml}"
        )
    return rows, inexact


def build_part(models: int, repeats: int) -> list[str]:
    template = WORK / f"build-{models}-template"
    if not (template / "dbt_project.yml").exists():
        shutil.rmtree(template, ignore_errors=True)
        write_project(template, models)
    env = clean_env()
    dbt, oml, ol = str(BIN / "dbt"), str(BIN / "dbt-oml"), str(BIN / "dbt-ol")
    variants: dict[str, list[list[str]]] = {
        "dbt build": [[dbt, "build", "--profiles-dir", "."]],
        "dbt build + dbt docs generate": [
            [dbt, "build", "--profiles-dir", "."],
            [dbt, "docs", "generate", "--profiles-dir", "."],
        ],
        "dbt-oml build": [[oml, "build", "--profiles-dir", "."]],
        "dbt-oml build --lineage-during-run": [
            [oml, "build", "--profiles-dir", ".", "--lineage-during-run"]
        ],
        "dbt-oml build --no-docs-generate": [
            [oml, "build", "--profiles-dir", ".", "--no-docs-generate"]
        ],
        "dbt-ol build": [[ol, "build", "--profiles-dir", "."]],
    }
    samples: dict[str, list[Sample]] = {v: [] for v in variants}
    for r in range(repeats):
        for name, commands in variants.items():
            cwd = fresh_copy(template, WORK / f"build-{models}-{r}-{abs(hash(name))}")
            events = cwd / "ol-events.jsonl"
            run_env = env | (ol_env(events) if name.startswith("dbt-ol") else {})
            parts = [measure(c, cwd, run_env) for c in commands]
            sample = Sample(
                wall=sum(p.wall for p in parts),
                rss_mib=max(p.rss_mib for p in parts),
                # docs generate after the build: all of it is time after dbt's Done
                after_done=(parts[0].after_done or 0) + sum(p.wall for p in parts[1:]),
            )
            oml_events = cwd / "target" / "openlineage" / "events.jsonl"
            for path in (events, oml_events):
                if path.exists():
                    sample.events_bytes = path.stat().st_size
            samples[name].append(sample)
            shutil.rmtree(cwd)
            print(f"  build {name} #{r + 1}: {sample.wall:.2f}s", file=sys.stderr)
    med = {n: statistics.median(s.wall for s in got) for n, got in samples.items()}
    against = {
        "dbt-oml build": "dbt build + dbt docs generate",
        "dbt-oml build --lineage-during-run": "dbt-oml build",
        "dbt-oml build --no-docs-generate": "dbt-ol build",
    }
    rows = []
    for name, got in samples.items():
        walls = [s.wall for s in got]
        ref = against.get(name)
        ratio = f"{med[name] / med[ref]:.2f} x {ref}" if ref else ""
        rows.append(
            f"| {models} | {name} | {med[name]:.2f} | {min(walls):.2f}-{max(walls):.2f} "
            f"| {statistics.median(s.after_done or 0 for s in got):.2f} | {ratio} "
            f"| {statistics.median(s.rss_mib for s in got):.0f} "
            f"| {statistics.median(s.events_bytes for s in got) / 1e6:.1f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--emit-models", type=int, default=2000)
    parser.add_argument("--build-models", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip", choices=["emit", "build"], action="append", default=[])
    parser.add_argument(
        "--service-links",
        type=int,
        default=0,
        help="every command's environment holds the Kubernetes links of this many services",
    )
    args = parser.parse_args()
    measuring.SERVICES = args.service_links  # the whole run's environment, set once
    WORK.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    if "emit" not in args.skip:
        rows, inexact = emit_part(args.emit_models, args.repeats)
        print(
            "| models | variant | wall s (median) | min-max s | x dbt-ol | x floor "
            "| peak RSS MiB (tree, x dbt-ol) | events MB |"
        )
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(rows), flush=True)
        if inexact is not None:  # the table stays for the record; the run fails, one line
            raise SystemExit(inexact)
    if "build" not in args.skip:
        rows = build_part(args.build_models, args.repeats)
        print(
            "| models | variant | wall s (median) | min-max s | after Done s | ratio "
            "| peak RSS MiB (tree) | events MB |"
        )
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))
    print(f"load average at start {load[0]:.1f}, at end {os.getloadavg()[0]:.1f} (2 cores)")


if __name__ == "__main__":
    main()
