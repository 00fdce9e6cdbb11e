"""Delivery: events out through the openlineage-python client (`emitter`), and the outbox that
keeps every event that was not delivered, 0600, with its reason (`outbox`).

Must not import: transports, OpenMetadata, dbt, the pipeline or the CLI (transports are handed in).
"""
