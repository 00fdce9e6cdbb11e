"""The value types of column lineage, and how transformations compose across hops.

Pure: no I/O. NamedTuples rather than dataclasses for the two types built millions of times on
large projects.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

DIRECT, INDIRECT = "DIRECT", "INDIRECT"


class SourceColumn(NamedTuple):
    """A column of a real relation (or of a file: catalog "file", schema "", table = path).

    A NamedTuple rather than a dataclass: millions are built on large projects.
    """

    catalog: str
    schema: str
    table: str
    column: str


class Transformation(NamedTuple):
    """OpenLineage ColumnLineageDatasetFacet 1-2-0 transformation of one input field.

    `description` names the struct field or JSON path extracted from the input column, if any
    (`_meta.params.fixture`); while a model is walked it holds the path below the column only.
    """

    type: str
    subtype: str
    masking: bool = False
    description: str = ""


@dataclass(frozen=True, slots=True)
class ColumnEdge:
    """One output column and every source column its value or shape depends on."""

    output: str
    inputs: tuple[tuple[SourceColumn, tuple[Transformation, ...]], ...]
    expression: str = ""
    """The output's expression in the final SELECT (OpenMetadata shows it as the function)."""


@dataclass(frozen=True, slots=True)
class ModelLineage:
    """The column lineage of one model: per output column, plus dataset-level INDIRECT inputs."""

    columns: tuple[ColumnEdge, ...]
    dataset: tuple[tuple[SourceColumn, tuple[Transformation, ...]], ...] = ()

    def by_output(self) -> dict[str, ColumnEdge]:
        return {edge.output: edge for edge in self.columns}


IDENTITY = Transformation(DIRECT, "IDENTITY")
_Inputs = dict[SourceColumn, set[Transformation]]


class Lasting(str):
    """Why a model is opaque, when the same SQL and upstream columns always give it (the
    engine's verdict: unparseable SQL, an unknown `*`, nesting too deep): cached like lineage.
    A plain `str` reason (a time limit, a worker that died, a bug) is tried again next run."""

    __slots__ = ()


class OpaqueError(Exception):
    """Raised inside the walk; turned into LineageError at the boundary."""


@cache
def compose(outer: Transformation, inner: Transformation) -> Transformation:
    """The transformation of an input seen through two hops (outer applied to inner).

    >>> compose(Transformation("DIRECT", "IDENTITY"), Transformation("DIRECT", "AGGREGATION"))
    Transformation(type='DIRECT', subtype='AGGREGATION', masking=False, description='')
    >>> compose(Transformation("INDIRECT", "FILTER"), Transformation("DIRECT", "IDENTITY")).subtype
    'FILTER'
    >>> compose(Transformation(DIRECT, "TRANSFORMATION", description="fixture"),
    ...         Transformation(DIRECT, "TRANSFORMATION", description="params")).description
    'params.fixture'
    """
    masking = outer.masking or inner.masking
    path = ".".join(p for p in (inner.description, outer.description) if p)
    if outer.type == INDIRECT:
        return Transformation(INDIRECT, outer.subtype, masking, path)
    if inner.type == INDIRECT:
        return Transformation(INDIRECT, inner.subtype, masking, path)
    for subtype in ("AGGREGATION", "TRANSFORMATION"):
        if subtype in (outer.subtype, inner.subtype):
            return Transformation(DIRECT, subtype, masking, path)
    return Transformation(DIRECT, "IDENTITY", masking, path)
