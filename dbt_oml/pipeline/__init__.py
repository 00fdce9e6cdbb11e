"""The pipeline: what a dbt-oml command does from start to end. `live` runs dbt and listens,
keeps the artifacts, builds the events and delivers them; `offline` does the same from existing
artifacts (emit, replay, flush, lineage); `impact` and `lineage` run the analyses on a project's
artifacts; `run_state` holds what every command shares (report, emitter, files in dbt's target
dir); `console` prints log lines, progress and the summary.

Must not import the CLI, the dbt plugin or the relay (they sit above it).
"""
