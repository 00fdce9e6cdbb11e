"""`dbt-oml impact`'s analysis: what downstream reads given columns (`analysis`), what a
model's column computes across two builds (`sql`), the exposures that use models (`exposures`)
and the report for people and machines (`report`).

Pure over the lineage graph. Must not import dbt, I/O libraries, the pipeline or the CLI (the
pipeline reads the artifacts and hands them in).
"""
