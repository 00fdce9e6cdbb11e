"""dbt tests as data-quality events: one run per tested dataset, at the tests' real times.

Pure. Keeps dbt-ol's `dataQualityAssertions` shape (in `inputFacets`, and in `facets` as dbt-ol
also sends them) so consumers of dbt-ol keep working.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, cast

from openlineage.client.event_v2 import InputDataset, RunEvent, RunState
from openlineage.client.facet_v2 import DatasetFacet, JobFacet

from dbt_oml import facets
from dbt_oml.artifacts import Node, NodeResult

if TYPE_CHECKING:
    from dbt_oml.events import EventBuilder


def tested_node(builder: EventBuilder, test: Node) -> Node | None:
    """The relation a test checks: its attached node, else its only relation parent."""
    if test.test is not None and test.test.attached_node:
        return builder.manifest.get(test.test.attached_node)
    parents = [p for p in (builder.manifest.get(u) for u in test.depends_on) if p and p.is_relation]
    return parents[0] if len(parents) == 1 else None


def test_events(builder: EventBuilder, results: Iterable[NodeResult]) -> list[RunEvent]:
    """One run per tested dataset carrying dbt-ol's dataQualityAssertions, at real times."""
    by_dataset: dict[str, list[tuple[Node, NodeResult]]] = defaultdict(list)
    for result in results:
        test = builder.manifest.get(result.unique_id)
        if test is None or test.test is None or result.status == "skipped":
            continue
        target = tested_node(builder, test)
        if target is not None:
            by_dataset[target.unique_id].append((test, result))
    events: list[RunEvent] = []
    producer = builder.settings.producer
    for uid, items in sorted(by_dataset.items()):
        target = builder.manifest.nodes[uid]
        starts = [r.started_at for _, r in items if r.started_at]
        ends = [r.completed_at for _, r in items if r.completed_at]
        start = min(starts) if starts else builder.invocation.started_at
        end = max(ends) if ends else start
        checks = [facets.assertion(test=t, status=r.status, failures=r.failures) for t, r in items]
        ref = builder.dataset(target)
        dq = facets.assertions(checks, producer)
        tested = InputDataset(
            namespace=ref.namespace,
            name=ref.name,
            facets={
                **facets.dataset_facets(
                    node=target,
                    namespace=ref.namespace,
                    columns=builder.columns(target),
                    producer=producer,
                ),
                # dbt-ol sends assertions in `facets` too; some consumers read them there
                **cast("dict[str, DatasetFacet]", dq),
            },
            inputFacets=dq,
        )
        failed = any(r.status in {"fail", "error"} for _, r in items)
        events += _test_run(builder, target, tested, start, end, failed=failed)
    return events


def _test_run(
    builder: EventBuilder,
    target: Node,
    tested: InputDataset,
    start: datetime,
    end: datetime,
    *,
    failed: bool,
) -> list[RunEvent]:
    rid = builder.node_run_id(f"test:{target.unique_id}", start)
    job = builder.job_name(target, "test")
    run_facets = {**builder.run_facets(), **builder.parent_facet()}
    job_facets: dict[str, JobFacet] = {
        "jobType": facets.job_type("TEST", builder.settings.producer)
    }
    return [
        builder.event(
            state=state,
            at=at,
            rid=rid,
            job=job,
            job_facets=job_facets,
            run_facets=run_facets,
            inputs=[tested],
        )
        for state, at in (
            (RunState.START, start),
            (RunState.FAIL if failed else RunState.COMPLETE, end),
        )
    ]
