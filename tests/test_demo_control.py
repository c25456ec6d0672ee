"""`git lanes demo` shows the wall: a blocked call, a budget running out, and a resume briefing."""

from __future__ import annotations

import pytest
from conftest import run_cli


@pytest.mark.slow
def test_the_demo_plays_the_control_plane_scene(tmp_path):
    result = run_cli("demo", "--directory", str(tmp_path / "demo"), "--json", cwd=tmp_path, timeout=600)
    assert result.code == 0, result.err
    scene = result.json["scenes"]["control"]
    assert scene["blocked"] >= 3 and scene["briefed_in_flight"]
    text = run_cli("demo", cwd=tmp_path, timeout=600).out
    assert "DENY" in text and "step budget of phase plan is spent" in text and "git-lanes briefing" in text
