"""An operation log (refs/lanes/oplog) damaged by hand or by a copy of the git directory that left objects out,
through the CLI in real processes and real repositories whose commits' loose files are removed. What is lost
cannot come back, so the log never stops the operations it records: the next one starts it afresh, once, with
a warning, as git's ref updates go on past a damaged reflog. Its readers stop where a chain breaks, and
`doctor --check oplog --fix` ends the log there explicitly."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import fsck_clean, git, run_cli

OPLOG = "refs/lanes/oplog"
STARTS_AFRESH = "the operation log starts afresh with this operation, and undo cannot reach the operations before it"


def _drop_object(repo: Path, oid: str) -> None:
    """Lose a commit as a copy of the git directory that left objects out would: its loose file goes."""
    (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    assert git("cat-file", "-t", oid, cwd=repo, check=False) == ""


def _create(repo: Path, lane: str, *flags: str):
    result = run_cli("lane", "create", lane, "--no-setup", *flags, cwd=repo)
    assert result.code == 0, result.err
    return result


def _chain(repo: Path) -> list[str]:
    """The log's commits, newest first, each with its parents."""
    return git("log", "--first-parent", "--format=%H %P", OPLOG, cwd=repo).splitlines()


def _descriptions(repo: Path) -> list[str]:
    result = run_cli("op", "log", "--json", cwd=repo)
    assert result.code == 0, result.err
    return [row["description"] for row in result.json if row["kind"] == "lanes"]


def _lanes(repo: Path) -> list[str]:
    return git("for-each-ref", "--format=%(refname)", "refs/lanes/heads/", cwd=repo).split()


def test_an_operation_on_a_lost_log_head_is_done_and_starts_the_log_afresh(repo: Path):
    _create(repo, "feature/a")
    lost = git("rev-parse", OPLOG, cwd=repo).strip()
    _drop_object(repo, lost)
    made = _create(repo, "feature/b", "--json")  # was: the lane made, then exit 6 "NotFoundError: object not found"
    assert made.json["workspace"].endswith("feature/b") and "refs/lanes/heads/feature/b" in _lanes(repo)
    assert made.err == (f"warning: {OPLOG} named commit {lost[:8]}, which is not in the repository: "
                        f"{STARTS_AFRESH}\n")
    (root,) = _chain(repo)  # the new entry has no parent: the log is whole again
    assert len(root.split()) == 1
    assert f"restarted ({lost} unreadable): create lane feature/b" in git("reflog", "-1", OPLOG, cwd=repo)
    again = _create(repo, "feature/c")  # said once: the log is readable again
    assert again.err == ""
    assert _descriptions(repo) == ["create lane feature/c", "create lane feature/b"]
    undone = run_cli("undo", "--json", cwd=repo)  # undo reaches what was recorded since
    assert undone.code == 0, undone.err
    assert "refs/lanes/heads/feature/c" not in _lanes(repo)
    checked = run_cli("doctor", "--check", "oplog", "--json", cwd=repo)
    assert checked.code == 0 and checked.json["checks"][0]["status"] == "ok"


def test_a_log_head_that_names_a_blob_or_a_tree_starts_afresh_too(repo: Path):
    _create(repo, "feature/a")
    for kind, lane in (("blob", "feature/b"), ("tree", "feature/c")):
        oid = git("rev-parse", f"main:README.md" if kind == "blob" else "main^{tree}", cwd=repo).strip()
        git("update-ref", OPLOG, oid, cwd=repo)
        told = run_cli("op", "log", "--json", cwd=repo)  # reading it: one clear line, nothing to list
        assert told.code == 1 and told.json["error"] == "oplog_broken", told.err
        assert told.json["message"] == f"the operation log cannot be read: {OPLOG} names a {kind}"
        made = _create(repo, lane)
        assert made.err == f"warning: {OPLOG} named a {kind}: {STARTS_AFRESH}\n"
        assert _descriptions(repo) == [f"create lane {lane}"]
    fsck_clean(repo)


