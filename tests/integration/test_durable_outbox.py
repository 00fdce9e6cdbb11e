"""The durable outbox (`outbox_dir: s3://bucket/prefix`) against a real S3 API: moto's server on
loopback, started by this module.

A "pod" is a copy of the project with a disk of its own (its target/); the bucket outlives it.
Each test counts the events it started with against what OpenMetadata (the loopback stand-in)
received and what the bucket still holds: how many were lost, how many sent (or kept) twice.
Leases are tested with an injected clock; nothing here sleeps or times anything.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.delivery.leases import LEASE, MARKER, Claim
from dbt_oml.delivery.remote import RemoteOutbox
from tests.conftest import CliRun, copy_project, free_port, run_in_process
from tests.support.fakes.openmetadata import FakeOpenMetadata, serve

pytestmark = pytest.mark.integration
moto_server = pytest.importorskip("moto.server", reason="needs moto[server] (the test extra)")
s3fs = pytest.importorskip("s3fs", reason="needs s3fs (the test extra, or dbt-oml[s3])")

BUCKET = "pods"
GOLDEN_ARTIFACTS = Path(__file__).resolve().parents[1] / "golden" / "artifacts"
#: OpenMetadata's batch endpoint (the transport posts there; one by one to the single one)
BATCH = "/api/v1/openlineage/lineage/batch"
SINGLE = "/api/v1/openlineage/lineage"
KEYS = {"AWS_ACCESS_KEY_ID": "AKIDPODS", "AWS_SECRET_ACCESS_KEY": "s3cr3t-of-the-pods"}


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 on 127.0.0.1 (a port the OS picked), for this module."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # its request lines are not ours
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def aws(endpoint: str) -> dict[str, str]:
    """What an S3 client reads from a pod's environment (IRSA or a Secret, in a real pod)."""
    return {
        **KEYS,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@dataclass(frozen=True)
class Bucket:
    """One test's prefix of the bucket, read directly (not through dbt-oml)."""

    fs: Any
    prefix: str

    @property
    def url(self) -> str:
        return f"s3://{self.prefix}"

    def names(self) -> list[str]:
        self.fs.invalidate_cache()
        return sorted(p.rsplit("/", 1)[1] for p in self.fs.find(self.prefix))

    def read(self, name: str) -> bytes:
        return bytes(self.fs.cat_file(f"{self.prefix}/{name}"))

    def write(self, name: str, data: bytes) -> None:
        self.fs.pipe_file(f"{self.prefix}/{name}", data)

    def events(self) -> list[dict[str, Any]]:
        """Every event the prefix holds (in any *.jsonl, refused ones too)."""
        return [
            json.loads(line)
            for name in self.names()
            if name.endswith(".jsonl")
            for line in self.read(name).decode().splitlines()
            if line.strip()
        ]


@pytest.fixture
def bucket(
    s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Bucket:
    for key, value in aws(s3_endpoint).items():
        monkeypatch.setenv(key, value)
    fs = s3fs.S3FileSystem(
        skip_instance_cache=True,
        endpoint_url=s3_endpoint,
        key=KEYS["AWS_ACCESS_KEY_ID"],
        secret=KEYS["AWS_SECRET_ACCESS_KEY"],
    )
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    return Bucket(fs, f"{BUCKET}/{re.sub(r'[^A-Za-z0-9-]', '-', request.node.name)}")


# -- events, pods and OpenMetadata ---------------------------------------------------------


def events(count: int) -> list[dict[str, Any]]:
    """`count` COMPLETE events, each its own run and its own edge in OpenMetadata."""
    columns = [{"name": "id", "type": "INTEGER"}]
    return [
        {
            "eventTime": "2026-11-30T03:55:00.123Z",
            "eventType": "COMPLETE",
            "producer": "https://example.com/producer",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
            "run": {"runId": f"01a22a97-c811-7ab0-b0d7-{i:012d}"},
            "job": {"namespace": "dbt", "name": f"model.shop.t{i}"},
            "inputs": [
                {
                    "namespace": "duckdb://pod",
                    "name": "crm.sales.customers",
                    "facets": {"schema": {"fields": columns}},
                }
            ],
            "outputs": [
                {
                    "namespace": "duckdb://pod",
                    "name": f"warehouse.staging.t{i}",
                    "facets": {"schema": {"fields": columns}},
                }
            ],
        }
        for i in range(count)
    ]


def run_ids(docs: list[dict[str, Any]]) -> list[str]:
    return [str(d["run"]["runId"]) for d in docs]


def received(om: FakeOpenMetadata) -> list[str]:
    """The run ids OpenMetadata accepted, once per time it accepted one (not those its mapper
    failed: OM answers 200 with them in `failedEvents`)."""
    failing = om.event_failure
    out: list[str] = []
    for r in om.requests:
        if r.method == "POST" and r.status == 200 and r.path in (BATCH, SINGLE):
            docs = r.body["events"] if r.path == BATCH else [r.body]
            out += run_ids([d for d in docs if failing is None or failing(d) is None])
    return out


def tally(started: list[str], delivered: list[str], kept: list[str]) -> tuple[int, int]:
    """(lost, duplicated): events neither delivered nor kept; events delivered or kept twice,
    or both delivered and still kept (a later flush sends them again)."""
    lost = len(set(started) - set(delivered) - set(kept))
    twice = Counter(delivered) + Counter(kept)
    return lost, sum(n - 1 for n in twice.values() if n > 1)


def pod(tmp_path: Path, name: str) -> Path:
    """A fresh pod: the project's files, an empty disk (no target/)."""
    return copy_project(tmp_path / name, parsed=False)


def spool(project: Path) -> Path:
    return project / "target" / "dbt_oml" / "outbox"


def om_env(om_url: str, project: Path, outbox: str, endpoint: str, **extra: str) -> dict[str, str]:
    token = project / "om-token"
    token.write_text("bot-jwt\n")
    return {
        **aws(endpoint),
        "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
        "OPENLINEAGE__TRANSPORT__URL": om_url,
        "OPENLINEAGE__TRANSPORT__JWT_TOKEN_FILE": str(token),
        "OPENLINEAGE__TRANSPORT__TIMEOUT": "1",
        "OPENLINEAGE__TRANSPORT__RETRY_BUDGET": "0.2",
        "DBT_OML_OUTBOX_DIR": outbox,
        **extra,
    }


def om_down() -> str:
    return f"http://127.0.0.1:{free_port()}"


@contextmanager
def om_up(app: Any = None) -> Iterator[tuple[FakeOpenMetadata, str]]:
    om = FakeOpenMetadata.with_bot()
    with serve(app(om) if app else om) as url:
        yield om, url


class BatchesFailAfterTheFirst:
    """In front of OpenMetadata: the first batch gets through, every later one gets a 503."""

    def __init__(self, app: FakeOpenMetadata) -> None:
        self.app = app
        self.batches = 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if environ["PATH_INFO"] == BATCH and environ["REQUEST_METHOD"] == "POST":
            self.batches += 1
            if self.batches > 1:
                start_response("503 Service Unavailable", [("Content-Type", "application/json")])
                return [b'{"code": 503, "message": "overloaded"}']
        return self.app(environ, start_response)


def built_of(run: CliRun) -> int:
    """How many events a run that delivered none built (its summary line)."""
    found = re.search(r"dbt-oml: (\d+) events, 0 delivered", run.stderr)
    assert found is not None, run.stderr[-3000:]
    return int(found.group(1))


def flush(project: Path, env: dict[str, str]) -> CliRun:
    return run_in_process(["flush"], cwd=project, env=env)


def ours(stderr: str, about: str) -> list[str]:
    """dbt-oml's lines on stderr that name `about`."""
    return [line for line in stderr.splitlines() if line.startswith("dbt-oml") and about in line]


def keep_in_bucket(tmp_path: Path, bucket: Bucket, endpoint: str, docs: list[dict]) -> None:
    """Pod A's flush meets OpenMetadata down: its events go to the bucket, then pod A dies."""
    a = pod(tmp_path, "pod-a")
    spool(a).mkdir(parents=True)
    (spool(a) / "inv.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    run = flush(a, om_env(om_down(), a, bucket.url, endpoint))
    assert run.returncode == 4, run.stderr[-3000:]
    assert list(spool(a).glob("*.jsonl")) == [], run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    shutil.rmtree(a)  # the pod is gone, with its emptyDir


# -- a run's kept events go to the bucket --------------------------------------------------


def test_a_failed_delivery_lands_in_the_bucket(
    tmp_path: Path, bucket: Bucket, s3_endpoint: str
) -> None:
    """`dbt-oml emit` with OpenMetadata down: every event built is in s3://bucket/prefix, under
    a write-once name, and none stays on the pod's disk."""
    a = pod(tmp_path, "pod-a")
    shutil.copytree(GOLDEN_ARTIFACTS, a / "target")
    env = om_env(om_down(), a, bucket.url, s3_endpoint)
    run = run_in_process(["emit", "--profiles-dir", "."], cwd=a, env=env)
    assert run.returncode == 4, run.stderr[-3000:]  # not delivered
    built = built_of(run)
    (name,) = [n for n in bucket.names() if n.endswith(".jsonl")]
    assert re.fullmatch(r"openmetadata\.\d{8}T\d{6}Z-[0-9a-f]{8}\.jsonl", name), name
    kept = bucket.events()
    assert list(spool(a).glob("*.jsonl")) == []
    ids = [(e["run"]["runId"], e["eventType"]) for e in kept]
    assert (len(kept), len(set(ids))) == (built, built)  # none lost, none twice
    assert ours(run.stderr, f"kept event(s) are in {bucket.url}")
    # the summary names where they are now, not the local file that went up
    assert ours(run.stderr, f"NOT delivered, kept in {bucket.url} (send later: dbt-oml flush")
    assert not ours(run.stderr, "dbt-oml replay")
    assert "Traceback" not in run.stderr
    assert KEYS["AWS_SECRET_ACCESS_KEY"] not in run.stderr + name


# -- another pod's flush -------------------------------------------------------------------


def test_another_pods_flush_delivers_it_and_empties_the_prefix(
    tmp_path: Path, bucket: Bucket, s3_endpoint: str
) -> None:
    docs = events(6)
    keep_in_bucket(tmp_path, bucket, s3_endpoint, docs)
    assert sorted(run_ids(bucket.events())) == sorted(run_ids(docs))
    b = pod(tmp_path, "pod-b")
    with om_up() as (om, url):
        run = flush(b, om_env(url, b, bucket.url, s3_endpoint))
    assert run.returncode == 0, run.stderr[-3000:]
    assert tally(run_ids(docs), received(om), run_ids(bucket.events())) == (0, 0)
    assert bucket.names() == []  # no object, no claim marker
    assert list(spool(b).glob("*.jsonl")) == []
    assert "6 events, 6 delivered" in run.stderr


def test_nothing_waiting_is_one_line(tmp_path: Path, bucket: Bucket, s3_endpoint: str) -> None:
    b = pod(tmp_path, "pod-b")
    run = flush(b, om_env(om_down(), b, bucket.url, s3_endpoint))
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr.strip() == f"dbt-oml flush: nothing to send in {bucket.url}"


# -- a flush killed after claiming ---------------------------------------------------------


def _dead_claim(bucket: Bucket, at: float, *, host: str = "pod-a-7d9f", pid: int = 7) -> str:
    """The marker a flush killed after claiming leaves (its copy died with its pod)."""
    (name,) = [n for n in bucket.names() if n.endswith(".jsonl")]
    bucket.write(f"{name}{MARKER}", Claim(host, pid, at, "0123456789abcdef").dump())
    return name


def test_a_flush_killed_after_claiming_is_recovered_by_the_next(
    tmp_path: Path, bucket: Bucket, s3_endpoint: str
) -> None:
    """A claim within its lease is left to its flush (nothing sent, nothing lost); once its
    owner has been gone for longer than the lease, the next flush takes the object over and
    delivers every event, once."""
    docs = events(4)
    keep_in_bucket(tmp_path, bucket, s3_endpoint, docs)
    name = _dead_claim(bucket, at=time.time())  # claimed just now: its flush may still run
    with om_up() as (om, url):
        b = pod(tmp_path, "pod-b")
        early = flush(b, om_env(url, b, bucket.url, s3_endpoint))
        assert early.returncode == 0, early.stderr[-3000:]
        assert received(om) == []
        assert bucket.names() == [name, f"{name}{MARKER}"]
        assert len(ours(early.stderr, "being sent by another flush (host pod-a-7d9f")) == 1
        _dead_claim(bucket, at=0.0)  # its owner died long before the lease ran out
        c = pod(tmp_path, "pod-c")
        late = flush(c, om_env(url, c, bucket.url, s3_endpoint))
    assert late.returncode == 0, late.stderr[-3000:]
    assert len(ours(late.stderr, "a flush that did not finish left it")) == 1
    assert tally(run_ids(docs), received(om), run_ids(bucket.events())) == (0, 0)
    assert bucket.names() == []


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_lease_ends_exactly_when_it_says(tmp_path: Path, bucket: Bucket) -> None:
    """Injected clock: another host's claim holds for LEASE seconds, then any flush takes it; a
    claim of this host whose process is gone is taken at once; a live one never."""
    local = tmp_path / "outbox"
    local.mkdir()
    (local / "inv.jsonl").write_text("".join(json.dumps(d) + "\n" for d in events(2)))
    clock = Clock(1_800_000_000.0)
    assert RemoteOutbox.open(bucket.url, clock=clock).push(local).problems == []
    name = _dead_claim(bucket, at=clock.now)
    for seconds, taken in ((LEASE - 1, []), (LEASE, []), (LEASE + 1, [name])):
        clock.now = 1_800_000_000.0 + seconds
        pulled = tmp_path / f"pulled-{seconds}"
        assert RemoteOutbox.open(bucket.url, clock=clock).pull(pulled).problems == []
        assert sorted(p.name for p in pulled.glob("*")) == taken, seconds
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    here = socket.gethostname()
    for pid, taken in ((1, []), (int(gone), [name])):  # pid 1 runs: its flush goes on
        _dead_claim(bucket, at=clock.now, host=here, pid=pid)
        pulled = tmp_path / f"pid-{pid}"
        assert RemoteOutbox.open(bucket.url, clock=clock).pull(pulled).problems == []
        assert sorted(p.name for p in pulled.glob("*")) == taken, pid
    assert bucket.read(name).decode().splitlines() == [json.dumps(d) for d in events(2)]


# -- a delivery that half fails ------------------------------------------------------------


@pytest.mark.parametrize("fault", ["503 after the first batch", "two refused for good"])
def test_a_half_failed_file_keeps_exactly_the_undelivered_events(
    tmp_path: Path, bucket: Bucket, s3_endpoint: str, fault: str
) -> None:
    docs = events(6)
    keep_in_bucket(tmp_path, bucket, s3_endpoint, docs)
    (original,) = bucket.names()
    refused = set(run_ids(docs)[1:3])
    app = BatchesFailAfterTheFirst if fault.startswith("503") else None
    with om_up(app) as (om, url):
        if app is None:
            om.fail_events(lambda e: "no such table" if e["run"]["runId"] in refused else None)
        b = pod(tmp_path, "pod-b")
        run = flush(
            b, om_env(url, b, bucket.url, s3_endpoint, OPENLINEAGE__TRANSPORT__BATCH_SIZE="2")
        )
    assert run.returncode == 4, run.stderr[-3000:]
    delivered, kept = received(om), run_ids(bucket.events())
    assert tally(run_ids(docs), delivered, kept) == (0, 0)
    assert sorted(kept) == sorted(set(run_ids(docs)) - set(delivered))  # exactly the undelivered
    assert len(delivered) == (2 if app else 4)
    assert original not in bucket.names()
    assert not any(n.endswith(MARKER) for n in bucket.names())
    if app is None:  # refused for good: set aside, never flushed again
        assert set(kept) == refused
        assert all(n.endswith(".rejected.jsonl") for n in bucket.names())
    assert list(spool(b).glob("*.jsonl")) == []
    assert ours(run.stderr, f"NOT delivered, kept in {bucket.url}")  # where they are now
    assert "Traceback" not in run.stderr


# -- the bucket cannot be reached ----------------------------------------------------------


@pytest.mark.parametrize("fault", ["endpoint unreachable", "no such bucket"])
def test_an_unreachable_bucket_keeps_the_events_on_the_pod_with_one_line(
    tmp_path: Path, bucket: Bucket, s3_endpoint: str, fault: str
) -> None:
    """OpenMetadata and the bucket both out of reach: the events stay on the pod's disk, one
    line says so (what, where, what to do), no traceback; once the bucket is back, the pod's
    next flush puts them there."""
    a = pod(tmp_path, "pod-a")
    shutil.copytree(GOLDEN_ARTIFACTS, a / "target")
    if fault == "no such bucket":
        outbox, endpoint = f"s3://no-such-bucket/{bucket.prefix}", s3_endpoint
    else:
        outbox, endpoint = bucket.url, f"http://127.0.0.1:{free_port()}"
    run = run_in_process(
        ["emit", "--profiles-dir", "."], cwd=a, env=om_env(om_down(), a, outbox, endpoint)
    )
    assert run.returncode == 4, run.stderr[-3000:]
    built = built_of(run)
    (line,) = ours(run.stderr, "durable outbox")
    assert f"durable outbox {outbox} cannot be written" in line
    assert f"stay in {spool(a)}" in line
    assert "check the bucket" in line
    assert ours(run.stderr, f"NOT delivered, kept in {spool(a)}")  # still on this disk
    assert "Traceback" not in run.stderr
    assert KEYS["AWS_SECRET_ACCESS_KEY"] not in run.stderr
    local = [json.loads(x) for f in spool(a).glob("*.jsonl") for x in f.read_text().splitlines()]
    assert len(local) == built
    assert bucket.names() == []
    back = flush(a, om_env(om_down(), a, bucket.url, s3_endpoint))  # the bucket is back
    assert back.returncode == 4, back.stderr[-3000:]
    ids = [(e["run"]["runId"], e["eventType"]) for e in bucket.events()]
    assert (len(ids), len(set(ids))) == (built, built)
    assert list(spool(a).glob("*.jsonl")) == []


def test_a_missing_store_package_is_one_line_with_the_extra_to_install(tmp_path: Path) -> None:
    """gs:// without gcsfs (not in the test extra): exit 3 before anything runs, one line."""
    import importlib.util

    if importlib.util.find_spec("gcsfs") is not None:
        pytest.skip("gcsfs is installed here")
    b = pod(tmp_path, "pod-b")
    run = flush(b, {"DBT_OML_OUTBOX_DIR": "gs://pods/outbox"})
    assert run.returncode == 3
    assert "pip install 'dbt-oml[gs]'" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_credentials_in_the_url_are_refused_and_never_echoed(tmp_path: Path) -> None:
    b = pod(tmp_path, "pod-b")
    run = flush(b, {"DBT_OML_OUTBOX_DIR": "s3://AKIDPODS:s3cr3t-in-a-url@pods/outbox"})
    assert run.returncode == 3
    assert "carries no credentials" in run.stderr
    assert "s3cr3t-in-a-url" not in run.stderr


def test_an_object_not_named_by_dbt_oml_is_left_alone(
    tmp_path: Path, bucket: Bucket, s3_endpoint: str
) -> None:
    """Copied in by hand as `events.jsonl`: a flush could not tell when to remove it (it would be
    sent again by every flush), so it is left where it is, with a WARNING saying how to name it."""
    docs = events(2)
    bucket.write("events.jsonl", "".join(json.dumps(d) + "\n" for d in docs).encode())
    b = pod(tmp_path, "pod-b")
    with om_up() as (om, url):
        run = flush(b, om_env(url, b, bucket.url, s3_endpoint))
    assert run.returncode == 0, run.stderr[-3000:]
    assert received(om) == []
    assert bucket.names() == ["events.jsonl"]
    assert len(ours(run.stderr, "events.jsonl: not a name dbt-oml writes")) == 1
