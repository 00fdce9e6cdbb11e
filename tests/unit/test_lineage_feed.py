"""LineageFeed: a run's events are built while its models are analysed; each model's event waits
for that model's lineage only, the feed ends holding what the finished lineage holds, and a
lineage handed out is forgotten."""

from __future__ import annotations

import threading
import weakref
from pathlib import Path

import pytest

from dbt_oml.artifacts import read_artifacts
from dbt_oml.lineage.batch import analyse_models
from dbt_oml.lineage.types import ColumnEdge, ModelLineage
from dbt_oml.pipeline.feed import LineageFeed

A = ModelLineage(columns=(ColumnEdge(output="a", inputs=(), expression="a"),), dataset=())
B = ModelLineage(columns=(ColumnEdge(output="b", inputs=(), expression="b"),), dataset=())


def _gated(release: threading.Event, first: str, rest: dict[str, ModelLineage | None]):
    """Work that settles `first` at once, then the `rest` once `release` is set."""

    def work(settled):
        settled(first, A)
        release.wait(timeout=30)
        for uid, lineage in rest.items():
            settled(uid, lineage)
        return {first: A, **{u: lin for u, lin in rest.items() if lin is not None}}

    return work


def test_a_settled_model_is_answered_while_the_rest_is_still_analysed() -> None:
    release = threading.Event()
    feed = LineageFeed.start({"m.a", "m.b"}, _gated(release, "m.a", {"m.b": B}))
    assert feed.get("m.a") == A  # m.b is not settled yet: this would block if it waited for all
    assert feed.get("seed.s") is None  # not analysed at all: answered at once
    release.set()
    assert feed.get("m.b") == B
    assert feed.result() == {"m.a": A, "m.b": B}


def test_an_opaque_model_gets_none_and_the_end_is_the_truth() -> None:
    release = threading.Event()
    release.set()
    feed = LineageFeed.start({"m.a", "m.b", "m.c"}, _gated(release, "m.a", {"m.b": None}))
    assert feed.get("m.b") is None
    assert feed.get("m.c") is None  # never settled: answered when the work ends
    assert feed.result() == {"m.a": A}


def test_decided_returns_once_a_wanted_model_has_lineage() -> None:
    release = threading.Event()
    feed = LineageFeed.start({"m.a"}, _gated(release, "m.a", {}))
    feed.decided()  # returns although the work still waits for `release`
    release.set()
    feed.result()


def test_an_ancestor_outside_the_wanted_models_decides_nothing() -> None:
    def work(settled):
        settled("m.ancestor", A)
        return {}

    feed = LineageFeed.start({"m.a"}, work)
    feed.decided()
    assert feed.get("m.ancestor") is None
    assert feed.result() == {}


def test_what_the_work_raises_reaches_the_caller_and_releases_waiters() -> None:
    def work(_settled: object) -> dict[str, ModelLineage]:
        raise RuntimeError("shared cache unreachable")

    feed = LineageFeed.start({"m.a"}, work)
    with pytest.raises(RuntimeError, match="shared cache unreachable"):
        feed.get("m.a")  # the events stop at the next model, never sent without their lineage
    with pytest.raises(RuntimeError, match="shared cache unreachable"):
        feed.result()


def _failing(_settled: object) -> dict[str, ModelLineage]:
    raise RuntimeError("bad")


def test_made_here_answers_at_once_and_raises_where_it_is_made() -> None:
    feed = LineageFeed.made({"m.a", "m.b"}, lambda _settled: {"m.a": A})
    assert (feed.get("m.a"), feed.get("m.b")) == (A, None)
    feed.decided()
    with pytest.raises(RuntimeError, match="bad"):
        LineageFeed.made({"m.a"}, _failing)


class _Watched(ModelLineage):
    """A lineage a weak reference can watch (ModelLineage has slots)."""


def test_a_lineage_is_handed_out_once_and_then_forgotten() -> None:
    made = [_Watched(columns=A.columns)]
    watch = weakref.ref(made[0])

    def work(settled):
        settled("m.a", made.pop())
        return {}  # a streaming work returns nothing of what it settled

    feed = LineageFeed.made({"m.a"}, work)
    assert feed.get("m.a").columns == A.columns  # type: ignore[union-attr]
    assert watch() is None  # the feed kept nothing of it: the event built from it was its end
    assert feed.get("m.a") is None  # asked again: handed out already


def test_a_streaming_analysis_keeps_no_lineage_and_counts_it(mini_target: Path) -> None:
    arts = read_artifacts(mini_target)
    models = {u for u, n in arts.manifest.nodes.items() if n.resource_type == "model"}
    heard: dict[str, ModelLineage | None] = {}
    report = analyse_models(
        arts, wanted=models, dialect="duckdb", settled=heard.__setitem__, keep=False
    )
    kept = analyse_models(arts, wanted=models, dialect="duckdb")
    assert report.models == {}
    assert report.found == set(kept.models)
    assert {u: lin for u, lin in heard.items() if lin is not None} == kept.models


def test_advances_before_the_phase_is_shown_are_held_and_the_last_shown_first() -> None:
    """Lineage started while dbt still has the console (pipeline.ends.start_early) counts on;
    its count shows once the end of the run names the phase, the latest first."""
    from dbt_oml.pipeline.ends import HeldProgress

    seen: list[tuple[int, int]] = []
    held = HeldProgress()
    held.advance(1, 10)
    held.advance(3, 10)
    assert seen == []
    held.show(lambda done, total: seen.append((done, total)))
    held.advance(4, 10)
    assert seen == [(3, 10), (4, 10)]
    quiet = HeldProgress()  # --quiet: no progress at all
    quiet.advance(1, 2)
    quiet.show(None)
    quiet.advance(2, 2)


def test_the_hand_over_is_told_however_the_lineage_ends(mini_target: Path) -> None:
    """The end of a build waits until the workers have the models (Prestarted.dispatched);
    a run's lineage that ends without handing them over (nothing to analyse here) still says
    so, so that nothing waits for a hand-over that never comes."""
    import os

    from dbt_oml.config import load_settings
    from dbt_oml.lineage.workers import Prestarted
    from dbt_oml.pipeline.lineage import ProjectPlace, lineage_feed
    from dbt_oml.pipeline.report import Report

    settings = load_settings(
        cli={"column_lineage": False}, environ=os.environ, cwd=mini_target, home=mini_target
    )
    started = Prestarted(2)  # never started: no worker to hand anything to
    place = ProjectPlace(
        project_root=mini_target, target_path=mini_target, dialect="duckdb", default_catalog=None
    )
    feed = lineage_feed(
        settings,
        read_artifacts(mini_target),
        place=place,
        report=Report(),
        progress=None,
        guard=False,
        started=started,
    )
    assert feed.result() == {}
    assert started.dispatched.is_set()