def test_a_killed_operations_entry_is_recovered_onto_a_fresh_log(repo: Path):
    """The first failure left the entry's journal behind (the lane made, no entry): the next writer appends it
    as the first entry of the fresh log, then its own, instead of failing on the lost head."""
    _create(repo, "feature/a")
    _drop_object(repo, git("rev-parse", OPLOG, cwd=repo).strip())
    folder = repo / ".git" / "lanes-oplog"
    journal = [
        '{"id": "0123456789abcdef", "time": 1.0, "actor": "Test", "description": "create lane feature/k"}',
        '{"before": [["refs/lanes/heads/feature/k", "%s", null, "lanes: create lane feature/k"]], "files": []}'
        % git("rev-parse", "main", cwd=repo).strip(),
        '{"applied": true, "files": []}']
    folder.mkdir(exist_ok=True)
    (folder / "0123456789abcdef").write_text("\n".join(journal) + "\n")
    git("update-ref", "refs/lanes/heads/feature/k", "main", cwd=repo)
    made = _create(repo, "feature/b")
    assert made.err.count("warning:") == 1 and STARTS_AFRESH in made.err
    assert _descriptions(repo) == ["create lane feature/b", "create lane feature/k"]


def test_readers_stop_where_the_chain_breaks_and_doctor_fix_ends_the_log_there(repo: Path):
    for lane in ("feature/a", "feature/b", "feature/c"):
        _create(repo, lane)
    newest, lost = git("rev-parse", OPLOG, f"{OPLOG}~1", cwd=repo).split()
    _drop_object(repo, lost)
    listed = run_cli("op", "log", "--json", cwd=repo)  # what is above the break, and a line saying where it is
    assert listed.code == 0, listed.err
    assert [r["description"] for r in listed.json if r["kind"] == "lanes"] == ["create lane feature/c"]
    assert listed.err == (f"warning: the operation log stops at entry {newest[:8]} (1 from the newest): its parent "
                          f"is commit {lost[:8]}, which is not in the repository, so undo cannot reach the "
                          "operations before it (`git lanes doctor --check oplog --fix` ends the log there)\n")
    undone = run_cli("undo", "--json", cwd=repo)  # the newest is above the break: undo reaches it
    assert undone.code == 0, undone.err
    assert "refs/lanes/heads/feature/c" not in _lanes(repo)
    checked = run_cli("doctor", "--check", "oplog", "--json", cwd=repo)
    assert checked.code == 1 and checked.json["checks"][0]["fixable"] is True
    assert "--fix ends it there, keeping the 2 entries above" in checked.json["checks"][0]["hint"]
    fixed = run_cli("doctor", "--check", "oplog", "--fix", "--json", cwd=repo)
    assert fixed.code == 0 and fixed.json["checks"][0]["status"] == "fixed", fixed.out
    assert len(_chain(repo)) == 2 and len(_chain(repo)[-1].split()) == 1
    after = run_cli("op", "log", "--json", cwd=repo)
    kept = [r["description"] for r in after.json if r["kind"] == "lanes"]
    assert after.err == "" and len(kept) == 2 and kept[0].startswith("undo ")
    assert kept[0].endswith(": create lane feature/c") and kept[1] == "create lane feature/c"
    assert run_cli("undo", "--json", cwd=repo).code == 0  # the kept undo is still undoable: it redoes
    assert "refs/lanes/heads/feature/c" in _lanes(repo)
    assert run_cli("doctor", "--check", "oplog", cwd=repo).code == 0


def test_doctor_fix_starts_a_log_whose_head_is_lost_afresh(repo: Path):
    _create(repo, "feature/a")
    lost = git("rev-parse", OPLOG, cwd=repo).strip()
    _drop_object(repo, lost)
    fixed = run_cli("doctor", "--check", "oplog", "--fix", "--json", cwd=repo)
    assert fixed.code == 0 and fixed.json["checks"][0]["status"] == "fixed", fixed.out
    assert git("rev-parse", "--verify", "-q", OPLOG, cwd=repo, check=False) == ""
    checked = run_cli("doctor", "--check", "oplog", "--json", cwd=repo)
    assert checked.json["checks"][0]["message"] == "the operation log is empty"
    made = _create(repo, "feature/b")  # nothing left to warn about
    assert made.err == "" and _descriptions(repo) == ["create lane feature/b"]


