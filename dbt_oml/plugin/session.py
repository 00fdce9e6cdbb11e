"""One dbt command observed by the dbt plugin: live START events, each node's end as it
finishes, then the invocation's end.

The same listener as `dbt-oml build` (pipeline.LiveEmitter behind dbt.runner.Bridge), fed by
dbt's own event bus instead of a dbtRunner callback. At each `NodeFinished` the node's COMPLETE or
FAIL is built (plugin.nodes) and queued for the listener thread. At `CommandCompleted` dbt has
written run_results.json and still holds its adapter: what did not go out per node (tests, the
data-quality events, the invocation's end) is built and delivered, and dbt goes on to exit.
Every exception stops here, as one line on stderr.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from dbt_oml.artifacts import RunArtifacts, failure_summary, read_manifest, read_run_results
from dbt_oml.config import Settings, events_destination, load_settings
from dbt_oml.console import Console
from dbt_oml.dbt.relation_columns import live_catalog
from dbt_oml.dbt.runner import Bridge
from dbt_oml.errors import DbtOmlError
from dbt_oml.events.node_events import BUILD_COMMANDS
from dbt_oml.pipeline.live import LiveEmitter, finish
from dbt_oml.pipeline.report import Report
from dbt_oml.pipeline.state_files import write_node_starts
from dbt_oml.plugin.nodes import NodeEnds
from dbt_oml.plugin.notice import warn

if TYPE_CHECKING:
    from dbt_common.events.base_types import EventMsg


logger = logging.getLogger("dbt_oml")


class PluginSession:
    """Listens to one dbt command; `callback` is registered on dbt's event manager."""

    def __init__(self, settings: Settings, cwd: Path, console: Console | None = None) -> None:
        self.settings = settings
        self.console = console or Console()
        self.console.redactor.add(*settings.secrets)
        self.report = Report()
        self.live = LiveEmitter(
            settings, cwd=cwd, report=self.report, redactor=self.console.redactor
        )
        self.bridge = Bridge(self.live)
        self.nodes = NodeEnds(
            self.live,
            enqueue=self.bridge.enqueue,
            queued=self.bridge.items.qsize,
            node_starts=self.bridge.node_starts,
        )
        self.live.sent_ends = self.nodes.sent
        self.live.node_lineage = self.nodes.lineage  # analysed as nodes finished: not again
        self.error: str | None = None
        self._finished = threading.Event()

    @classmethod
    def start(
        cls, environ: Mapping[str, str], *, profile: Mapping[str, object] | None = None
    ) -> PluginSession | None:
        """A session with dbt-oml's settings (`profile`: from the dbt_oml.duckdb entry of the
        target's `plugins:`); None (and one line) when they do not load."""
        cwd = Path.cwd()
        try:
            settings = load_settings(
                cli={}, environ=environ, cwd=cwd, home=Path.home(), profile=profile
            )
        except DbtOmlError as e:
            warn(f"{e}; dbt runs without lineage")
            return None
        session = cls(settings, cwd)
        quiet = settings.quiet and settings.oml_log_level in ("DEBUG", "INFO")
        session.console.log_to_stderr("WARNING" if quiet else settings.oml_log_level)
        # where events go, and which configuration chose that: the wrapper's first line too
        logger.info("events -> %s", events_destination(settings, environ, cwd=cwd))
        return session

    def callback(self, event: EventMsg) -> None:
        """dbt calls this from its threads; it must never raise (dbt would hang)."""
        try:
            self.bridge.callback(event)
            name = event.info.name
            if name == "NodeFinished":
                self._node_finished(event)
            elif name == "MainEncounteredError":
                self.error = str(event.data.exc).strip() or "dbt encountered an error"
            elif name == "CommandCompleted" and not self._finished.is_set():
                self._finished.set()
                self.complete(success=bool(event.data.success), at=_completed_at(event))
        except Exception as e:  # noqa: BLE001 - an exception escaping a dbt callback hangs dbt
            warn(
                f"lineage stopped ({type(e).__name__}: {e}); dbt's result is unchanged",
                self.console.redactor,
            )

    def _node_finished(self, event: EventMsg) -> None:
        """A node's end right away; on any problem the end of the run sends it instead."""
        try:
            self.nodes.on_node_finished(event, self.bridge.context)
        except Exception as e:  # noqa: BLE001 - the node's event waits for the end of the run
            self.report.problems.append(
                f"{event.data.node_info.unique_id}: sent at the end ({type(e).__name__}: {e})"
            )

    def complete(self, *, success: bool, at: datetime) -> None:
        """The end of the command: terminal events, delivery, the summary line."""
        self.bridge.close()  # the START events queued so far go out first
        self.report.problems += self.bridge.errors
        ctx, live = self.live.context, self.live
        if ctx is None or live.delivery is None:
            return  # dbt stopped before it registered an adapter
        error = None if success else self.error
        artifacts = None
        try:
            if ctx.command in BUILD_COMMANDS:
                artifacts = self._artifacts(ctx.target_path, ctx.invocation_id)
            if artifacts is not None:
                write_node_starts(ctx, self.bridge.node_starts)
                if not success and error is None and artifacts.run_results is not None:
                    error = failure_summary(
                        (r.unique_id, r.status) for r in artifacts.run_results.results
                    )
        except DbtOmlError as e:
            self.report.problems.append(str(e))
            error = error or str(e)
        if not success and error is None:
            error = "dbt reported failure"
        finish(live, artifacts, node_starts=self.bridge.node_starts, ended_at=at, error=error)
        self.console.summary(self.report, dry_run=self.settings.emit.dry_run)
        for problem in self.report.problems:
            warn(problem, self.console.redactor)

    def _artifacts(self, target: Path, invocation_id: str) -> RunArtifacts | None:
        """This command's run results and manifest, with the relations' live columns."""
        results_path = target / "run_results.json"
        if not results_path.exists():
            return None
        results = read_run_results(results_path)
        if results.invocation_id != invocation_id:
            return None  # not written by this command (a parse error, --no-write-json)
        self.report.problems += results.problems
        manifest = read_manifest(target / "manifest.json")
        catalog, problem = live_catalog(manifest, now=datetime.now(timezone.utc))
        if problem:
            self.report.problems.append(problem)
        return RunArtifacts(manifest=manifest, run_results=results, catalog=catalog)


def _completed_at(event: EventMsg) -> datetime:
    stamp = getattr(event.data, "completed_at", None)
    try:
        return stamp.ToDatetime(tzinfo=timezone.utc)  # type: ignore[union-attr,no-any-return]
    except (AttributeError, TypeError, ValueError):
        return datetime.now(timezone.utc)
