"""dbt tests as data-quality events, at the tests' real times.

Pure. Two views of the same results: one run per tested dataset carrying dbt-ol's
`dataQualityAssertions` (in `inputFacets`, and in `facets` as dbt-ol also sends them), so
consumers of dbt-ol keep working; and one run per test (job = the test's unique_id, as dbt-ol
names singular tests) with its own start and end and a TestRunFacet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, cast

from openlineage.client.event_v2 import InputDataset, RunEvent, RunState
from openlineage.client.facet_v2 import DatasetFacet, JobFacet, RunFacet

from dbt_oml.artifacts import Node, NodeResult
from dbt_oml.events import facets, node_facets

if TYPE_CHECKING:
    from dbt_oml.events.node_events import EventBuilder


_FAILED = frozenset({"fail", "error"})


@dataclass(frozen=True, slots=True)
class _Span:
    """When a test run started and ended, and whether it failed."""

    start: datetime
    end: datetime
    failed: bool


def tested_node(builder: EventBuilder, test: Node) -> Node | None:
    """The relation a test checks: its attached node, else its only relation parent."""
    if test.test is not None and test.test.attached_node:
        return builder.manifest.get(test.test.attached_node)
    parents = [p for p in (builder.manifest.get(u) for u in test.depends_on) if p and p.is_relation]
    if len(parents) > 1 and test.test is not None and test.test.generic:
        # manifests before attached_node: dbt names a generic test `<test>_<model>_<args>`
        prefix = f"{test.test.assertion}_"
        parents = [p for p in parents if test.name.startswith(f"{prefix}{p.name}_")]
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
        items.sort(key=lambda item: item[0].unique_id)  # not dbt's thread-dependent order
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
                **builder.dataset_facets(target),
                # dbt-ol sends assertions in `facets` too; some consumers read them there
                **cast("dict[str, DatasetFacet]", dq),
            },
            inputFacets=dq,
        )
        events += _test_run(
            builder,
            key=f"test:{target.unique_id}",
            job=builder.job_name(target, "test"),
            run_facets={**builder.run_facets(), **builder.parent_facet()},
            inputs=[tested],
            span=_Span(start, end, failed=any(r.status in _FAILED for _, r in items)),
        )
    return events


def _test_run(
    builder: EventBuilder,
    *,
    key: str,
    job: str,
    run_facets: dict[str, RunFacet],
    inputs: list[InputDataset],
    span: _Span,
    end_facets: dict[str, RunFacet] | None = None,
) -> list[RunEvent]:
    """START and COMPLETE/FAIL of one test run; `key` makes its run id. `end_facets` go on
    the COMPLETE/FAIL only (what the run found)."""
    ends = end_facets or {}
    job_facets: dict[str, JobFacet] = {
        "jobType": facets.job_type("TEST", builder.settings.producer)
    }
    return [
        builder.event(
            state=state,
            at=at,
            rid=builder.node_run_id(key, span.start),
            job=job,
            job_facets=job_facets,
            run_facets=run_facets if state is RunState.START else {**run_facets, **ends},
            inputs=inputs,
        )
        for state, at in (
            (RunState.START, span.start),
            (RunState.FAIL if span.failed else RunState.COMPLETE, span.end),
        )
    ]


def per_test_events(builder: EventBuilder, results: Iterable[NodeResult]) -> list[RunEvent]:
    """START and COMPLETE/FAIL of every executed test, at its own times, with the TestRunFacet."""
    events: list[RunEvent] = []
    producer = builder.settings.producer
    for result in results:
        test = builder.manifest.get(result.unique_id)
        if test is None or test.test is None or result.status == "skipped":
            continue
        # a test whose timing does not read still ran: it starts with the invocation
        start = result.started_at or builder.invocation.started_at
        end = result.completed_at
        run_facets = {
            **builder.run_facets(),
            **builder.parent_facet(),
            **facets.tags(test, producer),
            **facets.test_execution(
                test=test,
                status=result.status,
                failures=result.failures,
                sql=result.compiled_code or test.compiled_code,
                producer=producer,
            ),
        }
        events += _test_run(
            builder,
            key=test.unique_id,
            job=test.unique_id,
            run_facets=run_facets,
            inputs=[builder.input_dataset(node) for node in builder.upstream(test)],
            span=_Span(start, end or start, failed=result.status in _FAILED),
            end_facets=node_facets.dbt_tests_facet(
                [dbt_test(builder, test, result, at=start)], producer
            ),
        )
    return events


def dbt_test(
    builder: EventBuilder, test: Node, result: NodeResult, *, at: datetime
) -> node_facets.DbtTest:
    """One test for dbt-oml's `dbt_oml_tests` facet, with the dataset it checks."""
    target = tested_node(builder, test)
    ref = builder.dataset(target) if target is not None else None
    tested = (ref.namespace, ref.name) if ref is not None else None
    return node_facets.dbt_test(test, result, tested=tested, at=at)


def skipped_tests(
    builder: EventBuilder, results: Iterable[NodeResult], *, at: datetime
) -> dict[str, RunFacet]:
    """`dbt_oml_tests` of the tests dbt skipped (they have no run), at the invocation's end."""
    skipped = []
    for result in results:
        test = builder.manifest.get(result.unique_id)
        if test is not None and test.test is not None and result.status == "skipped":
            skipped.append(dbt_test(builder, test, result, at=at))
    return node_facets.dbt_tests_facet(skipped, builder.settings.producer)
