"""Exit codes and messages of the CLI paths that do not run dbt (those are in integration/)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from dbt_oml.cli import ExitCode, main
from dbt_oml.cli.group import cli
from tests.conftest import PROJECT


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == ExitCode.SUCCESS
    out = capsys.readouterr().out
    for code in ("0, 1, 2", "3 ", "4 ", "5 "):
        assert code in out
    assert main([]) == ExitCode.USAGE


OWN_COMMANDS = ["emit", "send-events", "replay", "flush", "relay", "lineage", "impact"]


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli, info_name="dbt-oml")
    named = {name: cli.get_command(ctx, name) for name in OWN_COMMANDS}
    return {"dbt-oml": cli, "build": cli.get_command(ctx, "build"), **named}


def test_every_option_has_help_text_and_one_name() -> None:
    for name, command in _commands().items():
        names = [p.name for p in command.params]
        assert len(names) == len(set(names)), name
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.opts}"


@pytest.mark.parametrize("command", OWN_COMMANDS)
def test_each_command_has_its_own_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == ExitCode.SUCCESS
    out = capsys.readouterr().out
    assert out.startswith(f"Usage: dbt-oml {command} [OPTIONS]")
    own = _commands()[command]
    for param in own.params:
        if isinstance(param, click.Option):
            for flag in param.opts:
                assert flag in out, flag
    assert "Exit codes:" in out


def test_group_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-h"]) == ExitCode.SUCCESS
    out = capsys.readouterr().out
    for command in ("emit", "replay", "flush", "relay", "lineage", "impact", "build, run"):
        assert command in out
    assert main(["help"]) == ExitCode.SUCCESS
    assert capsys.readouterr().out == out


def _capture_build(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, list[str]]]:
    """Replace the live pipeline (not dbt) by one that records what it was given."""
    from dbt_oml.pipeline import live as pipeline

    calls: list[tuple[object, list[str]]] = []

    def build(settings, args, *, cwd, report, **_):
        calls.append((settings, list(args)))
        report.dbt_return_code = 0
        return report

    monkeypatch.setattr(pipeline, "build", build)
    return calls


def test_dbt_arguments_pass_through_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _capture_build(monkeypatch)
    line = ["build", "--dry-run", "-s", "tag:daily", "--vars", "{a: 1}", "--namespaces"]
    line += ["crm=mysql://c:1", "--target", "prod", "--full-refresh", "--threads=4"]
    assert main(line) == ExitCode.SUCCESS
    settings, args = calls[0]
    assert args == [
        "build",
        "-s",
        "tag:daily",
        "--vars",
        "{a: 1}",
        "--target",
        "prod",
        "--full-refresh",
        "--threads=4",
        "--no-send-anonymous-usage-stats",
    ]
    assert settings.emit.dry_run is True
    assert settings.namespace.namespaces == {"crm": "mysql://c:1"}


def test_options_before_the_command_and_dbts_own_usage_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _capture_build(monkeypatch)
    assert main(["--job-namespace", "prod", "run", "--send-anonymous-usage-stats"]) == 0
    settings, args = calls[0]
    assert args == ["run", "--send-anonymous-usage-stats"]
    assert settings.emit.job_namespace == "prod"
    assert main(["--dbt-usage-stats", "seed"]) == 0
    assert calls[1][1] == ["seed"]


def test_dbt_ol_flags_still_work(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _capture_build(monkeypatch)
    line = ["build", "--openlineage-dbt-job-name", "nightly", "--consume-structured-logs"]
    line += ["--namespace", "crm=mysql://c:1", "-s", "x"]
    assert main(line) == ExitCode.SUCCESS
    settings, args = calls[0]
    assert settings.emit.parent_job_name == "nightly"
    assert settings.namespace.namespaces == {"crm": "mysql://c:1"}
    assert args == ["build", "-s", "x", "--no-send-anonymous-usage-stats"]
    assert main(["build", "--parent-job-name", "mine"]) == 0
    assert calls[1][0].emit.parent_job_name == "mine"


def test_send_events_is_emit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["send-events", "--help"]) == ExitCode.SUCCESS
    out = capsys.readouterr().out
    assert "--project-dir" in out
    assert "existing artifacts" in out


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (["emti", "--profiles-dir", "."], "No such command 'emti'. Did you mean 'emit'?"),
        (["biuld"], "Did you mean 'build'?"),
        (["frobnicate", "--no-such-dbt-flag"], "No such command 'frobnicate'."),
    ],
)
def test_an_unknown_command_is_refused_with_the_closest_names(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    line: list[str],
    says: str,
) -> None:
    """Neither dbt-oml's nor the installed dbt's: one line, dbt not started (3)."""
    monkeypatch.chdir(tmp_path)
    assert main(line) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert says in err
    assert len(err.strip().splitlines()) == 1


def test_a_command_only_the_installed_dbt_knows_goes_to_dbt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    # `list` is not in dbt-oml's table (`ls` is): dbt's own usage error answers, dbt's exit 2
    assert main(["list", "--no-such-dbt-flag"]) == ExitCode.DBT_ERROR
    assert "No such option" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("setup", "line", "key"),
    [
        ({"file": "relay: {batch: -1}\n"}, ["relay", "--once"], "relay.batch"),
        ({"file": "relay: {batch: 2.5}\n"}, ["relay"], "relay.batch"),
        ({"file": "relay: {ack_wait: .nan}\n"}, ["relay"], "relay.ack_wait"),
        ({"file": "relay: {fetch_timeout: true}\n"}, ["relay"], "relay.fetch_timeout"),
        ({"file": "relay: {durable: 'a b'}\n"}, ["relay"], "relay.durable"),
        ({"env": {"DBT_OML_RELAY_ACK_WAIT": "soon"}}, ["relay"], "relay.ack_wait"),
        ({}, ["relay", "--batch", "0"], "relay.batch"),
        ({}, ["relay", "--dead-letter-subject", "a.*"], "relay.dead_letter_subject"),
    ],
    ids=["negative", "fraction", "nan", "bool", "durable", "env", "flag", "subject"],
)
def test_a_bad_relay_setting_is_exit_3_before_anything_connects(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: dict,
    line: list[str],
    key: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    if "file" in setup:
        (tmp_path / "dbt-oml.yml").write_text(setup["file"])
    for var, value in setup.get("env", {}).items():
        monkeypatch.setenv(var, value)
    assert main(line) == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("dbt-oml relay: ")
    assert f"'{key}'" in err[0]


def test_bad_config_is_one_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--job-naming", "nope", "build"]) == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "job_naming" in err[0]
    assert "Traceback" not in err[0]


def test_missing_option_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--namespace"]) == ExitCode.USAGE
    assert "--namespace" in capsys.readouterr().err


def _emit(
    tmp_path: Path,
    target: Path,
    *extra: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> subprocess.CompletedProcess[str]:
    """`dbt-oml emit` in this process (it runs no dbt command; test_emit_bad_profile_dir below
    is the same kind of error through a real process)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    args = ["emit", "--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT)]
    code = main([*args, "--target-path", str(target), *extra])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda t: (t / "run_results.json").unlink(), "run_results.json: not found"),
        (
            lambda t: (t / "manifest.json").write_text("{not json"),
            "manifest.json: is not valid JSON",
        ),
        (
            lambda t: (t / "manifest.json").write_text(
                json.dumps(
                    {
                        "metadata": {
                            "dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v99.json"
                        }
                    }
                )
            ),
            "manifest schema v99 is not supported",
        ),
        (
            lambda t: (t / "manifest.json").write_text("[" * 100_000),
            "manifest.json: is not valid JSON (nested too deep)",
        ),
        (
            lambda t: (t / "run_results.json").write_text("[" * 100_000),
            "run_results.json: is not valid JSON (nested too deep)",
        ),
    ],
    ids=["missing", "corrupt", "version", "deep-manifest", "deep-run-results"],
)
def test_emit_bad_artifacts(
    tmp_path: Path,
    mini_target: Path,
    damage,
    expected: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    damage(mini_target)
    proc = _emit(tmp_path, mini_target, monkeypatch=monkeypatch, capsys=capsys)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]
    assert str(mini_target) in lines[0]
    assert "Traceback" not in proc.stderr


