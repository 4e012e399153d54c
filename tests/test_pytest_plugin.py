"""The pytest plugin reaches users' tests by installing streamlet: no conftest, no -p option."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

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
