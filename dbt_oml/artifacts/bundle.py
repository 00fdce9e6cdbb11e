"""Read the artifacts of one dbt invocation from its target directory into a RunArtifacts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from dbt_oml.artifacts.catalog import read_optional_catalog
from dbt_oml.artifacts.manifest import read_manifest
from dbt_oml.artifacts.run_results import read_run_results
from dbt_oml.artifacts.views import (
    DOCS_GENERATE_DIR,
    KEPT_MANIFEST,
    KEPT_RUN_RESULTS,
    Catalog,
    Manifest,
    RunArtifacts,
    RunResults,
)
from dbt_oml.errors import ArtifactError


def read_artifacts(
    target: Path, *, run_results: Path | None = None, catalog: Catalog | None = None
) -> RunArtifacts:
    """Read the artifacts in a target directory.

    run_results.json is optional (a parse error leaves none); catalog.json is optional. A
    run_results.json written by `dbt docs generate` is replaced by the build's copy
    (target/dbt_oml/build/, left there when `dbt-oml build` was killed before putting it back).
    `catalog`: target/catalog.json as this process wrote it (not read again).
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
    manifest = with_compiled_code(read_manifest(manifest_path), target, manifest_path)
    problems: tuple[str, ...] = ()
    if catalog is None:
        catalog, problems = read_optional_catalog(target / "catalog.json")
    if results is not None:
        problems += results.problems
        results = _sharing_sql(results, manifest)
    return RunArtifacts(manifest=manifest, run_results=results, catalog=catalog, problems=problems)


def _sharing_sql(results: RunResults, manifest: Manifest) -> RunResults:
    """`results` whose compiled SQL is the manifest's string where the two are equal (as after
    every build): one copy of each model's SQL held, not two (2.2 MB at 2,000 models)."""
    nodes = manifest.nodes
    shared = []
    for result in results.results:
        node = nodes.get(result.unique_id)
        code = node.compiled_code if node is not None else None
        own = result.compiled_code
        same = code is not None and code is not own and code == own
        shared.append(replace(result, compiled_code=code) if same else result)
    return replace(results, results=tuple(shared))


def with_compiled_code(manifest: Manifest, target: Path, manifest_path: Path) -> Manifest:
    """The build's manifest, its models that did not run given the compiled SQL of the `dbt docs
    generate` that `dbt-oml build` ran after it (target/dbt_oml/docs_generate/manifest.json,
    which compiles every model), where that manifest is newer and the model's code the same.

    After `dbt-oml run -s one_model` the build's manifest holds one model's compiled SQL: the
    project-wide answers of `lineage` and `impact` need every model's.
    """
    missing = [
        uid
        for uid, n in manifest.nodes.items()
        if n.resource_type in {"model", "snapshot"} and not n.compiled_code and n.raw_code
    ]
    docs = target / DOCS_GENERATE_DIR / "manifest.json"
    if not missing or not docs.is_file() or docs.stat().st_mtime < manifest_path.stat().st_mtime:
        return manifest
    try:
        compiled = read_manifest(docs).nodes
    except ArtifactError:  # a help, not a need: the build's own manifest stands
        return manifest
    nodes = dict(manifest.nodes)
    for uid in missing:
        node, other = nodes[uid], compiled.get(uid)
        if other is not None and other.compiled_code and other.raw_code == node.raw_code:
            nodes[uid] = replace(node, compiled_code=other.compiled_code)
    return replace(manifest, nodes=nodes)
