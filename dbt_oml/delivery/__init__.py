"""Delivery: events out through the openlineage-python client (`emitter`), and the outbox that
keeps every event that was not delivered, 0600, with its reason (`outbox`); outbox files
claimed by the flush that sends them, and given back when that flush died (`claims`); a durable
outbox on an object store (`remote`: s3://, gs://, ...), whose objects a flush claims with a
marker and a lease (`leases`).

Must not import: transports, OpenMetadata, dbt, the pipeline or the CLI (transports are handed in).
"""
