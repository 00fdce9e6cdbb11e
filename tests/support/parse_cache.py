"""dbt's saved parse (target/partial_parse.msgpack), given to other copies of the same project.

A dbt command in a project with no saved parse parses every file afresh: about 3 s of CPU on
this machine, the bulk of a one-model run, and the suite makes dozens of fresh copies of the
bundled project. With a saved parse dbt checks it itself: it re-parses only the files whose
checksums differ, and parses everything again when the vars, the profile, the target or the
project's env vars differ. So a copy may start from another copy's parse and still get what
its own files say.

The saved parse holds the absolute path of the project it was made in (each file's
`project_root`, a seed's `root_path`, from which dbt reads the seed's CSV): `give_parse`
rewrites those to the copy's own path, so no command of one copy reads another copy's files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack

SAVED = Path("target") / "partial_parse.msgpack"


def give_parse(saved: Path, project: Path) -> Path:
    """`project` with dbt's saved parse `saved` (a partial_parse.msgpack of a project with the
    same files, anywhere), its paths moved to `project`."""
    parse = msgpack.unpackb(saved.read_bytes(), raw=False, strict_map_key=False)
    name = parse["metadata"]["project_name"]
    [old] = {
        f["path"]["project_root"] for f in parse["files"].values() if f["project_name"] == name
    }
    (project / SAVED).parent.mkdir(parents=True, exist_ok=True)
    (project / SAVED).write_bytes(msgpack.packb(_moved(parse, old, str(project))))
    return project


def _moved(value: Any, old: str, new: str) -> Any:
    """`value` with every path string under `old` moved under `new` (other values as they are,
    dbt's own extension types included)."""
    if isinstance(value, str):
        inside = value == old or value.startswith(old + "/")
        return new + value[len(old) :] if inside else value
    if isinstance(value, dict):
        return {key: _moved(item, old, new) for key, item in value.items()}
    if isinstance(value, list):
        return [_moved(item, old, new) for item in value]
    return value
