"""The process' memory: the garbage collector's passes, made rare while dbt-oml builds big,
long-lived objects, and the C heap (glibc) kept small."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

#: Allocations between the collector's young passes while dbt-oml reads artifacts and builds
#: events (Python's default: 700).
_GC_YOUNG = 50_000
#: glibc's `mallopt` parameter for the most heaps ("arenas") its threads may spread over.
_M_ARENA_MAX = -8


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """While artifacts are read, lineage looked up and events built: the objects alive before
    (dbt, its project) leave the collector's passes, and its passes come far less often.

    These steps allocate millions of objects that live for the whole step (the artifacts, the
    lineage), so each pass found nothing to free but walked them all again: at 2,000 models
    this halved the time of a warm lineage step and of building the events. Passes still run
    (SQL parse trees are cyclic garbage) and the defaults come back afterwards.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(_GC_YOUNG, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def freeze_survivors() -> None:
    """dbt runs in dbt-oml's own process (`dbt-oml build`): what is alive as its first node
    starts (dbt's parsed project, its graph and adapter, dbt-oml's manifest) lives until the
    end. It leaves the collector here, after one last full pass, so that the full passes of
    the rest of the run walk only what the run adds: at 500 models dbt's run spent 2.7 s in
    the collector alone and 3.8 s with dbt-oml's objects beside it (benchmarks/README.md 0f).
    What is frozen is never collected: garbage among it stays until the process exits.
    """
    gc.collect()
    gc.freeze()


def release_freed() -> bool:
    """Give the pages the C heap holds free back to the system; whether it could.

    Reading dbt's artifacts parses their JSON (18 MB at 2,000 models) into documents of some
    60 MiB that are dropped once read. glibc's allocator keeps the pages they freed, so the
    process held some 13 MiB it no longer used for the rest of the run, while its lineage
    workers ran beside it (benchmarks/README.md 0i). glibc's `malloc_trim` returns them; a C
    library without it (musl, macOS) leaves things as they are.
    """
    import ctypes

    trim = _libc("malloc_trim", ctypes.c_size_t)
    if trim is None:
        return False
    trim(0)
    return True


def one_heap() -> bool:
    """Let every thread of this process allocate from one C heap (glibc's `M_ARENA_MAX`, 1);
    whether it could. Called before any thread starts.

    In `dbt-oml emit` the main thread builds the events while another takes the lineage
    workers' answers and a third their pipe. glibc gives each thread a heap of its own, and the
    pages one frees are not reused by the others: a cold 2,000-model emit ended 5 MiB higher
    (101 -> 96 MiB in one heap; the time the same, benchmarks/README.md 0j). Not for a command
    that runs dbt: DuckDB's threads allocate side by side and would wait on one heap's lock.
    A C library without `mallopt` (musl, macOS) changes nothing.
    """
    import ctypes

    mallopt = _libc("mallopt", ctypes.c_int, ctypes.c_int)
    return mallopt is not None and mallopt(_M_ARENA_MAX, 1) == 1


def _libc(name: str, *argtypes: type) -> Any:
    """The C library's function `name` taking `argtypes` and returning an int; None when there
    is no such function (musl, macOS) or no C library to load."""
    import ctypes

    try:
        function = getattr(ctypes.CDLL(None), name)
    except (AttributeError, OSError):
        return None
    function.argtypes, function.restype = list(argtypes), ctypes.c_int
    return function
