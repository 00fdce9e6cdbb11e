"""The runs of an invocation's events: run ids and job names, the run facets every run shares,
the parent facets, and the invocation's own START and end.

Pure: the mixin reads the invocation and settings the EventBuilder holds; no I/O.
"""

from __future__ import annotations

import re
from datetime import datetime

from openlineage.client.event_v2 import (
    InputDataset,
    Job,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
)
from openlineage.client.facet_v2 import JobFacet, RunFacet, parent_run

from dbt_oml.artifacts import Node
from dbt_oml.events import facets
from dbt_oml.events.ids import run_id
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.runs import JobNaming, RunRef
from dbt_oml.times import format_time


class RunsMixin:
    """The run half of EventBuilder (which declares these attributes as fields)."""

    invocation: Invocation
    settings: EventSettings
    _run_facets: dict[str, RunFacet] | None
    _parent_facet: dict[str, RunFacet] | None

    @property
    def parent_job(self) -> str:
        if self.settings.parent_job_name:
            return self.settings.parent_job_name
        name = f"dbt-run-{self.invocation.project_name}"
        return extended_name(name, self.invocation) if self.settings.extended_job_name else name

    def parent_run_id(self) -> str:
        return run_id(self.invocation.invocation_id, "", self.invocation.started_at)

    def node_run_id(self, key: str, started_at: datetime) -> str:
        return run_id(self.invocation.invocation_id, key, started_at)

    def job_name(self, node: Node, kind: str | None = None) -> str:
        """The job name of a node (or of the tests of a node, with kind="test")."""
        if self.settings.job_naming is JobNaming.UNIQUE_ID:
            return node.unique_id if kind is None else f"{node.unique_id}.{kind}"
        uid = node.unique_id
        for prefix in ("model.", "seed.", "snapshot."):
            uid = uid.removeprefix(prefix)
        base = ".".join(p for p in (node.database, node.schema, uid) if p)
        command = self.invocation.command
        step = kind or {"model": "run"}.get(node.resource_type, node.resource_type)
        if command == "build":
            return f"{base}.build.{step}"
        return base if step == "run" and command == "run" else f"{base}.{step}"

    def run_facets(self) -> dict[str, RunFacet]:
        if self._run_facets is None:
            self._run_facets = self._new_run_facets()
        return dict(self._run_facets)

    def _new_run_facets(self) -> dict[str, RunFacet]:
        inv = self.invocation
        return facets.run_facets(
            dbt_version=inv.dbt_version,
            adapter_version=self.settings.adapter_version,
            invocation_id=inv.invocation_id,
            project_name=inv.project_name,
            profile_name=inv.profile_name,
            command=inv.command,
            producer=self.settings.producer,
            project_version=inv.project_version,
        )

    def parent_facet(self) -> dict[str, RunFacet]:
        """Node runs: the invocation is the parent; the orchestrator's root (if any) the root."""
        if self._parent_facet is None:
            self._parent_facet = self._new_parent_facet()
        return dict(self._parent_facet)

    def _new_parent_facet(self) -> dict[str, RunFacet]:
        me = RunRef(
            namespace=self.settings.job_namespace, name=self.parent_job, run_id=self.parent_run_id()
        )
        root = self.settings.orchestrator.root if self.settings.orchestrator else me
        return {"parent": self._parent(me, root)}

    def _parent(self, parent: RunRef, root: RunRef) -> parent_run.ParentRunFacet:
        return parent_run.ParentRunFacet(
            run=parent_run.Run(runId=parent.run_id),
            job=parent_run.Job(namespace=parent.namespace, name=parent.name),
            root=parent_run.Root(
                run=parent_run.RootRun(runId=root.run_id),
                job=parent_run.RootJob(namespace=root.namespace, name=root.name),
            ),
            producer=self.settings.producer,
        )

    def _invocation_facets(self) -> dict[str, RunFacet]:
        """The invocation's own run facets: the orchestrator as its parent, when there is one."""
        out = self.run_facets()
        if self.settings.orchestrator is not None:
            out["parent"] = self._parent(
                self.settings.orchestrator.parent, self.settings.orchestrator.root
            )
        return out

    def event(
        self,
        *,
        state: RunState,
        at: datetime,
        rid: str,
        job: str,
        job_facets: dict[str, JobFacet],
        run_facets: dict[str, RunFacet],
        inputs: list[InputDataset] | None = None,
        outputs: list[OutputDataset] | None = None,
    ) -> RunEvent:
        return RunEvent(
            eventType=state,
            eventTime=format_time(at),
            run=Run(runId=rid, facets=run_facets),
            job=Job(namespace=self.settings.job_namespace, name=job, facets=job_facets),
            inputs=inputs or [],
            outputs=outputs or [],
            producer=self.settings.producer,
        )

    def parent_start(self) -> RunEvent:
        """START of the invocation's own run."""
        return self.event(
            state=RunState.START,
            at=self.invocation.started_at,
            rid=self.parent_run_id(),
            job=self.parent_job,
            job_facets={"jobType": facets.job_type("JOB", self.settings.producer)},
            run_facets=self._invocation_facets(),
        )

    def parent_end(self, *, at: datetime, error: str | None) -> RunEvent:
        """COMPLETE (no error) or FAIL (with the error text) of the invocation's run."""
        run_facets = self._invocation_facets()
        if error is not None:
            message = self.settings.redact(error)
            run_facets["errorMessage"] = facets.error_message(message, self.settings.producer)
        return self.event(
            state=RunState.FAIL if error is not None else RunState.COMPLETE,
            at=at,
            rid=self.parent_run_id(),
            job=self.parent_job,
            job_facets={"jobType": facets.job_type("JOB", self.settings.producer)},
            run_facets=run_facets,
        )


def extended_name(name: str, invocation: Invocation) -> str:
    """dbt-ol's extended wrapper name: `<name>-<profile>-<model>-<model>...` (or `-<selector>`),
    each selection component with characters other than letters, digits, `_` and `-` as `_`.

    >>> inv = Invocation(invocation_id="i", started_at=datetime(2026, 1, 1), command="run",
    ...                  project_name="shop", profile_name="prod", selected=("tag:daily", "x+"))
    >>> extended_name("dbt-run-shop", inv)
    'dbt-run-shop-prod-tag_daily-x_'
    """
    if invocation.profile_name:
        name = f"{name}-{invocation.profile_name}"
    if invocation.selected:
        return f"{name}-" + "-".join(_component(s) for s in invocation.selected)
    if invocation.selector:
        return f"{name}-{_component(invocation.selector)}"
    return name


def _component(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_\-]", "_", text)
