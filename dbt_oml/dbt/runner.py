"""Run dbt in-process (dbtRunner) and listen to its node events as they happen.

dbt calls our callback from its worker threads and hangs if a callback raises, so the callback
only copies what it needs into a queue and never raises; a worker thread hands the items to the
listener. What dbt resolved (project, profile, target, target path, the connection's catalogs) is
read from the adapter dbt registered, never from a re-parse of our own.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dbt_oml.artifacts import Node, failure_summary, parse_time
from dbt_oml.dbt.project import (
    ProjectOptions,
    catalogs_of,
    credential_secrets,
    target_path_of,
)
from dbt_oml.namespaces import CatalogSpec

if TYPE_CHECKING:
    from dbt_common.events.base_types import EventMsg

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class DbtContext:
    """What dbt resolved for this invocation: everything dbt-oml needs to know about it."""

    invocation_id: str
    started_at: datetime
    command: str
    project_name: str
    project_version: str | None
    project_root: Path
    target_path: Path
    profiles_dir: str | None
    profile_name: str | None
    target_name: str | None
    adapter_type: str
    dbt_version: str
    catalogs: tuple[CatalogSpec, ...] = field(repr=False)
    cli_vars: dict[str, Any] = field(default_factory=dict, repr=False)
    usage_stats: bool = False
    """Whether this dbt run sends dbt Labs its anonymous usage statistics (dbt-oml's own
    `docs generate` follows it)."""
    profile_flag: str | None = None
    target_flag: str | None = None
    select: tuple[str, ...] = ()
    """-s/--select (-m/--models) as given, and --selector: dbt-ol's extended job name."""
    selector: str | None = None
    exclude: tuple[str, ...] = ()
    """`--profile`/`--target` as given to dbt (flag or DBT_PROFILE/DBT_TARGET), None when dbt
    chose them: dbt's partial parsing compares these, not the resolved names."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """The profile's passwords and tokens as dbt resolved them, for the run's redactor."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeStarted:
    unique_id: str
    started_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeFinished:
    unique_id: str
    status: str
    """As run_results.json records it: success, error, skipped, pass, fail, warn, ..."""


class Listener(Protocol):
    """Receives dbt's progress, in order, on one worker thread."""

    def on_invocation(self, context: DbtContext) -> None: ...
    def on_node_start(self, event: NodeStarted) -> None: ...


@dataclass(slots=True)
class DbtInvocation:
    """How one dbt command went."""

    return_code: int
    error: str | None
    context: DbtContext | None
    node_starts: dict[str, datetime]
    ended_at: datetime
    listener_errors: list[str] = field(default_factory=list)


def exit_code(success: bool, exception: BaseException | None) -> int:
    """dbt's CLI exit code for a dbtRunner result (0 ok, 1 node failures, 2 dbt error)."""
    if success:
        return 0
    return 1 if exception is None else 2


def _context_from_dbt(invocation_id: str) -> DbtContext | None:
    """Read the registered adapter and dbt's flags; None until dbt has registered an adapter."""
    from dbt.adapters.factory import FACTORY
    from dbt.flags import get_flags
    from dbt.version import __version__ as dbt_version
    from dbt_common.invocation import get_invocation_started_at

    adapters = getattr(FACTORY, "adapters", {})
    if not adapters:
        return None
    adapter = next(iter(adapters.values()))
    config = adapter.config
    flags = get_flags()  # type: ignore[no-untyped-call]
    root = Path(config.project_root).resolve()
    target_path = Path(config.target_path)
    started = get_invocation_started_at()
    cli_vars = getattr(config, "cli_vars", None) or {}
    return DbtContext(
        invocation_id=invocation_id,
        started_at=started if started.tzinfo else started.replace(tzinfo=timezone.utc),
        command=str(getattr(flags, "WHICH", "") or ""),
        project_name=str(config.project_name),
        project_version=str(getattr(config, "version", "") or "") or None,
        project_root=root,
        target_path=target_path if target_path.is_absolute() else root / target_path,
        profiles_dir=str(getattr(flags, "PROFILES_DIR", "") or "") or None,
        profile_name=getattr(config, "profile_name", None),
        target_name=getattr(config, "target_name", None),
        adapter_type=str(adapter.type()),
        dbt_version=str(dbt_version),
        catalogs=catalogs_of(str(adapter.type()), config.credentials),
        cli_vars=dict(cli_vars),
        usage_stats=bool(getattr(flags, "SEND_ANONYMOUS_USAGE_STATS", False)),
        profile_flag=getattr(flags, "PROFILE", None) or None,
        target_flag=getattr(flags, "TARGET", None) or None,
        select=tuple(str(s) for s in getattr(flags, "SELECT", None) or ()),
        selector=getattr(flags, "SELECTOR", None) or None,
        exclude=tuple(str(s) for s in getattr(flags, "EXCLUDE", None) or ()),
        secrets=credential_secrets(config.credentials),
    )


