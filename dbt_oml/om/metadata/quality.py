"""dbt tests as OpenMetadata test cases, with one result per test per run (ref §9.6, §9.7).

I/O adapter (through om.metadata.session). Per test of an owned table: one test definition per dbt
test type and entity type (`not_null`, `unique_table` for a table-level use; a singular test
is its own type), `testPlatforms: ["dbt"]`, created when missing and never changed; one test case
named after the dbt test, linked to its column when it has one (OM then files it in the table's
basic suite); one result at the test's own time from run_results, Success / Failed / Aborted as
OM's dbt ingestion maps dbt's status, with dbt's message and failure count. A result OM already
holds (the case's newest one, or a 409 for its timestamp) is done, so re-sending a run adds
nothing and a new run adds one point per test.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import quote as url_quote

from dbt_oml.om.bootstrap import Bootstrap
from dbt_oml.om.metadata.docs import DbtTestDoc
from dbt_oml.om.metadata.session import Session
from dbt_oml.om.names import quote

#: dbt status -> OM testCaseStatus, as OM's dbt ingestion maps them; anything else: Aborted.
STATUS: Final = {
    "success": "Success",
    "pass": "Success",
    "fail": "Failed",
    "failure": "Failed",
    "error": "Failed",
}
CASE_FIELDS = "testDefinition,testCaseResult"
#: Characters an entity link cannot hold in a column name (OM then links the table).
_UNLINKABLE = set(":<>|")


def definition_name(test: DbtTestDoc, column: str | None) -> str:
    """One definition per dbt test type and entity type (OM 2.0's dbt naming, ref §9.6).

    >>> from dbt_oml.om.metadata.docs import DbtTestDoc
    >>> t = DbtTestDoc(unique_id="t", name="unique_o_id", type="unique", generic=True,
    ...                status="pass", timestamp=0, namespace="n", dataset="d")
    >>> definition_name(t, "id"), definition_name(t, None)
    ('unique', 'unique_table')
    """
    if not test.generic:
        return test.type
    return test.type if column else f"{test.type}_table"


def result_body(test: DbtTestDoc) -> dict[str, Any]:
    """The CreateTestCaseResult of one test run.

    >>> from dbt_oml.om.metadata.docs import DbtTestDoc
    >>> t = DbtTestDoc(unique_id="t", name="n", type="unique", generic=True, status="fail",
    ...                timestamp=1796102637820, namespace="n", dataset="d", failures=3,
    ...                message="Got 3 results, configured to fail if != 0")
    >>> body = result_body(t)
    >>> body["testCaseStatus"], body["failedRows"], body["result"][:6]
    ('Failed', 3, 'Got 3 ')
    """
    status = STATUS.get(test.status, "Aborted")
    body: dict[str, Any] = {
        "timestamp": test.timestamp,
        "testCaseStatus": status,
        "testResultValue": (
            [{"name": "failures", "value": str(test.failures)}] if test.failures is not None else []
        ),
    }
    if test.failures is not None:
        body["failedRows"] = test.failures
    if status != "Success":
        body["result"] = test.message or f"dbt status: {test.status or 'unknown'}"
    return body


class DataQuality:
    """Definitions, cases and results of one transport (each looked up once)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._definitions: dict[str, dict[str, Any] | None] = {}
        self._cases: dict[str, dict[str, Any] | None] = {}

    def apply(
        self, tests: Iterable[DbtTestDoc], bootstrap: Bootstrap, *, skipped: set[str]
    ) -> None:
        """A case and a result for each test of an owned table; the rest is `skipped`."""
        for test in sorted(tests, key=lambda t: (t.timestamp, t.unique_id)):
            found = self.session.call(
                "tests",
                lambda t=test: bootstrap.owned_table(t.namespace, t.dataset),  # type: ignore[misc]
            )
            if found is None:
                skipped.add(f"{test.namespace}/{test.dataset}")
                continue
            table_fqn, table = found
            column = _column(table, test.column)
            definition = self._definition(test, column)
            if definition is None:
                continue
            case_fqn = ".".join([table_fqn, *([quote(column)] if column else []), quote(test.name)])
            case = self._case(test, case_fqn, table_fqn, column, definition)
            if case is not None:
                self._result(test, case_fqn, case)

    def _definition(self, test: DbtTestDoc, column: str | None) -> dict[str, Any] | None:
        name = definition_name(test, column)
        if name not in self._definitions:
            found = self.session.read("tests", "dataQuality/testDefinitions", quote(name))
            if found is None:
                body: dict[str, Any] = {
                    "name": name,
                    "description": f"dbt test `{test.type}`"
                    if test.generic
                    else (test.description or f"dbt singular test {test.name}"),
                    "entityType": "COLUMN" if column else "TABLE",
                    "testPlatforms": ["dbt"],
                }
                if test.generic:
                    body["parameterDefinition"] = [
                        {"name": test.type, "displayName": test.type, "required": False}
                    ]
                reply = self.session.write(
                    "tests", "PUT", "dataQuality/testDefinitions", body, name
                )
                found = body if reply is None else reply.body if reply.ok else None
            self._definitions[name] = found
        return self._definitions[name]

    def _case(
        self,
        test: DbtTestDoc,
        case_fqn: str,
        table_fqn: str,
        column: str | None,
        definition: dict[str, Any],
    ) -> dict[str, Any] | None:
        if case_fqn not in self._cases:
            found = self.session.read(
                "tests", "dataQuality/testCases", case_fqn, fields=CASE_FIELDS
            )
            if found is None:
                link = f"<#E::table::{table_fqn}" + (f"::columns::{column}>" if column else ">")
                defined = {p.get("name") for p in definition.get("parameterDefinition") or []}
                body: dict[str, Any] = {
                    "name": test.name,
                    "testDefinition": definition.get("fullyQualifiedName") or definition["name"],
                    "entityLink": link,
                    "parameterValues": (
                        [{"name": test.type, "value": _params(test)}]
                        if test.type in defined
                        else []
                    ),
                }
                if test.description:
                    body["description"] = test.description
                reply = self.session.write("tests", "PUT", "dataQuality/testCases", body, case_fqn)
                if reply is not None and not reply.ok:
                    self._cases[case_fqn] = None
                    return None
                self.session.counts.test_cases += 1
                found = body if reply is None else dict(reply.body or {})
            self._cases[case_fqn] = found
        return self._cases[case_fqn]

    def _result(self, test: DbtTestDoc, case_fqn: str, case: dict[str, Any]) -> None:
        newest = (case.get("testCaseResult") or {}).get("timestamp")
        if newest == test.timestamp:
            return  # OM has this run's result
        path = f"dataQuality/testCases/testCaseResults/{url_quote(case_fqn, safe='')}"
        body = result_body(test)
        what = f"{case_fqn} {body['testCaseStatus']} at {test.timestamp}"
        reply = self.session.write("tests", "POST", path, body, what)
        if reply is None or reply.ok:
            self.session.counts.results += reply is not None
            if newest is None or test.timestamp > newest:
                case["testCaseResult"] = {"timestamp": test.timestamp}
        # 409: OM has a result at this time already (this run, sent before): done


def _column(table: dict[str, Any], name: str | None) -> str | None:
    """The column as OM spells it (exact, else case-insensitive), if it can be linked."""
    if not name or _UNLINKABLE & set(name):
        return None
    names = [str(c.get("name")) for c in table.get("columns") or []]
    if name in names:
        return name
    return next((n for n in names if n.lower() == name.lower()), None)


def _params(test: DbtTestDoc) -> str:
    """dbt's arguments as one text (OM's dbt ingestion joins the values; names help here).

    >>> from dbt_oml.om.metadata.docs import DbtTestDoc
    >>> _params(DbtTestDoc(unique_id="t", name="n", type="accepted_values", generic=True,
    ...     status="pass", timestamp=0, namespace="n", dataset="d",
    ...     params={"column_name": "s", "values": '["a", "b"]'}))
    'column_name=s, values=["a", "b"]'
    """
    return ", ".join(f"{k}={v}" for k, v in sorted(test.params.items()))
