"""openlineage-python's file transport, with each event serialised in one pass (events.serialize)
and a local events file held open while the transport lives.

Same configuration (`type: file`, `log_file_path`, `append`, ...) and files as the client's own
`FileTransport`, one event per line, each equal to the client's as JSON: `Serde.to_json`, most of
the time of a large emit, is replaced by `events.serialize` (compact, UTF-8; in `debug_mode`,
indented, the client's very bytes), and a new local file is created 0600, as every file holding
events.

A local file in append mode (dbt-oml's default events file) is opened once and each event goes
to it in one unbuffered `write`, so it is in the file (the kernel's) when `emit` returns, as with
the client's open-write-close per event; a kill loses nothing more. The client's way cost four
system calls per event (exists, open, write, close), each one a turn of the GIL given to the
lineage threads: 1.5 s of a 2,000-model emit's main thread (py-spy). At most once a second the
path is checked again: a file removed or replaced meanwhile (log rotation) is opened anew, so
later events go where the configuration says; the ones written before went to the file that was
there then, as they would have. Remote paths, one-file-per-event modes and Windows (where a file
held open cannot be renamed or removed) keep the client's way.
dbt-oml's factory (`build_transport_factory`) gives this class for `type: file`.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from openlineage.client.transport import file as client_file

from dbt_oml.delivery.outbox import FILE_MODE
from dbt_oml.events.serialize import FacetMemo, to_json, to_json_bytes

if TYPE_CHECKING:
    from openlineage.client.client import Event

log = logging.getLogger(__name__)

#: Seconds between checks that the held events file is still the one at its path.
RECHECK: Final = 1.0


class FileTransport(client_file.FileTransport):
    kind = "file"
    config_class = client_file.FileConfig

    def __init__(self, config: client_file.FileConfig) -> None:
        super().__init__(config)
        self.clock: Callable[[], float] = time.monotonic  # of the path's re-checks
        self._held: _HeldFile | None = None
        self._lock = threading.Lock()  # the held file: one emit (or close) at a time
        self._memo = FacetMemo()  # a node's dataset facets, converted once while recent

    def emit(self, event: Event) -> None:
        path = self._get_file_path(event)
        log.debug("Openlineage event will be emitted to file: `%s`", path)
        if self.config.debug_mode:
            line = (to_json(event, indent=2, memo=self._memo) + "\n").encode()
        else:
            line = to_json_bytes(event, memo=self._memo) + b"\n"
        try:
            if self._holds(path):
                with self._lock:
                    self._held_file(path).write(line)
                return
            _create_private(path)
            # binary: UTF-8 whatever the locale's encoding (the client writes ASCII as text)
            with self._file_handler.open_file(path, "ab" if self.config.append else "wb") as f:
                f.write(line)
        except (PermissionError, io.UnsupportedOperation) as error:
            msg = f"Log file `{path}` is not writeable"
            raise RuntimeError(msg) from error
        except Exception as error:
            msg = f"Failed to write to log file `{path}`: {error}"
            raise RuntimeError(msg) from error

    def close(self, timeout: float = -1) -> bool:  # noqa: ARG002 - nothing is buffered
        with self._lock:
            held, self._held = self._held, None
        if held is not None:
            held.close()
        return True

    def _holds(self, path: str) -> bool:
        """Whether events for `path` go through a held file: a local file, appended to, on a
        POSIX system (Windows would refuse to rename or remove a file held open)."""
        return self.config.append and "://" not in path and os.name == "posix"

    def _held_file(self, path: str) -> _HeldFile:
        held = self._held
        now = self.clock()
        if held is not None and (now - held.checked < RECHECK or held.still_at_path(now)):
            return held
        if held is not None:
            held.close()
            self._held = None  # stays so if opening anew fails
        self._held = _HeldFile.open(path, now)
        return self._held


class _HeldFile:
    """An events file opened for appending, and which file (device, inode) it is."""

    def __init__(self, path: str, fd: int, checked: float) -> None:
        self.path, self.fd, self.checked = path, fd, checked
        stat = os.fstat(fd)
        self.identity = (stat.st_dev, stat.st_ino)

    @classmethod
    def open(cls, path: str, now: float) -> _HeldFile:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)  # not inherited
        try:
            return cls(path, fd, now)
        except OSError:
            os.close(fd)
            raise

    def still_at_path(self, now: float) -> bool:
        """Whether the path still names this file (False: removed or replaced); `now` is
        remembered as the time of this check."""
        self.checked = now
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return False
        return (stat.st_dev, stat.st_ino) == self.identity

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError as e:  # already gone: nothing of ours is buffered
            log.debug("closing the events file %s: %s", self.path, e)


def _create_private(path: str) -> None:
    """A local events file that does not exist yet is created 0600 (events carry SQL and names);
    an existing file keeps its mode, a remote path (`s3://...`) its store's rules."""
    if "://" in path or os.path.exists(path):
        return
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, FILE_MODE))
