"""The OM stand-in itself, rule by rule against docs/reference/openmetadata-api.md ("ref §n"): dataset resolution and edges (§2).

If one of these fails, the stand-in no longer answers like OM: fix the stand-in, not the test.
"""

from __future__ import annotations

import pytest

from tests.support.om_fake_support import (
    DST,
    NS,
    RUN_ID,
    SRC,
    column_facet,
    dataset,
    edge,
    event,
    om,
    post,
    seed_table,
)

# -- §2: resolution ------------------------------------------------------------------------------


def test_1_12_ignores_the_database_segment_2_0_uses_it() -> None:
    """ref §2.2: 1.12 uses the last two segments; 2.0 tries `%<db>.<schema>.<table>` first."""
    for version, expected in (("1.12", "a.one.sales.orders"), ("2.0", "b.two.sales.orders")):
        fake = om(version)
        seed_table(fake, "a.one.sales.orders")
        seed_table(fake, "b.two.sales.orders")
        post(fake, [event(inputs=[dataset("two.sales.orders")])])
        assert edge(fake, expected, DST) is not None, version
        assert len(fake.edges) == 1


def test_symlinks_1_12_first_only_2_0_all_then_name() -> None:
    """ref §2.2: 1.12 takes symlinks[0] (else name); 2.0 every symlink, then the name."""
    links = {
        "identifiers": [
            {"namespace": NS, "name": "nope.nope", "type": "TABLE"},
            {"namespace": NS, "name": "shop.sales.orders", "type": "TABLE"},
        ]
    }
    source = dataset("whatever.x", symlinks=links)
    old, new = om("1.12"), om("2.0")
    assert post(old, [event(inputs=[source])]).json()["summary"]["skipped"] == 1
    assert post(new, [event(inputs=[source])]).json()["lineageEdgesCreated"] == 1


def test_mapping_lookup_per_version() -> None:
    """ref §2.4: 1.12 also matches a key that starts with the namespace; 2.0 only prefixes."""
    for version, expected in (("1.12", "b.shop.sales.orders"), ("2.0", "a.shop.sales.orders")):
        fake = om(version)
        seed_table(fake, "a.shop.sales.orders")
        seed_table(fake, "b.shop.sales.orders")
        fake.settings["namespaceToServiceMapping"] = {"mssql://src:1433/crm": "b"}
        post(fake, [event(inputs=[dataset("shop.sales.orders", "mssql://src:1433")])])
        assert edge(fake, expected, DST) is not None, version


def test_first_mapping_entry_in_insertion_order_wins() -> None:
    """ref §2.4: exact key first, else the first matching entry in map order."""
    fake = om()
    seed_table(fake, "a.shop.sales.orders")
    seed_table(fake, "b.shop.sales.orders")
    fake.settings["namespaceToServiceMapping"] = {"mssql://": "b", "mssql://src": "a"}
    post(fake, [event(inputs=[dataset("shop.sales.orders", "mssql://src:1433")])])
    assert edge(fake, "b.shop.sales.orders", DST) is not None
    fake.settings["namespaceToServiceMapping"] = {"mssql://": "b", "mssql://src:1433": "a"}
    post(fake, [event(inputs=[dataset("shop.sales.orders", "mssql://src:1433")])])
    assert edge(fake, "a.shop.sales.orders", DST) is not None


def test_1_12_mapped_namespace_does_not_fall_back() -> None:
    """ref §2.2: 1.12 only looks under the mapped service; 2.0 goes on to the suffix lookups."""
    for version, resolved in (("1.12", False), ("2.0", True)):
        fake = om(version)
        fake.seed("databaseService", {"name": "empty", "serviceType": "CustomDatabase"})
        fake.settings["namespaceToServiceMapping"] = {NS: "empty"}
        body = post(fake, [event()]).json()
        assert (body["lineageEdgesCreated"] == 1) is resolved, version


def test_datasource_facet_names_the_service() -> None:
    """ref §2.2: the `datasource` facet's `name` selects the service (1.12 step 4)."""
    fake = om("1.12")
    seed_table(fake, "a.x.sales.orders")
    seed_table(fake, "z.y.sales.orders")
    source = dataset("sales.orders", datasource={"name": "z", "uri": "postgres://z:5432"})
    post(fake, [event(inputs=[source])])
    assert edge(fake, "z.y.sales.orders", DST) is not None


def test_fqn_comparisons_are_case_sensitive() -> None:
    """ref §2.2, §2.4: a mapping to CRM_INGESTED does not find service crm_ingested."""
    old = om("1.12")
    seed_table(old, "crm_ingested.crm.sales.customers")
    old.settings["namespaceToServiceMapping"] = {"mssql://src": "CRM_INGESTED"}
    source = dataset("crm.sales.customers", "mssql://src")
    assert post(old, [event(inputs=[source])]).json()["summary"]["skipped"] == 1
    new = om("2.0")
    seed_table(new, "abc.crm.sales.customers")  # FQN order: first for the suffix lookups
    seed_table(new, "crm_ingested.crm.sales.customers")
    new.settings["namespaceToServiceMapping"] = {"mssql://src": "CRM_INGESTED"}
    post(new, [event(inputs=[source])])
    assert edge(new, "abc.crm.sales.customers", DST) is not None
    lower = dataset("crm.sales.CUSTOMERS", "mssql://src")
    assert post(new, [event(inputs=[lower])]).json()["summary"]["skipped"] == 1


