"""The house rules of docs/development.md ("Architecture"), checked on the source.

import-linter (in `make test`) checks the layers; these check what it cannot: no import circle
between any two modules, modules within a soft size budget, no function over 60.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "dbt_oml"
#: A module holds one concern; past this it usually holds two. A module that is one concern and
#: still longer is listed in LONGER_BY_CONCERN with why (a soft budget, not a cut by length).
MODULE_BUDGET = 500
LONGER_BY_CONCERN: dict[str, str] = {}
MAX_FUNCTION_LINES = 60


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def test_modules_keep_to_the_size_budget_or_say_why() -> None:
    long = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in _sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MODULE_BUDGET
    }
    assert {m: n for m, n in long.items() if m not in LONGER_BY_CONCERN} == {}
    assert set(LONGER_BY_CONCERN) <= set(long), "listed, but back within the budget"


def test_no_function_is_over_60_lines() -> None:
    long = {}
    for path in _sources():
        for fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            first = fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno
            lines = (fn.end_lineno or fn.lineno) - first + 1
            if lines > MAX_FUNCTION_LINES:
                long[f"{path.relative_to(PACKAGE.parent)}:{fn.lineno} {fn.name}"] = lines
    assert long == {}


def _cycle_from(graph: grimp.ImportGraph, start: str) -> list[str] | None:
    """The shortest import chain from `start` back to itself, if there is one."""
    for imported in sorted(graph.find_modules_directly_imported_by(start)):
        chain = graph.find_shortest_chain(importer=imported, imported=start)
        if chain is not None:
            return [start, *chain]
    return None


def test_no_import_circle() -> None:
    graph = grimp.build_graph("dbt_oml", exclude_type_checking_imports=False)
    circles = {
        " -> ".join(cycle)
        for module in sorted(graph.modules)
        if (cycle := _cycle_from(graph, module)) is not None
    }
    assert circles == set()


@pytest.mark.parametrize("package", sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py")))
def test_every_package_says_what_it_is_and_what_it_must_not_import(package: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text()))
    assert doc is not None
    assert "import" in doc, f"dbt_oml/{package}/__init__.py: say what it must not import"


def test_tests_share_code_through_tests_support_only() -> None:
    """No module under tests/ imports a test module: what tests share lives in tests/support/."""
    tests = PACKAGE.parent / "tests"
    offenders = []
    for path in tests.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[0] == "tests" and any(p.startswith("test_") for p in parts):
                    offenders.append(f"{path.relative_to(tests)}: from {node.module}")
    assert offenders == []
