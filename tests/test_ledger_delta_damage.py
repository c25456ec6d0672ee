"""A damaged ledger under delta commits (issue 15): reading a state now reads up to 31 commits back to a
checkpoint, so a commit missing on that way (a damaged object store, a history cut short) is a clear error
naming it, as a missing tree or blob already was: every command and doctor say so, none fails internally."""

from __future__ import annotations

from conftest import git, run_cli
from ledger_helpers import ledger_head

from git_lanes import ledger
from git_lanes.api import Lanes


def test_a_delta_whose_parent_is_missing_fails_reads_clearly_and_doctor_names_it(repo):
    assert run_cli("agent", "register", "a", cwd=repo).code == 0  # the first op: a checkpoint
    assert run_cli("board", "post", "hi", "--agent", "a", cwd=repo).code == 0
    head = ledger_head(repo)
    assert not ledger.log.is_checkpoint(Lanes(repo).ctx.store, head)  # the precondition: reading it reads its parent
    parent = git("rev-parse", f"{head}^", cwd=repo).strip()
    missing = "1" * 40
    text = git("cat-file", "commit", head, cwd=repo).replace(f"parent {parent}", f"parent {missing}")
    cut = git("hash-object", "-t", "commit", "-w", "--literally", "--stdin", cwd=repo, input=text).strip()
    git("update-ref", "refs/lanes/ledger", cut, head, cwd=repo)
    for args in (["board", "read", "--agent", "a"], ["agent", "list"]):
        result = run_cli(*args, cwd=repo)
        assert result.code not in (0, 6) and missing[:8] in result.err and "KeyError" not in result.err, result.err
    doctor = run_cli("doctor", "--check", "ledger", cwd=repo)
    assert doctor.code == 1 and missing[:8] in doctor.out and "fsck" in doctor.out, doctor.out + doctor.err


def test_a_ledger_ref_at_a_missing_commit_fails_reads_clearly_and_doctor_names_it(repo):
    """A ref written by hand (or by a libgit2 that dropped a failed write) names a commit this repository
    lacks: doctor's ledger check says so, as every reader does, instead of failing internally."""
    assert run_cli("agent", "register", "a", cwd=repo).code == 0
    missing = "1234567890" * 4
    (repo / ".git" / "refs" / "lanes" / "ledger").write_text(f"{missing}\n")
    for args in (["task", "list"], ["board", "read", "--agent", "a"], ["doctor", "--check", "ledger"]):
        result = run_cli(*args, cwd=repo)
        said = result.out + result.err
        assert result.code == 1 and missing[:8] in said and "fsck" in said and "KeyError" not in said, said
    listed = run_cli("doctor", "--check", "ledger", "--json", cwd=repo)
    assert listed.code == 1 and "cannot be read: it is missing" in listed.out and "internal" not in listed.out


def test_a_ledger_ref_at_an_object_that_is_no_commit_fails_reads_clearly_and_doctor_names_it(repo):
    """refs/lanes/ledger set by hand to a blob or a tree: every ledger reader (the CLI, and every ledger tool
    of the MCP server) failed `internal` with libgit2's InvalidSpecError, and so did doctor."""
    assert run_cli("agent", "register", "a", cwd=repo).code == 0
    blob = git("hash-object", "-w", "--stdin", cwd=repo, input="junk\n").strip()
    tree = git("rev-parse", "HEAD^{tree}", cwd=repo).strip()
    for oid in (blob, tree):
        git("update-ref", "refs/lanes/ledger", oid, cwd=repo)
        for args in (["task", "list"], ["board", "read", "--agent", "a"], ["doctor", "--check", "ledger"]):
            result = run_cli(*args, cwd=repo)
            said = result.out + result.err
            assert result.code == 1 and oid[:8] in said and "not a commit" in said and "InvalidSpec" not in said, said


def test_a_notes_ref_at_an_object_that_is_no_commit_fails_clearly(repo):
    """refs/notes/lanes set by hand to a blob: history, show, doctor (and MCP's history) failed `internal`
    with InvalidSpecError."""
    ws = repo / ".lanes" / "workspaces" / "l1"
    assert run_cli("lane", "create", "l1", cwd=repo).code == 0
    (ws / "n.txt").write_text("n\n")
    assert run_cli("commit", "-m", "n", "--agent-id", "a", cwd=ws).code == 0
    blob = git("hash-object", "-w", "--stdin", cwd=repo, input="junk\n").strip()
    git("update-ref", "refs/notes/lanes", blob, cwd=repo)
    refs = git("for-each-ref", cwd=repo)
    (ws / "m.txt").write_text("m\n")
    for args in (["history"], ["lane", "show", "l1"], ["doctor", "--check", "notes"],
                 ["commit", "-w", "l1", "-m", "m", "--agent-id", "a"]):
        result = run_cli(*args, cwd=repo)
        said = result.out + result.err
        assert result.code == 1 and "refs/notes/lanes" in said and "not a commit" in said \
            and "InvalidSpec" not in said, (args, said)
    assert git("for-each-ref", cwd=repo) == refs  # the refused commit moved nothing


def test_a_notes_ref_whose_commit_is_lost_fails_clearly(repo):
    """refs/notes/lanes naming a commit the object database lost (a copy of the git directory that left
    objects out): show, doctor and the next commit failed `internal` with a bare `KeyError: '<oid>'`."""
    ws = repo / ".lanes" / "workspaces" / "l1"
    assert run_cli("lane", "create", "l1", cwd=repo).code == 0
    (ws / "n.txt").write_text("n\n")
    assert run_cli("commit", "-m", "n", "--agent-id", "a", cwd=ws).code == 0
    lost = git("rev-parse", "refs/notes/lanes", cwd=repo).strip()
    (repo / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    assert git("cat-file", "-t", lost, cwd=repo, check=False) == ""  # the precondition: it is gone
    refs = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=repo)
    (ws / "m.txt").write_text("m\n")
    for args in (["lane", "show", "l1"], ["doctor", "--check", "notes"],
                 ["commit", "-w", "l1", "-m", "m", "--agent-id", "a"]):
        result = run_cli(*args, cwd=repo)
        said = result.out + result.err
        assert result.code == 1 and f"refs/notes/lanes points at {lost[:12]}, which is not in the repository" \
            in said and "KeyError" not in said, (args, result.code, said)
    assert git("for-each-ref", "--format=%(refname) %(objectname)", cwd=repo) == refs  # the refused commit moved nothing
