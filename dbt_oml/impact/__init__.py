"""`dbt-oml impact`'s analysis: what downstream reads given columns (`analysis`), which models
and columns changed between two builds (`compare`), what it finds (`findings`), what a
model's column computes across two builds (`sql`), the exposures that use models (`exposures`)
and the report for people and machines (`report`).

Pure over the lineage graph. Must not import dbt, I/O libraries, the pipeline or the CLI (the
pipeline reads the artifacts and hands them in).
"""