@pytest.mark.parametrize(
    ("name", "resolved"),
    [
        ("table/sales/orders", True),  # Glue
        ("/warehouse/sales.db/orders", True),  # Hive warehouse path
        ("shop/sales/orders", True),  # short slash form
        ("orders", False),  # a bare token gives no candidate (issue #31893)
        ("a/b/c/d", False),
    ],
)
def test_2_0_name_normaliser(name: str, resolved: bool) -> None:
    """ref §2.2 "With the name normaliser"."""
    body = post(om("2.0"), [event(inputs=[dataset(name)])]).json()
    assert (body["lineageEdgesCreated"] == 1) is resolved


@pytest.mark.parametrize(
    "namespace", ["s3://lake", "gs://lake", "abfss://c@a", "file", "file://host"]
)
def test_storage_and_file_namespaces_never_resolve_to_tables(namespace: str) -> None:
    """ref §2.3: storage datasets are containers (not resolved here), never tables."""
    body = post(om(), [event(inputs=[dataset("shop.sales.orders", namespace)])]).json()
    assert body["summary"]["skipped"] == 1


def test_suffix_lookup_has_no_dot_before_the_schema() -> None:
    """ref §2.2: `%<schema>.<table>` also matches `x<schema>.<table>`, first in FQN order."""
    fake = om("1.12")
    seed_table(fake, "a.db.xsales.orders")
    post(fake, [event(inputs=[dataset("sales.orders")])])
    assert edge(fake, "a.db.xsales.orders", DST) is not None


# -- §2.5, §2.6, §2.8: edges ------------------------------------------------------------------


def test_column_lineage_location_per_version() -> None:
    """ref §2.5: 1.12 reads only outputFacets.columnLineage; 2.0 also dataset facets."""
    facet = column_facet(("total", "amount"))
    in_facets = dataset("shop.marts.revenue", columnLineage=facet)
    in_output_facets = {**dataset("shop.marts.revenue"), "outputFacets": {"columnLineage": facet}}
    expected = [
        {
            "fromColumns": [f"{SRC}.amount"],
            "toColumn": f"{DST}.total",
            "function": "from amount",
        }
    ]
    for version, output, columns in (
        ("1.12", in_facets, None),
        ("2.0", in_facets, expected),
        ("1.12", in_output_facets, expected),
    ):
        fake = om(version)
        post(fake, [event(outputs=[output])])
        details = edge(fake)
        assert details is not None
        assert details["columnsLineage"] == columns, version


def test_column_lineage_is_filtered_by_the_server_and_the_edge_stays() -> None:
    """ref §2.5: unknown to/from columns and unmatched inputFields are dropped; edge written."""
    facet = column_facet(("total", "AMOUNT"), ("nope", "amount"), ("id", "id"))
    facet["fields"]["id"]["inputFields"].append(
        {"namespace": NS, "name": "shop.sales.elsewhere", "field": "id"}
    )
    fake = om()
    post(fake, [event(outputs=[dataset("shop.marts.revenue", columnLineage=facet)])])
    details = edge(fake)
    assert details is not None
    assert details["columnsLineage"] == [
        {"fromColumns": [f"{SRC}.id"], "toColumn": f"{DST}.id", "function": "from id"}
    ]
    none_left = column_facet(("nope", "amount"))
    post(fake, [event(outputs=[dataset("shop.marts.revenue", columnLineage=none_left)])])
    assert edge(fake)["columnsLineage"] is None  # type: ignore[index]


def test_each_post_replaces_the_whole_details() -> None:
    """ref §2.8: one edge per (from, to); the latest post's details win entirely."""
    fake = om()
    fake.seed("pipelineService", {"name": "openlineage", "serviceType": "CustomPipeline"})
    fake.seed("pipeline", {"name": "dbt-shop", "service": "openlineage"})
    first = event(
        outputs=[dataset("shop.marts.revenue", columnLineage=column_facet(("id", "id")))],
        job={"namespace": "dbt", "name": "shop", "facets": {"sql": {"query": "select 1"}}},
    )
    post(fake, [first])
    before = edge(fake)
    assert before is not None
    assert before["pipeline"]["fullyQualifiedName"] == "openlineage.dbt-shop"
    assert (before["sqlQuery"], before["source"], before["updatedBy"]) == (
        "select 1",
        "OpenLineage",
        "ingestion-bot",
    )
    post(fake, [event(job={"namespace": "other", "name": "job"})])
    after = edge(fake)
    assert after is not None
    assert (after["pipeline"], after["sqlQuery"], after["columnsLineage"]) == (None, None, None)
    assert (
        after["description"] == f"Lineage from OpenLineage event for job: other/job (run: {RUN_ID})"
    )
    assert len(fake.edges) == 1


def test_pipeline_lookup_per_version() -> None:
    """ref §2.6: parent job first; `<service>.<ns>-<name>`; 2.0 also `<ns>.<name>`."""
    for version, found in (("1.12", False), ("2.0", True)):
        fake = om(version)
        fake.seed("pipelineService", {"name": "airflow", "serviceType": "CustomPipeline"})
        fake.seed("pipeline", {"name": "dag", "service": "airflow"})
        parent = {
            "parent": {"job": {"namespace": "airflow", "name": "dag"}, "run": {"runId": RUN_ID}}
        }
        post(fake, [event(run={"runId": RUN_ID, "facets": parent})])
        details = edge(fake)
        assert details is not None
        assert (details["pipeline"] is not None) is found, version
