"""`git lanes serve`: requests per second of `GET /api/v1/status` and the event stream's fan-out to 20
clients, against the held-open API (and a script polling plain git) in the same run.

Run: .venv/bin/python bench/bench_serve.py [--lanes 8] [--seconds 5] [--clients 20] [--events 40]

- status: the held-open `Lanes.status()` in-process; the same over HTTP with 1 and 4 keep-alive clients;
  and what a script gets from plain git for the same picture (`git for-each-ref` + `git status
  --porcelain` in every workspace, one process each).
- fan-out: 20 clients hold `/api/v1/events` open; ledger ops are appended one at a time, each after every
  client saw the previous one; latency is from the append's return to each client's receipt. The held-open
  reference is one `ChangeFeed.wait()` in-process seeing the same appends.
- shutdown: SIGTERM with the 20 streams open, to the process's exit."""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def make_repo(parent: Path, lanes: int):
    from git_lanes.api import Lanes

    root = parent / "repo"
    root.mkdir()
    (root / "README.md").write_text("bench\n")
    for i in range(200):
        (root / f"src/m{i % 10}").mkdir(parents=True, exist_ok=True)
        (root / f"src/m{i % 10}/f{i}.py").write_text(f"x = {i}\n" * 20)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    Lanes.init(root, "main")
    api = Lanes(root)
    for i in range(lanes):
        api.lane_create(f"lane-{i}")
        ws = root / ".lanes" / "workspaces" / f"lane-{i}"
        (ws / f"src/m{i % 10}/f{i}.py").write_text("changed\n")
        api.commit(f"change {i}", f"agent-{i}", lane=f"lane-{i}", auto_accept=i % 2 == 0)
        (ws / "scratch.txt").write_text("unsnapshotted\n")
    return root, api


def rate(action, seconds: float) -> float:
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        action()
        count += 1
    return count / (time.perf_counter() - started)


def http_rate(port: int, clients: int, seconds: float) -> float:
    counts = [0] * clients
    stop = time.perf_counter() + seconds

    def client(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while time.perf_counter() < stop:
            conn.request("GET", "/api/v1/status")
            reply = conn.getresponse()
            reply.read()
            assert reply.status == 200
            counts[n] += 1
        conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - started)


def git_status_script(root: Path) -> None:
    subprocess.run(["git", "for-each-ref", "refs/heads", "refs/lanes/heads", "refs/lanes/proposals"], cwd=root,
                   capture_output=True, check=True)
    for ws in [root, *sorted((root / ".lanes" / "workspaces").iterdir())]:
        subprocess.run(["git", "status", "--porcelain"], cwd=ws, capture_output=True, check=True)


class Listener(threading.Thread):
    """One SSE client: records when it saw each board post (by its text)."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.seen: dict[str, float] = {}
        self.ready = threading.Event()
        self.ended = threading.Event()

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request("GET", "/api/v1/events")
        reply = conn.getresponse()
        try:
            for raw in reply:
                line = raw.decode()
                if line.startswith("event: hello"):
                    self.ready.set()
                if line.startswith("data: {\"events\""):
                    now = time.perf_counter()
                    for event in json.loads(line[6:])["events"]:
                        for op in event.get("ops", []):
                            self.seen.setdefault(op["args"].get("text", ""), now)
        except (OSError, http.client.HTTPException):
            pass
        self.ended.set()


def fan_out(api, port: int, clients: int, events: int) -> dict:
    listeners = [Listener(port) for _ in range(clients)]
    for listener in listeners:
        listener.start()
    for listener in listeners:
        assert listener.ready.wait(60)
    latencies = []
    started = time.perf_counter()
    for i in range(events):
        text = f"bench {i}"
        api.board_post(text, "bench")
        appended = time.perf_counter()
        deadline = appended + 30
        while not all(text in listener.seen for listener in listeners):
            assert time.perf_counter() < deadline, "an event never arrived"
            time.sleep(0.001)
        latencies += [listener.seen[text] - appended for listener in listeners]
    elapsed = time.perf_counter() - started
    return {"listeners": listeners, "latencies": latencies, "deliveries_per_s": events * clients / elapsed}


def feed_latency(api, events: int) -> list[float]:
    feed = api.watch()
    found = []
    for i in range(events):
        api.board_post(f"feed {i}", "bench")
        appended = time.perf_counter()
        while not any(e["kind"] == "ledger" for e in feed.wait(30)):
            pass
        found.append(time.perf_counter() - appended)
    return found


def ms(values: list[float], q: float = 0.5) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lanes", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--events", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, api = make_repo(Path(tmp), args.lanes)
        server = subprocess.Popen([sys.executable, "-m", "git_lanes", "serve", "--port", "0", "--json"], cwd=root,
                                  stdout=subprocess.PIPE, text=True)
        port = json.loads(server.stdout.readline())["port"]
        try:
            held = rate(api.status, args.seconds)
            git_rate = rate(lambda: git_status_script(root), args.seconds)
            one = http_rate(port, 1, args.seconds)
            four = http_rate(port, 4, args.seconds)
            feed = feed_latency(api, args.events)
            fan = fan_out(api, port, args.clients, args.events)
            stopped = time.perf_counter()
            server.send_signal(signal.SIGTERM)
            server.wait(60)
            shutdown = time.perf_counter() - stopped
            assert all(listener.ended.wait(10) for listener in fan["listeners"])
        finally:
            if server.poll() is None:
                server.kill()
    print(f"repository: {args.lanes} lanes + trunk, 200 files, each workspace with an unsnapshotted edit")
    print(f"GET /api/v1/status      held-open API {held:7.1f}/s   HTTP 1 client {one:7.1f}/s "
          f"({one / held:.2f}x)   HTTP 4 clients {four:7.1f}/s ({four / held:.2f}x)")
    print(f"  plain git script (for-each-ref + status in {args.lanes + 1} worktrees) {git_rate:7.1f}/s "
          f"(HTTP 1 client is {one / git_rate:.1f}x that)")
    print(f"events, {args.clients} clients  delivery p50 {ms(fan['latencies'])}  p95 {ms(fan['latencies'], 0.95)}  "
          f"{fan['deliveries_per_s']:.0f} deliveries/s")
    print(f"  held-open ChangeFeed.wait (1 watcher, in-process)  p50 {ms(feed)}  p95 {ms(feed, 0.95)}")
    print(f"shutdown with {args.clients} open streams: {shutdown * 1000:.0f} ms (SIGTERM to exit)")


if __name__ == "__main__":
    socket.setdefaulttimeout(120)
    main()