def test_doctor_fix_sets_a_lost_head_back_to_the_newest_earlier_one_still_there(repo: Path):
    """Objects packed earlier survive a copy that left the loose ones out: the reflog names the head before the
    lost one, and --fix makes the log end there, every entry below it kept and undoable."""
    for lane in ("feature/a", "feature/b", "feature/c"):
        _create(repo, lane)
    lost, earlier = git("rev-parse", OPLOG, f"{OPLOG}~1", cwd=repo).split()
    _drop_object(repo, lost)
    checked = run_cli("doctor", "--check", "oplog", "--json", cwd=repo)
    assert "--fix sets it back to the newest earlier head" in checked.json["checks"][0]["hint"]
    fixed = run_cli("doctor", "--check", "oplog", "--fix", "--json", cwd=repo)
    assert fixed.code == 0 and fixed.json["checks"][0]["status"] == "fixed", fixed.out
    assert git("rev-parse", OPLOG, cwd=repo).strip() == earlier  # the intact chain as it was, not rewritten
    assert _descriptions(repo) == ["create lane feature/b", "create lane feature/a"]
    assert run_cli("undo", "--json", cwd=repo).code == 0  # reaches what is left: lane b goes
    assert _lanes(repo) == ["refs/lanes/heads/feature/a", "refs/lanes/heads/feature/c"]


DAMAGED = "which is damaged (`git fsck` names it; a copy from another clone mends it)"


def _damage_object(repo: Path, oid: str, content: bytes) -> None:
    """Damage a commit on disk: its loose file stays, holding zlib data that is not that commit."""
    import zlib

    path = repo / ".git" / "objects" / oid[:2] / oid[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(content))
    assert git("cat-file", "-e", oid, cwd=repo, check=False) == ""  # git cannot read it either


@pytest.mark.parametrize("content", [b"junk that is not an object", b"commit 30\0not a commit body at all......"])
def test_a_damaged_log_commit_is_a_failed_check_and_a_clear_error_not_an_internal_one(repo: Path, content: bytes):
    for lane in ("feature/a", "feature/b", "feature/c"):
        _create(repo, lane)
    newest, damaged = git("rev-parse", OPLOG, f"{OPLOG}~1", cwd=repo).split()
    _damage_object(repo, damaged, content)
    checked = run_cli("doctor", "--check", "oplog", "--json", cwd=repo)  # was: exit 6, "GitError: … invalid header"
    assert checked.code == 1, checked.err
    (check,) = checked.json["checks"]
    assert (check["status"], check["fixable"]) == ("fail", True)
    assert check["message"] == (f"the operation log cannot be read: its chain breaks at entry {newest[:8]} "
                                f"(number 1 from the newest): its parent is commit {damaged[:8]}, {DAMAGED}")
    listed = run_cli("op", "log", "--json", cwd=repo)  # what is above it, and a line saying where it breaks
    assert listed.code == 0, listed.err
    assert [r["description"] for r in listed.json if r["kind"] == "lanes"] == ["create lane feature/c"]
    assert f"its parent is commit {damaged[:8]}, {DAMAGED}, so undo cannot reach" in listed.err
    (repo / ".git" / OPLOG).write_text(damaged + "\n")  # the head itself damaged (update-ref refuses it)
    for args in (("op", "log", "--json"), ("undo", "--json")):
        told = run_cli(*args, cwd=repo)
        assert told.code == 1 and told.json["error"] == "oplog_broken", told.err
        assert told.json["message"] == f"the operation log cannot be read: {OPLOG} names commit {damaged[:8]}, {DAMAGED}"
    # --fix goes back to the newest head the reflog names that can be read, and ends the log above the damage
    fixed = run_cli("doctor", "--check", "oplog", "--fix", "--json", cwd=repo)
    assert fixed.code == 0 and fixed.json["checks"][0]["status"] == "fixed", fixed.out
    assert _descriptions(repo) == ["create lane feature/c"] and len(_chain(repo)) == 1
    assert run_cli("doctor", "--check", "oplog", cwd=repo).code == 0


def test_an_operation_on_a_log_head_whose_file_is_junk_says_it_is_damaged_not_lost(repo: Path):
    _create(repo, "feature/a")
    head = git("rev-parse", OPLOG, cwd=repo).strip()
    _damage_object(repo, head, b"junk that is not an object")
    made = run_cli("lane", "create", "feature/b", cwd=repo)
    assert made.code == 0, made.err
    assert made.err == (f"warning: {OPLOG} named commit {head[:8]}, {DAMAGED}: the operation log starts afresh "
                        "with this operation, and undo cannot reach the operations before it\n")
    assert _descriptions(repo) == ["create lane feature/b"]
