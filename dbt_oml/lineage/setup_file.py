"""The lineage workers' setup file, read in pieces: a worker holds only what its models read.

Part of the engine's process seam (lineage.workers), so not pure: it writes and reads one file
of this run's (0600, created by the caller).

Each worker used to load the whole run (every relation's columns, every model's SQL) and build
one sqlglot schema over all of it: 0.3 s before its first answer, and some 30 MiB in each
worker, on 2,000 models. The file holds one record per model (its SQL and own columns) and one
per relation (its columns), and an index at its end. For each chunk a worker reads its models'
records and those of the relations their SQL can name, and builds a schema of those alone.

Why the answers cannot change: sqlglot looks up only the relations a query names, and a query
names a relation by its identifier, unquoted (any case) or quoted (as spelled). So a chunk's
schema holds every relation whose identifier, lower-cased, is a word of its lower-cased SQL,
with every other relation of the same identifier (a partly qualified name resolves among
them); a relation whose identifier is not one word (a space, a dash) is in every schema; and a
schema is never empty (sqlglot reads the mapping's depth off it). The relations keep the run's
own order: where normalising makes two names one (schemas `Main` and `main` of an attached
database), sqlglot merges their columns in the order it meets them.
"""

from __future__ import annotations

import os
import pickle
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any, Final

#: {catalog: {schema: {table: {column: type}}}}
Tables = Mapping[str, Mapping[str, Mapping[str, Mapping[str, str]]]]
#: A relation's (catalog, schema, table), as spelled.
Relation = tuple[str, str, str]
#: Where a record lies in the file: (offset, length).
Span = tuple[int, int]
#: A model's record: its SQL and its own columns.
Model = tuple[str, tuple[str, ...]]

_WORD: Final = re.compile(r"\w+")
_TRAILER: Final = struct.Struct(">Q")  # the index's offset, the file's last 8 bytes


@dataclass(frozen=True, slots=True)
class Index:
    """What a worker keeps of the file: the run's shared setup and where each record lies."""

    head: Any
    models: Mapping[str, Span]
    relations: Mapping[Relation, Span]
    by_word: Mapping[str, tuple[Relation, ...]]
    always: tuple[Relation, ...]


def write(f: IO[bytes], head: object, *, models: Mapping[str, Model], tables: Tables) -> None:
    """Write `head` (what every worker needs), each model's (SQL, own columns) and each
    relation's columns as records, then the index."""
    spans: dict[str, Span] = {uid: _record(f, model) for uid, model in models.items()}
    relations: dict[Relation, Span] = {}
    by_word: dict[str, list[Relation]] = {}
    always: list[Relation] = []
    for catalog, schemas in tables.items():
        for schema, named in schemas.items():
            for table, columns in named.items():
                key = (catalog, schema, table)
                relations[key] = _record(f, dict(columns))
                word = table.lower()
                if _WORD.fullmatch(word):
                    by_word.setdefault(word, []).append(key)
                else:
                    always.append(key)
    start = f.tell()
    index = Index(
        head, spans, relations, {w: tuple(keys) for w, keys in by_word.items()}, tuple(always)
    )
    pickle.dump(index, f, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(_TRAILER.pack(start))


def _record(f: IO[bytes], value: object) -> Span:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    start = f.tell()
    f.write(data)
    return start, len(data)


def read_index(f: IO[bytes]) -> Index:
    """The index of the setup file open as `f`."""
    size = f.seek(0, os.SEEK_END)
    (start,) = _TRAILER.unpack(_bytes(f, (size - _TRAILER.size, _TRAILER.size)))
    index: Index = pickle.loads(_bytes(f, (start, size - _TRAILER.size - start)))  # noqa: S301 - this run's own file, 0600
    return index


def read_models(f: IO[bytes], index: Index, uids: Iterable[str]) -> dict[str, Model]:
    """(SQL, own columns) of each model in `uids`."""
    return {uid: _read(f, index.models[uid]) for uid in uids}


def tables_for(
    f: IO[bytes], index: Index, sqls: Iterable[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """The columns of every relation these queries can name (see the module's docstring)."""
    words: set[str] = set()
    for sql in sqls:
        words.update(_WORD.findall(sql.lower()))
    keys = list(index.always)
    for word in words & index.by_word.keys():
        keys += index.by_word[word]
    if not keys and index.relations:
        keys.append(next(iter(index.relations)))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for catalog, schema, table in sorted(set(keys), key=lambda key: index.relations[key][0]):
        columns = _read(f, index.relations[(catalog, schema, table)])
        out.setdefault(catalog, {}).setdefault(schema, {})[table] = columns
    return out


def _read(f: IO[bytes], span: Span) -> Any:
    return pickle.loads(_bytes(f, span))  # noqa: S301 - this run's own file, 0600


def _bytes(f: IO[bytes], span: Span) -> bytes:
    offset, length = span
    f.seek(offset)
    return f.read(length)
