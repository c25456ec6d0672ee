"""`git lanes dispatch PLAN --spawn` with the fake agent CLI: the foundation's pipeline first, then the
features' in parallel from the foundation's accepted head, never more than `[agent] max_parallel` agents at once."""

from __future__ import annotations

from conftest import git, run_cli
from spawn_helpers import PATIENCE, finished, journal, most_at_once, show, use_fake_agent, wait_for

FEATURES = ("f1", "f2", "f3", "f4")
PLAN = 'name = "five"\nticket = "Five parts"\nlane_prefix = "five"\n\n[foundation]\ntitle = "Shared base"\n' \
       'owns = ["src/foundation.py"]\n' + "".join(
           f'\n[[feature]]\nname = "{f}"\ntitle = "Part {f}"\nowns = ["src/{f}.py"]\n' for f in FEATURES)


def test_dispatch_spawn_runs_the_foundation_then_the_features_in_parallel_within_max_parallel(repo, tmp_path):
    together = tmp_path / "together"
    write = {"write": "src/{lane_leaf}.py", "content": "done\n"}
    path = use_fake_agent(repo, tmp_path, {
        "plan": [{"read": "README.md"}],
        "execute@foundation": [write],
        # the first two features wait for each other: two ran at once, not one after the other
        "execute": [{"rendezvous": {"file": str(together), "count": 2, "timeout": PATIENCE}}, write]},
        max_parallel=2)
    (tmp_path / "five.toml").write_text(PLAN)
    dispatched = run_cli("dispatch", str(tmp_path / "five.toml"), "--spawn", "--json", cwd=repo, timeout=PATIENCE)
    assert dispatched.code == 0, dispatched.err
    spawned = dispatched.json["spawned"]
    assert [s["key"] for s in spawned] == ["foundation"] and spawned[0]["lane"] == "five/foundation"
    foundation = spawned[0]["run"]
    wait_for(lambda: finished(repo, foundation), "the foundation's pipeline to finish")
    followed = show(repo, foundation)["pipeline"]["ship"]["followed"]
    assert sorted(f["lane"] for f in followed) == [f"five/{f}" for f in FEATURES], followed
    runs = [f["run"] for f in followed]
    wait_for(lambda: all(finished(repo, run) for run in runs), "the features' pipelines to finish", PATIENCE * 2)
    assert all(show(repo, run)["status"] == "ended" for run in runs)
    status = run_cli("dispatch", "status", "five", "--json", cwd=repo).json
    assert status["done"] == status["total"] == 5
    # every feature started from the foundation's accepted head, and did its own part
    for feature in FEATURES:
        lane = f"refs/lanes/heads/five/{feature}"
        assert git("show", f"{lane}:src/foundation.py", cwd=repo) == "done\n"
        assert git("show", f"{lane}:src/{feature}.py", cwd=repo) == "done\n"
    # no feature's agent started before the foundation's last one ended (the journal is in order)
    rows = journal(path)
    assert min(i for i, r in enumerate(rows) if r["run"] in runs) > max(i for i, r in enumerate(rows)
                                                                       if r["run"] == foundation)
    assert most_at_once(tmp_path / "sessions") == (2, 10)  # 5 pipelines, a plan and an execute session each
