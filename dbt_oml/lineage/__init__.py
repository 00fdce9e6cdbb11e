"""lineage."""
