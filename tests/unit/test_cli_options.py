"""What dbt-oml's own commands accept (issue 28 item 8): an option another command takes is
refused with exit 3 and one line naming the commands that take it, never ignored; and dbt's
profile errors whole: every target dbt lists, a profiles directory that does not exist."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dbt_oml.cli import ExitCode, main
from tests.conftest import PROJECT

RUNS_DBT = "the commands that run dbt (build, run, seed, snapshot, test, retry, clone)"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["emit", "--docs-generate"],
            f"dbt-oml emit: --docs-generate/--no-docs-generate is an option of {RUNS_DBT}, "
            "not of emit (see dbt-oml emit --help)",
        ),
        (
            ["send-events", "--explorer"],
            f"dbt-oml send-events: --explorer is an option of {RUNS_DBT}, not of emit "
            "(see dbt-oml send-events --help)",
        ),
        (
            ["emit", "--fail-on-emit-error"],  # emit exits 4 on a delivery failure anyway
            f"dbt-oml emit: --fail-on-emit-error is an option of {RUNS_DBT}, not of emit "
            "(see dbt-oml emit --help)",
        ),
        (
            ["replay", "x.jsonl", "--namespaces", "crm=mysql://c:1"],
            f"dbt-oml replay: --namespaces is an option of emit and {RUNS_DBT}, not of replay "
            "(see dbt-oml replay --help)",
        ),
        (
            ["flush", "--no-column-lineage"],
            f"dbt-oml flush: --column-lineage/--no-column-lineage is an option of emit and "
            f"{RUNS_DBT}, not of flush (see dbt-oml flush --help)",
        ),
        (
            ["flush", "--dbt-usage-stats"],
            f"dbt-oml flush: --dbt-usage-stats/--no-dbt-usage-stats is an option of {RUNS_DBT}, "
            "not of flush (see dbt-oml flush --help)",
        ),
        (
            # before the command: the group takes it for every command, this one would ignore it
            ["--no-docs-generate", "emit"],
            f"dbt-oml emit: --docs-generate/--no-docs-generate is an option of {RUNS_DBT}, "
            "not of emit (see dbt-oml emit --help)",
        ),
        (
            ["--job-naming", "unique_id", "flush"],
            f"dbt-oml flush: --job-naming is an option of emit and {RUNS_DBT}, not of flush "
            "(see dbt-oml flush --help)",
        ),
        (
            ["--dry-run", "lineage", "stg_orders"],
            f"dbt-oml lineage: --dry-run is an option of emit, replay, flush and {RUNS_DBT}, "
            "not of lineage (see dbt-oml lineage --help)",
        ),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_an_option_the_command_would_ignore_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    line: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _run(capsys, *args)
    assert code == ExitCode.USAGE
    assert err.strip().splitlines() == [line]


@pytest.mark.parametrize("command", ["emit", "replay", "flush"])
def test_help_lists_only_what_the_command_takes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == ExitCode.SUCCESS
    out = capsys.readouterr().out
    for flag in ("--docs-generate", "--explorer", "--fail-on-emit-error", "--dbt-usage-stats"):
        assert flag not in out
    assert "--dry-run" in out
    assert ("--namespaces" in out) is (command == "emit")


def test_the_commands_that_run_dbt_still_take_everything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dbt_oml.pipeline import live as pipeline

    given = []

    def build(settings, args, *, report, **_):
        given.append(settings)
        report.dbt_return_code = 0
        return report

    monkeypatch.setattr(pipeline, "build", build)
    assert main(["--no-docs-generate", "build", "--explorer", "--fail-on-emit-error"]) == 0
    assert (
        given[0].dbt.docs_generate,
        given[0].lineage.explorer,
        given[0].emit.fail_on_emit_error,
    ) == (
        False,
        True,
        True,
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "p"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("target", "*.duckdb", "logs"))
    monkeypatch.chdir(copy)
    monkeypatch.setenv("HOME", str(tmp_path))
    return copy


def test_dbt_s_profile_message_is_shown_whole(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(capsys, "send-events", "--profiles-dir", ".", "-t", "prod")
    assert code == ExitCode.USAGE
    assert err.strip().splitlines() == [
        f"dbt-oml send-events: config 'profile' ({project}): The profile 'jaffle_oml' does not "
        "have a target named 'prod'. The valid target names for this profile are: local, "
        "servers; pass --profiles-dir/--target as for dbt"
    ]


def test_a_profiles_dir_that_does_not_exist_is_named_so(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, err = _run(capsys, "emit", "--profiles-dir", "/nope")
    assert code == ExitCode.USAGE
    assert err.strip().splitlines() == [
        "dbt-oml emit: config 'profiles-dir' (/nope): the directory does not exist; "
        "pass --profiles-dir (or DBT_PROFILES_DIR) as for dbt"
    ]
    monkeypatch.setenv("DBT_PROFILES_DIR", str(project / "models"))
    code, err = _run(capsys, "emit")
    assert code == ExitCode.USAGE
    assert f"config 'profiles-dir' ({project / 'models'}): has no profiles.yml" in err


def test_dbt_message_keeps_every_problem() -> None:
    from dbt_oml.dbt.project import dbt_message

    text = "Runtime Error\n  first problem\n  second problem:\n   - a\n   - b\n"
    assert dbt_message(RuntimeError(text)) == "first problem\nsecond problem: a, b"
