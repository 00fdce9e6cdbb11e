"""The shared lineage cache in a folder or an object store (fsspec): one pack per project.

`<url>/<project>.pack.gz` holds the entries the project's last runs used, one `key<TAB>json` line
each, gzip-compressed: a new pod reads one object, and a run that changed anything writes one,
whole, under a temporary name first (a reader sees the old pack or the new one, never half).
Two pods that end together: the last one's pack stands, and each is complete.
"""

from __future__ import annotations

import gzip
import logging
import posixpath
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dbt_oml.errors import SharedCacheError
from dbt_oml.redaction import mask

logger = logging.getLogger(__name__)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def pack_name(scope: str) -> str:
    """The pack's file name for a project.

    >>> pack_name("jaffle shop")
    'jaffle_shop.pack.gz'
    """
    return f"{_UNSAFE.sub('_', scope) or 'project'}.pack.gz"


class PackStore:
    """A project's shared entries in one pack file under `url` (a path or an fsspec URL)."""

    def __init__(self, url: str, *, scope: str) -> None:
        self.url = url.rstrip("/")
        self.where = mask(self.url)
        self.path = f"{self.url}/{pack_name(scope)}"
        self._entries: dict[str, str] | None = None

    def _fs(self) -> tuple[Any, str]:
        from fsspec.core import url_to_fs

        return url_to_fs(self.path)  # type: ignore[no-any-return]

    def _load(self) -> dict[str, str]:
        if self._entries is None:
            self._entries = {}
            try:
                fs, path = self._fs()
                data = fs.cat_file(path)
            except FileNotFoundError:
                return self._entries  # no run of this project has shared anything yet
            except Exception as e:  # noqa: BLE001 - any client's failure is a miss, said once
                raise SharedCacheError(where=self.where, reason=_cause(e)) from None
            try:
                text = gzip.decompress(data).decode("utf-8")
            except (OSError, EOFError, UnicodeDecodeError):
                logger.warning(
                    "lineage cache %s: %s is not a gzip pack; it is written anew at the end of "
                    "this run",
                    self.where,
                    mask(self.path),
                )
                return self._entries
            for line in text.splitlines():
                key, _, entry = line.partition("\t")
                if entry:
                    self._entries[key] = entry
        return self._entries

    def keys(self) -> Sequence[str]:
        return list(self._load())

    def fetch(self, keys: Iterable[str]) -> dict[str, str]:
        entries = self._load()
        return {k: entries[k] for k in keys if k in entries}

    def save(self, new: Mapping[str, str], index: Sequence[str], drop: Iterable[str]) -> None:
        del drop  # what is not in the new pack is gone with the old one
        have = self._load()
        lines = []
        for key in index:
            entry = new.get(key) or have.get(key)
            if entry is not None:
                lines.append(f"{key}\t{entry}\n")
        data = gzip.compress("".join(lines).encode("utf-8"), compresslevel=1)
        try:
            fs, path = self._fs()
            fs.makedirs(posixpath.dirname(path), exist_ok=True)
            temporary = f"{path}.{secrets.token_hex(4)}.tmp"
            fs.pipe_file(temporary, data)
            fs.mv(temporary, path)
        except Exception as e:  # noqa: BLE001 - any client's failure costs the sharing, not the run
            raise SharedCacheError(where=self.where, reason=f"cannot write: {_cause(e)}") from None
        self._entries = {line.partition("\t")[0]: line.partition("\t")[2][:-1] for line in lines}


def _cause(error: BaseException) -> str:
    """A store client's failure in a few words, without credentials."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return mask(f"{type(error).__name__}: {text}" if text else type(error).__name__)
