"""What a relay's stream must hold: the subject it reads, and a dead-letter subject outside it."""

from __future__ import annotations

from dbt_oml.errors import ConfigError
from dbt_oml.transports.jetstream.config import JetStreamConfig
from dbt_oml.transports.jetstream.connection import subject_matches


def check_subjects(
    source: JetStreamConfig, dead: str, subjects: list[str], source_name: str
) -> None:
    """The stream holds what the relay reads; a dead letter lands in it, not where it reads."""
    if not any(subject_matches(pattern, source.subject) for pattern in subjects):
        raise ConfigError(
            key="transport.subject",
            source=source_name,
            reason=f"{source.subject!r} is not a subject of stream "
            f"{source.stream!r} ({', '.join(subjects) or 'no subjects'})",
            hint="use the stream's subject, or the stream that holds this subject",
        )
    if subject_matches(source.subject, dead):
        raise ConfigError(
            key="relay.dead_letter_subject",
            source=source_name,
            reason=f"{dead!r} is what the relay reads ({source.subject!r})",
            hint=f"use a subject outside it, e.g. {source.subject}.dead",
        )
    if not any(subject_matches(pattern, dead) for pattern in subjects):
        raise ConfigError(
            key="relay.dead_letter_subject",
            source=source_name,
            reason=f"{dead!r} is not a subject of stream {source.stream!r} "
            f"({', '.join(subjects) or 'no subjects'})",
            hint=f"add it to the stream's subjects, or use one the stream holds "
            f"(the default is {source.subject}.dead, held by {source.subject}.>)",
        )
