"""Which runs a dbt invocation belongs to, and how its node jobs are named.

Plain values shared by the settings (which read them) and the event core (which writes them into
events): the orchestrator's run that started dbt, and the job naming scheme.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class JobNaming(str, Enum):
    """How node jobs are named."""

    DBT_OL = "dbt-ol"
    """dbt-ol's default names (`db.schema.package.model[.command.kind]`): histories continue."""
    UNIQUE_ID = "unique_id"
    """Stable, command-independent names: the node's unique_id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRef:
    """A run of some job: an orchestrator's task or DAG run (OPENLINEAGE_PARENT_ID et al.)."""

    namespace: str
    name: str
    run_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Orchestrator:
    """The orchestrator run that started dbt, and the root of its run tree."""

    parent: RunRef
    root: RunRef
