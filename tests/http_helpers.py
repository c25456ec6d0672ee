"""The real `git lanes serve` in a process of its own, and a small HTTP client for it (the standard
library's, so a test's requests are exactly what it writes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Reply:
    status: int
    headers: dict
    body: bytes

    @property
    def json(self):
        return json.loads(self.body)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


class Server:
    def __init__(self, repo: Path, *args: str, env: dict | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "git_lanes", "serve", "--port", "0", "--json", *args],
                                     cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the server did not start: {self.proc.stderr.read()}")
        self.info = json.loads(line)
        self.url = self.info["url"].rstrip("/")
        self.token = self.info.get("token")

    def request(self, method: str, path: str, body=None, *, token: str | None = None, headers: dict | None = None,
                raw: bytes | None = None) -> Reply:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with OPENER.open(request, timeout=60) as reply:
                return Reply(reply.status, dict(reply.headers), reply.read())
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, dict(exc.headers), exc.read())

    def get(self, path: str, **kwargs) -> Reply:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body=None, **kwargs) -> Reply:
        return self.request("POST", path, body if body is not None else {}, token=kwargs.pop("token", self.token),
                            **kwargs)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=60)
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.stop()
