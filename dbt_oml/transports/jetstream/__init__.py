"""The JetStream transport (kind `jetstream`), one concern per module.

transport.py publishes each event, acknowledged, and keeps what was not stored; config.py reads
its settings; connection.py opens a bounded NATS connection and names faults; stream.py checks or
creates the stream and gives each event its de-duplication id. nats-py is optional
(`pip install 'dbt-oml[nats]'`).
"""

from dbt_oml.transports.jetstream.config import JetStreamConfig
from dbt_oml.transports.jetstream.connection import NatsUnavailableError
from dbt_oml.transports.jetstream.stream import check_stream, ensure_stream, message_id
from dbt_oml.transports.jetstream.transport import JetStreamTransport

__all__ = [
    "JetStreamConfig",
    "JetStreamTransport",
    "NatsUnavailableError",
    "check_stream",
    "ensure_stream",
    "message_id",
]
