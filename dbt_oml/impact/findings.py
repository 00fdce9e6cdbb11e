"""What `dbt-oml impact` finds: column changes, the readers downstream of them (columns, models
by their rows, tests, exposures) with the path from the change, and the report.

Pure: frozen dataclasses and constants; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from dbt_oml.artifacts import Manifest
from dbt_oml.impact.exposures import Exposure
from dbt_oml.lineage.graph import ColumnGraph
from dbt_oml.lineage.types import ModelLineage, Transformation

#: Change kinds; "selected" is a column named on the command line.
REMOVED, RENAMED, CHANGED, SELECTED = "removed", "renamed", "changed", "selected"
FAIL_ON: Final = {"removed": {REMOVED, RENAMED}, "changed": {REMOVED, RENAMED, CHANGED}}
Path = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ColumnChange:
    node: str
    column: str
    change: str
    new_name: str | None = None
    before: str = ""
    """The column's definition in the state build (changed columns)."""
    after: str = ""


@dataclass(frozen=True, slots=True)
class Reader:
    """A column (or, with column None, a model's rows) that reads a changed column."""

    node: str
    column: str | None
    path: Path
    """(node, column) from the changed column to the column read, both included."""
    transformations: tuple[Transformation, ...]
    direct: bool
    """Every hop carries the value (DIRECT); else some hop only shapes it."""
    via_state: bool = False
    """The reader is opaque in the current build; its lineage is the --state build's."""


@dataclass(frozen=True, slots=True)
class TestReader:
    node: str
    name: str
    column: str | None
    path: Path
    """From the changed column to the (model, column) the test checks."""


@dataclass(frozen=True, slots=True)
class ExposureReader:
    exposure: Exposure
    path: Path
    """From the changed column to a column of the model the exposure uses."""


@dataclass(frozen=True, slots=True)
class OpaqueReader:
    """A model with no column lineage (SQL beyond the analysis, none compiled) that reads a
    relation carrying the column: it may read it (`select *`), so it is listed, conservatively."""

    node: str
    reason: str
    """Why its lineage is opaque."""
    path: Path
    """From the changed column to the column of the relation it reads."""


@dataclass(frozen=True, slots=True)
class Impact:
    change: ColumnChange
    columns: tuple[Reader, ...] = ()
    rows: tuple[Reader, ...] = ()
    tests: tuple[TestReader, ...] = ()
    exposures: tuple[ExposureReader, ...] = ()
    may_read: tuple[OpaqueReader, ...] = ()
    """Opaque models reading a relation on the way: what they read is unknown."""

    @property
    def still_read(self) -> bool:
        """Something downstream reads the column under its old name (it breaks when removed)."""
        old = self.change.column.lower()
        readers = (*self.columns, *self.rows)
        return any(r.path[0][1].lower() == old for r in readers) or any(
            t.path[0][1].lower() == old for t in self.tests
        )


@dataclass(frozen=True, slots=True)
class Build:
    """One build of the project: manifest, compiled SQL, analysed models and column graph."""

    manifest: Manifest
    graph: ColumnGraph
    models: Mapping[str, ModelLineage]
    sql: Mapping[str, str]
    """Compiled SQL by unique_id (run_results first, then the manifest)."""


@dataclass(slots=True)
class Comparison:
    changes: list[ColumnChange] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    renames: dict[tuple[str, str], str] = field(default_factory=dict)
    """(unique_id, current name lower-cased) -> the state build's name."""


@dataclass(frozen=True, slots=True)
class Report:
    impacts: tuple[Impact, ...]
    comparison: Comparison | None = None
    state: str | None = None
    uncompiled: tuple[str, ...] = ()
    """Models and snapshots of the current build with no compiled SQL (a partial run's
    artifacts): what they read is unknown, so the report may miss readers."""
    analysed: int = 0
    """Models and snapshots of the current build (uncompiled ones included)."""
    selected: tuple[str, ...] | None = None
    """With --state: every node the change can affect (impact.selection), for `--selector`."""

    def failing(self, fail_on: str | None) -> list[Impact]:
        """The impacts that make `--fail-on KIND` exit 1."""
        kinds = FAIL_ON.get(fail_on or "", set())
        return [i for i in self.impacts if i.change.change in kinds and i.still_read]


# -- comparing two builds ----------------------------------------------------------------
