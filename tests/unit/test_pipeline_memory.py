"""The heap's free pages go back to the system after the artifacts are read, an emit's threads
share one heap (glibc), and a C library without `malloc_trim` or `mallopt` changes nothing."""

from __future__ import annotations

import ctypes
import platform
import subprocess
import sys

import pytest

from dbt_oml.pipeline import memory


def _resident_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_pages_freed_by_dropped_documents_go_back() -> None:
    # SQL texts of a few KB each come from the C heap (Python's own allocator takes only the
    # small objects); a few stay alive among the freed ones, as the artifacts' views do
    texts = [f"select {i} as id, " + "x" * 2048 for i in range(40_000)]
    keep = texts[::1000]
    del texts
    before = _resident_kib()
    assert memory.release_freed() is True
    assert _resident_kib() < before - 40 * 1024  # most of the ~80 MiB came back
    assert len(keep) == 40


class _NoTrim:
    """A C library without malloc_trim or mallopt (musl, macOS)."""


def test_without_malloc_trim_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ctypes, "CDLL", lambda _name: _NoTrim())
    assert memory.release_freed() is False

    def unloadable(_name: object) -> None:
        raise OSError("no C library")

    monkeypatch.setattr(ctypes, "CDLL", unloadable)
    assert memory.release_freed() is False


_THREADED = """
import ctypes, sys, threading
from dbt_oml.pipeline.memory import one_heap
if sys.argv[1] == "one":
    assert one_heap()
def allocate():
    kept = [bytes(100_000) for _ in range(50)]
    assert len(kept) == 50
worker = threading.Thread(target=allocate)
worker.start()
worker.join()
ctypes.CDLL(None).malloc_stats()
"""


def _heaps(mode: str) -> int:
    """The C heaps (glibc's arenas) a fresh process has after a second thread allocated."""
    done = subprocess.run(
        [sys.executable, "-c", _THREADED, mode], capture_output=True, text=True, check=True
    )
    return done.stderr.count("Arena ")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="M_ARENA_MAX is glibc's")
def test_with_one_heap_a_second_thread_allocates_from_the_first_ones() -> None:
    assert _heaps("default") >= 2  # glibc's own way: the thread got a heap of its own
    assert _heaps("one") == 1


def test_without_mallopt_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ctypes, "CDLL", lambda _name: _NoTrim())
    assert memory.one_heap() is False
