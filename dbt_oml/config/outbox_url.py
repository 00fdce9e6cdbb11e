"""`outbox_dir`: a local folder, or the URL of a durable outbox on an object store (fsspec).

A path or a `file://` URL is a local folder (a mounted volume is durable as it is). Any other
URL names an fsspec protocol (`s3://bucket/prefix`, `gs://bucket/prefix`): checked here, with the
package its protocol needs, so a missing one is a configuration error before dbt runs. Neither
credentials nor query strings belong in it (they would show in every message that names it):
object stores take theirs from the usual places (AWS_*, workload identity, ...).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

from dbt_oml.config.values import parse_str
from dbt_oml.errors import ConfigError
from dbt_oml.redaction import mask

#: The package each common protocol needs, and the dbt-oml extra that brings it.
EXTRAS: Final = {
    "s3": ("s3fs", "s3"),
    "s3a": ("s3fs", "s3"),
    "gs": ("gcsfs", "gs"),
    "gcs": ("gcsfs", "gs"),
}
#: Protocols that keep nothing once the process ends.
_NOT_DURABLE: Final = frozenset({"memory"})
_BUCKET = re.compile(r"^[a-zA-Z0-9_-]+$")
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://")


def parse_outbox(value: object, key: str, source: str) -> Path | str:
    """A local folder (Path), or a durable outbox's URL (str, without a trailing slash).

    >>> parse_outbox("~/outbox", "outbox_dir", "test") == Path("~/outbox").expanduser()
    True
    >>> parse_outbox("file:///var/outbox", "outbox_dir", "test")
    PosixPath('/var/outbox')
    """
    text = parse_str(value, key, source)
    found = _SCHEME.match(text)
    if found is None:
        return Path(text).expanduser()
    scheme = found["scheme"].lower()
    parts = urlsplit(text)
    if scheme in {"file", "local"}:
        if parts.netloc not in ("", "localhost") or not parts.path:
            raise ConfigError(
                key=key,
                source=source,
                reason=f"{text!r} is not a local path",
                hint="a file URL names a path of this machine: file:///var/dbt-oml/outbox",
            )
        return Path(unquote(parts.path))
    _check_remote(text, scheme, key=key, source=source)
    return text.rstrip("/")


def parse_cache_url(value: object, key: str, source: str) -> str:
    """`lineage_cache`: a folder (as an absolute path), an object store's URL (fsspec), or a
    JetStream key-value bucket, `nats://host:4222/BUCKET` (several servers: `host1,host2`).

    >>> parse_cache_url("nats://nats:4222/dbt_lineage", "lineage_cache", "test")
    'nats://nats:4222/dbt_lineage'
    >>> parse_cache_url("file:///var/cache/dbt-oml", "lineage_cache", "test")
    '/var/cache/dbt-oml'
    """
    text = parse_str(value, key, source)
    found = _SCHEME.match(text)
    if found is None or found["scheme"].lower() in {"file", "local"}:
        return str(Path(parse_outbox(text, key, source)).absolute())
    if found["scheme"].lower() in {"nats", "tls"}:
        parts = urlsplit(text)
        bucket = parts.path.strip("/")
        if not parts.netloc or not _BUCKET.match(bucket):
            raise ConfigError(
                key=key,
                source=source,
                reason=f"{mask(text)!r} names no key-value bucket",
                hint="nats://HOST:4222/BUCKET, the bucket in letters, digits, - and _",
            )
        return text.rstrip("/")
    _check_remote(text, found["scheme"].lower(), key=key, source=source)
    return text.rstrip("/")


def _check_remote(text: str, scheme: str, *, key: str, source: str) -> None:
    parts = urlsplit(text)
    if ("@" in parts.netloc and ":" in parts.netloc.partition("@")[0]) or parts.query:
        raise ConfigError(
            key=key,
            source=source,
            reason=f"a {scheme}:// URL here carries no credentials and no query string",
            hint="give the store's credentials as its client reads them (AWS_* variables, "
            "GOOGLE_APPLICATION_CREDENTIALS, a workload identity)",
        )
    if not parts.netloc:
        raise ConfigError(
            key=key,
            source=source,
            reason=f"{scheme}:// needs a bucket",
            hint=f"for example {scheme}://my-bucket/dbt-oml/outbox",
        )
    from fsspec.registry import known_implementations, registry

    if scheme in _NOT_DURABLE:
        raise ConfigError(key=key, source=source, reason=f"{scheme}:// keeps nothing after a run")
    known = known_implementations.get(scheme)
    if known is None and scheme not in registry:
        raise ConfigError(
            key=key,
            source=source,
            reason=f"{scheme}:// is not a storage protocol fsspec knows",
            hint="a local folder, file:///path, s3://bucket/prefix or gs://bucket/prefix",
        )
    package, extra = EXTRAS.get(scheme, (str((known or {}).get("class", "")).split(".")[0], ""))
    if package and importlib.util.find_spec(package) is None:
        install = f"pip install 'dbt-oml[{extra}]'" if extra else f"pip install {package}"
        raise ConfigError(
            key=key,
            source=source,
            reason=f"{scheme}:// needs the {package} package, which is not installed",
            hint=install,
        )