def test_emit_with_a_catalog_nested_too_deep_warns_and_sends(
    tmp_path: Path,
    mini_target: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """catalog.json is optional: nested 100,000 deep it is one WARNING, and the events go out."""
    (mini_target / "catalog.json").write_text("[" * 100_000)
    proc = _emit(tmp_path, mini_target, monkeypatch=monkeypatch, capsys=capsys)
    assert proc.returncode == ExitCode.SUCCESS, proc.stderr
    warning = f"WARNING: {mini_target / 'catalog.json'}: is not valid JSON (nested too deep)"
    assert proc.stderr.count(warning) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_emit_dry_run_prints_one_json_document(
    tmp_path: Path,
    mini_target: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    proc = _emit(tmp_path, mini_target, "--dry-run", monkeypatch=monkeypatch, capsys=capsys)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["events"]) > 10
    assert not (mini_target / "openlineage").exists()


def test_emit_bad_profile_dir(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "dbt_oml", "emit", "--project-dir", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == ExitCode.USAGE
    assert "has no dbt_project.yml" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_replay_needs_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay"]) == ExitCode.USAGE
    assert "needs outbox FILE" in capsys.readouterr().err


def test_lineage_of_the_mini_fixture(
    tmp_path: Path, mini_target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = ["lineage", "--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT)]
    line += ["--target-path", str(mini_target), "--json"]
    # the whole project rests on core_open_balances too, which the mini run skipped (no
    # compiled SQL): the document (its node says why it is opaque) and a WARNING
    assert main(line) == ExitCode.SUCCESS
    out, err = capsys.readouterr()
    assert "this answer rests on 1 model(s) without compiled SQL in the artifacts" in err
    doc = json.loads(out)
    assert doc["graph"]["nodes"], doc.keys()
    assert main([*line[:-1], "no_such_model"]) == ExitCode.USAGE
    assert "no_such_model" in capsys.readouterr().err


class _BoomError(RuntimeError):
    pass


def _crashing_build(dbt_code: int):
    def build(settings, args, *, cwd, report, **_):
        report.dbt_return_code = dbt_code
        raise _BoomError("a dbt-oml bug")

    return build


@pytest.mark.parametrize(
    ("dbt_code", "flags", "expected"),
    [(0, [], 0), (1, [], 1), (0, ["--fail-on-emit-error"], 5), (1, ["--fail-on-emit-error"], 1)],
)
def test_a_bug_after_dbt_ran_does_not_hide_dbts_code(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    dbt_code: int,
    flags: list[str],
    expected: int,
) -> None:
    from dbt_oml.pipeline import live as pipeline

    monkeypatch.setattr(pipeline, "build", _crashing_build(dbt_code))
    assert main([*flags, "build"]) == expected
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "_BoomError: a dbt-oml bug" in err
    assert "internal error" in err


def test_a_bug_before_dbt_ran_is_exit_5(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dbt_oml.pipeline import live as pipeline

    def build(settings, args, *, cwd, report, **_):
        raise _BoomError("early")

    monkeypatch.setattr(pipeline, "build", build)
    assert main(["build"]) == ExitCode.BUG
