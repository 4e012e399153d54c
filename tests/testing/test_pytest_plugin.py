"""The pytest plugin reaches users' tests by installing streamlet: no conftest, no -p option."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

USER_TEST = '''
from streamlet import Serdes, StreamsBuilder

def test_uses_the_driver_fixture(topology_test_driver):
    builder = StreamsBuilder()
    builder.stream("in").map_values(str.upper).to("out")
    driver = topology_test_driver(builder.build(), {"application.id": "user",
                                                    "default.key.serde": "String", "default.value.serde": "String"})
    driver.create_input_topic("in").pipe_input("k", "hello")
    assert driver.create_output_topic("out").read_value() == "HELLO"
'''


def test_the_plugin_is_an_installed_entry_point() -> None:
    found = [ep for ep in entry_points(group="pytest11") if ep.name == "streamlet"]
    assert [ep.value for ep in found] == ["streamlet.testing.pytest_plugin"]


def test_a_users_test_gets_the_fixtures_without_a_conftest(tmp_path: Path) -> None:
    (tmp_path / "test_user_topology.py").write_text(USER_TEST)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout


# -- async tests ---------------------------------------------------------------------------------------

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner pytest imports the plugin of this checkout (not of wherever streamlet is installed)."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))

ASYNC_DRIVER_TEST = "import asyncio\n" + USER_TEST.replace(
    "def test_uses_the_driver_fixture(topology_test_driver):\n",
    "async def test_async_with_the_driver(topology_test_driver):\n    await asyncio.sleep(0)  # a running loop\n")


def test_an_async_test_using_the_fixtures_runs_on_asyncio(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=ASYNC_DRIVER_TEST)
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_async_with_the_driver?asyncio? PASSED*"])


def test_async_tests_without_the_fixtures_are_left_to_the_project(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user='''
async def test_no_streamlet_fixture(tmp_path):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)  # pytest's own verdict: no async plugin runs it
    result.stdout.fnmatch_lines(["*async def functions are not natively supported*"])


def test_a_projects_own_marks_and_backend_are_kept(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('''
import pytest

@pytest.fixture
def anyio_backend():
    return ("asyncio", {"debug": True})
''')
    pytester.makepyfile(test_user='''
import asyncio
import pytest

async def test_unmarked_uses_the_projects_backend(topology_test_driver):
    assert asyncio.get_running_loop().get_debug()

@pytest.mark.anyio
async def test_marked_runs_once(topology_test_driver):
    assert asyncio.get_running_loop().get_debug()
''')
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_unmarked_uses_the_projects_backend PASSED*",
                                 "*test_marked_runs_once PASSED*"])
