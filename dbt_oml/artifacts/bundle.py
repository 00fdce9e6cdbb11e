"""Read the artifacts of one dbt invocation from its target directory into a RunArtifacts."""

from __future__ import annotations

from pathlib import Path

from dbt_oml.artifacts.catalog import read_optional_catalog
from dbt_oml.artifacts.manifest import read_manifest
from dbt_oml.artifacts.run_results import read_run_results
from dbt_oml.artifacts.views import KEPT_MANIFEST, KEPT_RUN_RESULTS, RunArtifacts


def read_artifacts(target: Path, *, run_results: Path | None = None) -> RunArtifacts:
    """Read the artifacts in a target directory.

    run_results.json is optional (a parse error leaves none); catalog.json is optional. A
    run_results.json written by `dbt docs generate` is replaced by the build's copy
    (target/dbt_oml/build/, left there when `dbt-oml build` was killed before putting it back).
    """
    results_path = run_results or target / "run_results.json"
    results = read_run_results(results_path) if results_path.exists() else None
    manifest_path = target / "manifest.json"
    kept = target / KEPT_RUN_RESULTS
    if run_results is None and kept.exists() and (results is None or results.command == "generate"):
        # `dbt docs generate` overwrote run_results.json (and manifest.json): use the build's copies
        results = read_run_results(kept)
        if (target / KEPT_MANIFEST).exists():
            manifest_path = target / KEPT_MANIFEST
    manifest = read_manifest(manifest_path)
    catalog, problems = read_optional_catalog(target / "catalog.json")
    if results is not None:
        problems += results.problems
    return RunArtifacts(manifest=manifest, run_results=results, catalog=catalog, problems=problems)
