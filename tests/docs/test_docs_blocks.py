"""Every command and code block of the README and docs/ runs as written (see tests/docs/runner.py for
how each kind of block is run), against the session's real broker."""

from __future__ import annotations

import itertools
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from streamlet.testing.local_broker import LocalKafkaBroker
from tests.docs.blocks import REPO, Block, pages, read_blocks
from tests.docs.runner import PageRun

# Sections that need a change of another branch of issue 24: (page, heading) -> why. The lead removes
# an entry once that branch is merged; nothing else is skipped.
NEEDS_ANOTHER_BRANCH: dict[tuple[str, str], str] = {}
_RUNNABLE = {"python", "sh", "console"}


def _all_blocks() -> dict[str, list[Block]]:
    return {str(path.relative_to(REPO)): read_blocks(path) for path in pages()}


def _skip_reason(block: Block) -> str | None:
    return next((NEEDS_ANOTHER_BRANCH[(block.page, title)] for _, title in block.headings
                 if (block.page, title) in NEEDS_ANOTHER_BRANCH), None)


def test_every_block_is_of_a_kind_the_test_runs() -> None:
    for block in itertools.chain(*_all_blocks().values()):
        assert block.lang in _RUNNABLE or block.lang.startswith("{"), f"{block.where}: a ```{block.lang} block"


def test_every_skipped_section_exists() -> None:
    titles = {(b.page, title) for b in itertools.chain(*_all_blocks().values()) for _, title in b.headings}
    assert set(NEEDS_ANOTHER_BRANCH) <= titles


@pytest.mark.broker
@pytest.mark.parametrize("page", [p for p, blocks in _all_blocks().items()
                                  if any(b.lang in _RUNNABLE for b in blocks)])
def test_the_blocks_of_a_page_run_as_written(page: str, kafka_broker: LocalKafkaBroker, tmp_path: Path,
                                             topology_test_driver: Any, monkeypatch: pytest.MonkeyPatch,
                                             free_tcp_port: int) -> None:
    everything = _all_blocks()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(work))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    counter = itertools.count()

    def fresh_dir() -> Path:
        path = tmp_path / f"tmp-{next(counter)}"
        path.mkdir()
        return path

    page_module = types.ModuleType("docs_page")  # what the page's blocks define, as a module
    monkeypatch.setitem(sys.modules, "docs_page", page_module)
    run = PageRun(work, kafka_broker.bootstrap_servers, f"127.0.0.1:{free_tcp_port}",
                  {"kafka_broker": kafka_broker, "tmp_path": fresh_dir, "topology_test_driver": topology_test_driver},
                  namespace=vars(page_module))
    for block in itertools.chain(*everything.values()):
        if block.file_name:
            (work / block.file_name).write_text(run.substitute(block.code))
    saved_files = {b.file_name[:-3] for b in itertools.chain(*everything.values()) if b.file_name}
    skipped: dict[str, str] = {}
    try:
        for block in everything[page]:
            if block.lang not in _RUNNABLE:
                continue
            run.enter(block)
            reason = _skip_reason(block)
            if reason is not None:
                skipped[block.where] = reason
                continue
            {"python": run.run_python, "sh": run.run_shell, "console": run.run_console}[block.lang](block)
    finally:
        run.finish()
        for name in saved_files:
            sys.modules.pop(name, None)
    if skipped:
        pytest.skip("every other block ran; not run: " + "; ".join(f"{w} ({r})" for w, r in skipped.items()))
