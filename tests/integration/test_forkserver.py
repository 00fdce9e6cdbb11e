"""The tests' fork server (tests/support/forkserver.py): a child is the command's own process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import _fork_server, clean_env
from tests.support.forkserver import ForkServer

pytestmark = pytest.mark.integration


@pytest.fixture
def server() -> ForkServer:
    found = _fork_server()
    if found is None:
        pytest.skip("TESTS_FRESH_PROCESSES=1: no fork server")
    return found


def _python(
    server: ForkServer, code: str, cwd: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    return server.run("python", ["-c", code], cwd=cwd, env=clean_env(env), timeout=60)


def test_a_child_has_the_commands_cwd_env_argv_and_streams(
    server: ForkServer, tmp_path: Path
) -> None:
    code = (
        "import os, sys\n"
        "print(os.getcwd(), sys.argv, sys.path[0], repr(sys.stdin.read()))\n"
        "print(sorted(os.environ))\n"
        "print('to stderr', file=sys.stderr)\n"
        "raise SystemExit(7)\n"
    )
    done = server.run("python", ["-c", code], cwd=tmp_path, env={"GIVEN": "y"}, timeout=60)
    assert done.returncode == 7
    assert done.stdout.splitlines() == [
        f"{tmp_path} ['-c', {code!r}] {tmp_path} ''",
        "['GIVEN']",
    ]
    assert done.stderr == "to stderr\n"


def test_a_child_leaves_through_the_interpreters_exit(server: ForkServer, tmp_path: Path) -> None:
    code = (
        "import atexit, threading, time\n"
        "atexit.register(print, 'atexit ran')\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread joined'))).start()\n"
    )
    done = _python(server, code, tmp_path)
    assert (done.returncode, done.stdout) == (0, "thread joined\natexit ran\n")


def test_an_exception_or_a_signal_is_the_exit_status(server: ForkServer, tmp_path: Path) -> None:
    raised = _python(server, "raise ValueError('boom')", tmp_path)
    assert raised.returncode == 1
    assert raised.stderr.strip().endswith("ValueError: boom")
    killed = _python(server, "import os, signal; os.kill(os.getpid(), signal.SIGTERM)", tmp_path)
    assert killed.returncode == -15


def test_a_child_past_its_timeout_is_killed_and_the_server_goes_on(
    server: ForkServer, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    with pytest.raises(subprocess.TimeoutExpired):
        server.run("python", ["-c", code], cwd=tmp_path, env=clean_env(), timeout=3)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
    assert _python(server, "print('next')", tmp_path).stdout == "next\n"


def test_the_server_imports_only_what_is_installed(server: ForkServer, tmp_path: Path) -> None:
    """No PYTHONPATH and not the tests' directory: dbt_oml comes from the install."""
    code = "import sys, dbt_oml; print(dbt_oml.__file__); print(sys.path)"
    done = _python(server, code, tmp_path)
    assert done.returncode == 0, done.stderr
    installed, path = done.stdout.splitlines()
    assert installed.endswith("dbt_oml/__init__.py")
    assert str(Path(__file__).resolve().parent.parent) not in path  # tests/ is not on it
    assert "PYTHONPATH" not in os.environ or os.environ["PYTHONPATH"] not in path