class Bridge:
    """dbt callback -> queue -> listener thread. The callback never raises."""

    def __init__(
        self,
        listener: Listener | None,
        at_end: Callable[[DbtContext], None] | None = None,
        on_finished: Callable[[NodeFinished], None] | None = None,
    ) -> None:
        self.listener = listener
        self.at_end = at_end
        self.on_finished = on_finished
        self.items: queue.Queue[object] = queue.Queue()
        self.context: DbtContext | None = None
        self.node_starts: dict[str, datetime] = {}
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._drain, name="dbt-oml-listener", daemon=True)
        self._thread.start()

    def callback(self, event: EventMsg) -> None:
        try:
            self._handle(event)
        except Exception as e:  # noqa: BLE001 - an exception escaping a dbt callback hangs dbt
            self.errors.append(f"listener: {type(e).__name__}: {e}")

    def _handle(self, event: EventMsg) -> None:
        name = event.info.name
        if self.context is None and name not in {"MainReportVersion", "MainReportArgs"}:
            self.context = _context_from_dbt(str(event.info.invocation_id))  # type: ignore[attr-defined]
            if self.context is not None:
                self.items.put(self.context)
        if name == "CommandCompleted" and self.at_end is not None and self.context is not None:
            self.at_end(self.context)  # in dbt's thread: dbt still holds its adapter here
        if name == "NodeStart":
            info = event.data.node_info
            started = parse_time(info.node_started_at) or datetime.now(timezone.utc)
            item = NodeStarted(unique_id=info.unique_id, started_at=started)
            self.node_starts.setdefault(item.unique_id, started)
            self.items.put(item)
        elif name == "NodeFinished" and self.on_finished is not None:
            status = str(event.data.run_result.status).lower()
            # in dbt's thread, which still holds its connection: dbt closes every connection
            # when its run ends, a query of another thread's included (dbt then fails)
            self.on_finished(NodeFinished(unique_id=event.data.node_info.unique_id, status=status))

    def _drain(self) -> None:
        while True:
            item = self.items.get()
            if item is None:
                return
            if self.listener is None:
                continue
            try:
                if isinstance(item, DbtContext):
                    self.listener.on_invocation(item)
                elif isinstance(item, NodeStarted):
                    self.listener.on_node_start(item)
                elif callable(item):
                    item()  # queued by `enqueue`
            except Exception as e:
                logger.debug("listener failed", exc_info=True)
                self.errors.append(f"listener: {type(e).__name__}: {e}")

    def enqueue(self, work: Callable[[], None]) -> None:
        """Run `work` on the listener thread, after what is queued (a node START, then its end)."""
        self.items.put(work)

    def close(self) -> None:
        self.items.put(None)
        self._thread.join()


def run_dbt(
    args: Sequence[str],
    listener: Listener | None = None,
    *,
    at_end: Callable[[DbtContext], None] | None = None,
    on_finished: Callable[[NodeFinished], None] | None = None,
) -> DbtInvocation:
    """Run one dbt command in this process, feeding node starts to `listener` as they happen.

    `at_end` is called when the command completes, while dbt still holds its adapter;
    `on_finished` as each node finishes, in the dbt thread that ran it (it may use the adapter
    there: never from another thread).
    """
    from dbt.cli.main import dbtRunner

    bridge = Bridge(listener, at_end, on_finished)
    try:
        result = dbtRunner(callbacks=[bridge.callback]).invoke(list(args))
    finally:
        bridge.close()
    error = None
    if result.exception is not None:
        error = str(result.exception).strip() or type(result.exception).__name__
    elif not result.success:
        error = _failure_summary(result.result)
    return DbtInvocation(
        return_code=exit_code(result.success, result.exception),
        error=error,
        context=bridge.context,
        node_starts=bridge.node_starts,
        ended_at=datetime.now(timezone.utc),
        listener_errors=bridge.errors,
    )


def _failure_summary(result: object) -> str:
    return failure_summary(
        (r.node.unique_id, str(getattr(r.status, "value", r.status)))
        for r in getattr(result, "results", None) or ()
    )


def compiled_everything(context: DbtContext) -> bool:
    """Whether the command was a `build` of the whole project (every node compiled)."""
    return context.command == "build" and not (
        context.select or context.selector or context.exclude
    )


def docs_generate_args(context: DbtContext) -> list[str]:
    """`dbt docs generate` for the same project, profile, target and target path.

    Profile and target are passed as the run was given them, not as dbt resolved them: dbt's
    partial parsing hashes the flags (and the vars), and a `--target local` the run was not given
    would make `docs generate` parse the whole project again. After a `build` of the whole
    project `--no-compile`: the build compiled every node, and the catalog is the warehouse's
    columns whatever is compiled (the same catalog, in half the time at 500 models:
    benchmarks/README.md, section 0c). After a partial run it compiles, so that its manifest
    (kept in target/dbt_oml/docs_generate/) gives `impact` and `lineage` every model's SQL.
    """
    whole_build = compiled_everything(context)
    args = [
        "docs",
        "generate",
        *(["--no-compile"] if whole_build else []),
        "--quiet",
        "--project-dir",
        str(context.project_root),
        "--target-path",
        str(context.target_path),
    ]
    if context.profiles_dir:
        args += ["--profiles-dir", context.profiles_dir]
    if context.profile_flag:
        args += ["--profile", context.profile_flag]
    if context.target_flag:
        args += ["--target", context.target_flag]
    if context.cli_vars:
        args += ["--vars", json.dumps(context.cli_vars)]
    usage = (
        "--send-anonymous-usage-stats" if context.usage_stats else "--no-send-anonymous-usage-stats"
    )
    return [*args, usage]


#: ProjectOptions and target_path_of moved to dbt.project; dbt_oml.cli still imports them here.
__all__ = [
    "Bridge",
    "DbtContext",
    "DbtInvocation",
    "Listener",
    "NodeStarted",
    "ProjectOptions",
    "docs_generate_args",
    "credential_secrets",
    "exit_code",
    "run_dbt",
    "target_path_of",
]


def compiled_file(target_path: Path, node: Node) -> str | None:
    """The SQL dbt wrote for a node it compiled in this run (target/compiled/<package>/<file>),
    or None."""
    if not node.original_file_path:
        return None
    path = target_path / "compiled" / node.package_name / node.original_file_path
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
