"""The pipeline: what a dbt-oml command does from start to end. `live` runs dbt and listens,
keeps the artifacts, builds the events and delivers them; `offline` does the same from existing
artifacts (emit, replay, flush, lineage); `impact` and `lineage` run the analyses on a project's
artifacts. What every command shares: `report` (what it did), `sending` (the client and the
delivery), `outbox` (where undelivered events are kept), `run_inputs` (namespaces, event
settings), `state_files` (dbt-oml's files in dbt's target dir), `memory` (the collector's
passes); `console` prints log lines, progress and the summary.

Must not import the CLI, the dbt plugin or the relay (they sit above it).
"""
