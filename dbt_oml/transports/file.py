"""openlineage-python's file transport, with each event serialised in one pass (events.serialize).

Same configuration (`type: file`, `log_file_path`, `append`, ...), same files, same bytes as the
client's own `FileTransport`; only `Serde.to_json`, most of the time of a large emit, is replaced,
and a new local file is created 0600, as every file holding events.
dbt-oml's factory (`build_transport_factory`) gives this class for `type: file`.
"""

from __future__ import annotations

import io
import logging
import os
from typing import TYPE_CHECKING

from openlineage.client.transport import file as client_file

from dbt_oml.delivery.outbox import FILE_MODE
from dbt_oml.events.serialize import to_json

if TYPE_CHECKING:
    from openlineage.client.client import Event

log = logging.getLogger(__name__)


class FileTransport(client_file.FileTransport):
    kind = "file"
    config_class = client_file.FileConfig

    def emit(self, event: Event) -> None:
        path = self._get_file_path(event)
        mode = "a" if self.config.append else "w"
        log.debug("Openlineage event will be emitted to file: `%s`", path)
        text = to_json(event, indent=2 if self.config.debug_mode else None)
        try:
            _create_private(path)
            with self._file_handler.open_file(path, mode) as f:
                f.write(text + "\n")
        except (PermissionError, io.UnsupportedOperation) as error:
            msg = f"Log file `{path}` is not writeable"
            raise RuntimeError(msg) from error
        except Exception as error:
            msg = f"Failed to write to log file `{path}`: {error}"
            raise RuntimeError(msg) from error


def _create_private(path: str) -> None:
    """A local events file that does not exist yet is created 0600 (events carry SQL and names);
    an existing file keeps its mode, a remote path (`s3://...`) its store's rules."""
    if "://" in path or os.path.exists(path):
        return
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, FILE_MODE))
