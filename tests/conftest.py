"""Hermetic fixtures: every test gets its own HOME, git config, pinned identity and dates, and real git
repositories in temporary directories. Faces are exercised through real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

PINNED_DATE = "2026-01-01T00:00:00+0000"

# A suite started in the background without job control (`pytest &` in a script, nohup) inherits Ctrl-C
# ignored, and hands that down to every process a test starts: git-lanes rightly keeps an ignored SIGINT
# ignored, so the tests that interrupt a writer waited on it for good. Their writers get it at its default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text("[user]\n\tname = Test\n\temail = test@example.com\n"
                                     "[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n")
    for key in list(os.environ):
        if key.startswith(("GIT_", "LANES_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_DATE", PINNED_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", PINNED_DATE)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()  # for this process's own clock too (store/clock.py), as libgit2's (which looks each time)
    # Every CLI process a test starts would otherwise compile git-lanes anew where the environment says not to
    # write byte code (measured: the whole suite 588 s against 334 s with it written).
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    # The light sync hands an unexpected error met before anything moved to the ordinary sync; tests want
    # to see it (api/sync_light.py).
    monkeypatch.setenv("GIT_LANES_LIGHT_STRICT", "1")
    # What an earlier test's in-process calls were told and nobody took (an agent's first call registers it,
    # errors.notice) is not this test's to be told.
    from git_lanes.errors import take_notices

    take_notices()
    return home


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self):
        return json.loads(self.out)


def run_cli(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> Result:
    proc = subprocess.run([sys.executable, "-m", "git_lanes", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def git(*args: str, cwd: Path, check: bool = True, input: str | None = None, env: dict | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check, input=input,
                          env={**os.environ, **env} if env else None).stdout


def rolled_up(path: Path, timeout: float = 120) -> None:
    """Wait for a roll-up an append started in the background (`git repack --geometric`, detached) and for
    a `git gc --auto` its upkeep started (which detaches too, holding `gc.pid` while it runs) to finish:
    `git fsck` run while git removes packs reports the ones it listed and then missed ("index not opened",
    objects missing), though nothing is lost."""
    import time

    common = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=path, capture_output=True,
                            text=True).stdout.strip()
    git_dir = path / (common or ".git")  # an absolute common dir replaces `path`
    deadline = time.monotonic() + timeout
    while ((git_dir / "lanes-roll-up.lock").exists() or (git_dir / "gc.pid").exists()
           or _upkeep_running(path.resolve())) and time.monotonic() < deadline:
        time.sleep(0.02)


UPKEEP_COMMANDS = {b"gc", b"repack", b"pack-objects", b"prune", b"prune-packed", b"multi-pack-index"}


def _upkeep_running(root: Path) -> bool:
    """Whether a git process that packs or prunes runs in `root` (its working directory): a detached `git gc
    --auto` lets go of gc.pid before it forks and takes it again in the child, so for a moment neither lock
    says it is coming."""
    inside = str(root)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                args = cmdline.read().split(b"\0")
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:  # gone, or a zombie
            continue
        if os.path.basename(args[0]) == b"git" and UPKEEP_COMMANDS & set(args[1:5]) \
                and (cwd == inside or cwd.startswith(inside + os.sep)):
            return True
    return False


def fsck_clean(path: Path) -> None:
    """`git fsck` finds nothing wrong in the repository at `path` (once a background roll-up is done)."""
    rolled_up(path)
    proc = subprocess.run(["git", "fsck", "--no-progress", "--no-dangling"], cwd=path, capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "error" not in proc.stderr, proc.stderr


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository set up for lanes with one committed file on the trunk `main`."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text("# project\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hello')\n")
    from git_lanes.api import Lanes

    Lanes.init(root, "main")
    return root


@pytest.fixture
def api(repo: Path):
    from git_lanes.api import Lanes

    return Lanes(repo)


def workspace(repo: Path, lane: str) -> Path:
    return repo / ".lanes" / "workspaces" / lane
