"""The heap's free pages go back to the system after the artifacts are read (glibc), and a C
library without `malloc_trim` changes nothing."""

from __future__ import annotations

import ctypes
import platform

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
    """A C library without malloc_trim (musl, macOS)."""


def test_without_malloc_trim_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ctypes, "CDLL", lambda _name: _NoTrim())
    assert memory.release_freed() is False

    def unloadable(_name: object) -> None:
        raise OSError("no C library")

    monkeypatch.setattr(ctypes, "CDLL", unloadable)
    assert memory.release_freed() is False
