"""The dbt edge: dbt-core run in-process with its node events heard as they happen
(`runner`), the project, profile and target as dbt's loaders resolve them without a run
(`project`), the real columns of relations read through the adapter dbt still holds
(`relation_columns`), and the switch that keeps the dbt plugin inert inside dbt-oml's own runs
(`own_runs`).

Must not import: the pipeline, the plugin, the CLI, delivery, transports or OpenMetadata.
"""
