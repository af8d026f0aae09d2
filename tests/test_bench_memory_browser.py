"""`python -m bench.memory_browser` on a store smaller than the rows it is asked to scroll: the
scroll ends on the last row instead of pressing PageDown for an hour."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import memory_browser


def test_scroll_ends_on_the_last_row_of_a_small_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    points = memory_browser.MIN_POINTS
    args = ["--points", str(points), "--rows", str(points * 5), "--opens", "1", "--json", "-"]
    code = memory_browser.main([*args, "--tmpdir", str(tmp_path)])
    assert code == 0
    scroll = json.loads(capsys.readouterr().out)["scroll"]
    assert scroll["rows_scrolled"] == points - 1
    assert scroll["rows_loaded"] == points
    assert scroll["stalls"] == 1


def test_too_small_a_store_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        memory_browser.main(["--points", "10"])
    assert stopped.value.code == 2
    assert "--points must be at least" in capsys.readouterr().err
