"""A real git server on loopback for sync tests: `git daemon` serving bare repositories with receive-pack
enabled, plus helpers that make clones play separate machines."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git

START_ATTEMPTS = 5
READY_POLLS = 200


class GitServer:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = 0
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        for _ in range(START_ATTEMPTS):
            self.port = _free_port()
            self.process = subprocess.Popen(
                ["git", "daemon", "--enable=receive-pack", f"--base-path={self.base}", "--export-all",
                 "--reuseaddr", "--listen=127.0.0.1", f"--port={self.port}", "--informative-errors",
                 str(self.base)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._ready():
                return
            self.stop()
        raise RuntimeError("git daemon did not start")

    def _ready(self) -> bool:
        assert self.process is not None
        for _ in range(READY_POLLS):
            if self.process.poll() is not None:
                return False  # lost the port to someone else between choosing and binding it
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return True
            except OSError:
                time.sleep(0.02)
        return False

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def bare(self, name: str) -> str:
        """A new empty bare repository on the server; returns its git:// URL."""
        path = self.base / f"{name}.git"
        git("init", "--quiet", "--bare", str(path), cwd=self.base)
        return f"git://127.0.0.1:{self.port}/{name}.git"

    def path(self, name: str) -> Path:
        return self.base / f"{name}.git"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GitServer]:
    base = tmp_path / "server"
    base.mkdir()
    daemon = GitServer(base)
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()


def make_origin(tmp_path: Path, url: str, name: str = "origin-machine") -> Path:
    """A machine set up for lanes with one committed file on the trunk, pushed to `url` as `origin`."""
    from git_lanes.api import Lanes

    root = tmp_path / name
    root.mkdir()
    (root / "README.md").write_text("# project\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hello')\n")
    Lanes.init(root, "main")
    git("remote", "add", "origin", url, cwd=root)
    return root


def clone(tmp_path: Path, url: str, name: str) -> Path:
    """Another machine: a plain `git clone` of the remote."""
    target = tmp_path / name
    git("clone", "--quiet", url, str(target), cwd=tmp_path)
    return target
