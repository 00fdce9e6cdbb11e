"""Where a run keeps what it could not deliver: the local outbox, and a durable one's upload."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dbt_oml.config import Settings
from dbt_oml.errors import ConfigError
from dbt_oml.pipeline.report import Report
from dbt_oml.pipeline.state_files import STATE_DIR

if TYPE_CHECKING:
    from dbt_oml.delivery.remote import RemoteOutbox


def outbox_folder(settings: Settings, target_path: Path) -> Path:
    """The local outbox: `outbox_dir`, or <target>/dbt_oml/outbox (also under a durable one)."""
    return settings.transport.outbox_dir or target_path / STATE_DIR / "outbox"


def outbox_path(settings: Settings, target_path: Path, invocation_id: str) -> Path:
    """Where the undelivered events of one invocation are kept."""
    return outbox_folder(settings, target_path) / f"{invocation_id}.jsonl"


def remote_outbox(settings: Settings) -> RemoteOutbox | None:
    """The durable outbox `outbox_dir` names by URL; None for a local one, or a dry run (which
    writes nothing anywhere).

    Raises:
        ConfigError: the store's package cannot be imported.
    """
    if settings.transport.outbox_url is None or settings.emit.dry_run:
        return None
    from dbt_oml.delivery.remote import RemoteOutbox

    return RemoteOutbox.open(settings.transport.outbox_url)


def keep_durably(settings: Settings, target_path: Path, report: Report) -> None:
    """After a run, with a durable outbox: the local outbox's files go up to it (a store that
    cannot be reached leaves them here, with one line in the report's problems)."""
    try:
        remote = remote_outbox(settings)
    except ConfigError as e:  # after the run: its events stay here, and the line says why
        report.problems.append(
            f"{e}; the kept events stay in {outbox_folder(settings, target_path)}"
        )
        return
    if remote is not None:
        synced = remote.push(outbox_folder(settings, target_path))
        report.delivery.notes += synced.notes
        report.problems += synced.problems
        if report.delivery.failed and not synced.problems:  # all up: the local file is gone
            report.delivery.kept_remotely = remote.display
