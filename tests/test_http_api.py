"""The REST API of the real `git lanes serve`: the same records and error codes as `--json`, HTTP statuses
mapped from the error types, the token on every route that needs it, and the event stream."""

from __future__ import annotations

import http.cookiejar
import json
import signal
import socket
import sys
import threading
import time
import urllib.request

import pytest
from conftest import run_cli, workspace
from http_helpers import Server
from test_gates import declare, gate

from git_lanes.http import routes

SAMPLE_BODY = {"string": "x", "integer": 1, "number": 1.0, "boolean": False, "array": ["x"]}


@pytest.fixture
def seeded(api, repo):
    api.lane_create("feat")
    (workspace(repo, "feat") / "f.txt").write_text("f\n")
    proposal = api.commit("Add f", "coder-1", lane="feat")
    task = api.task_create("first task")
    ticket = api.ticket_open("first ticket")
    api.board_post("Which schema?", "coder-1", kind="question")
    return {"name": "feat", "agent": "coder-1", "post": "1", "transition": proposal["id"], "task": task["task"],
            "ticket": ticket["ticket"]}


def sample_path(route: routes.Route, seeded: dict) -> str:
    values = {"name": seeded["name"], "agent": seeded["agent"], "post": seeded["post"],
              "id": seeded["ticket"] if route.path.startswith("/tickets") else
              seeded["task"] if route.path.startswith("/tasks") else seeded["transition"]}
    path = route.path
    for name in route.path_params:
        path = path.replace("{" + name + ":path}", values[name]).replace("{" + name + "}", values[name])
    query = "&".join(f"{p.name}={p.choices[0] if p.choices else 'x'}" for p in route.query if p.required)
    return "/api/v1" + path + (f"?{query}" if query else "")


def sample_body(route: routes.Route) -> dict:
    return {p.name: (p.choices[0] if p.choices else SAMPLE_BODY[p.kind]) for p in route.body if p.required}


@pytest.fixture
def server(seeded, repo):
    with Server(repo) as running:
        yield running


def test_every_route_without_the_token(server, seeded):
    """On loopback reads are open and every write is refused; nothing ran (the lane did not move)."""
    before = server.get("/api/v1/lanes/feat").json["head"]
    for route in routes.ROUTES:
        path = sample_path(route, seeded)
        reply = server.request(route.method, path, sample_body(route) if route.writes else None)
        if route.writes:
            assert (reply.status, reply.json["error"]) == (401, "unauthorized"), (route.method, path)
        else:
            assert reply.status in (200, 400, 404), (route.method, path, reply.body)
    assert server.get("/api/v1/lanes/feat").json["head"] == before
    assert server.get("/api/v1/proposals").json[0]["id"] == seeded["transition"]


def test_every_route_with_the_token(server, seeded):
    for route in routes.ROUTES:
        path = sample_path(route, seeded)
        reply = server.request(route.method, path, sample_body(route) if route.writes else None,
                               token=server.token)
        assert reply.status in (200, 400, 404, 409, 422), (route.method, path, reply.body)
        assert isinstance(reply.json, (dict, list))
        if reply.status != 200:
            assert set(reply.json) >= {"error", "message"}


def test_records_match_the_cli_json(server, repo, seeded):
    cli_status = run_cli("status", "--json", cwd=repo).json
    assert server.get("/api/v1/status").json == cli_status
    shown = server.get(f"/api/v1/transitions/{seeded['transition'][:6]}").json
    assert shown == run_cli("show", seeded["transition"], "--json", cwd=repo).json
    assert server.get("/api/v1/tasks").json == run_cli("task", "list", "--json", cwd=repo).json


def test_errors_map_to_statuses_with_the_cli_codes(server, repo, seeded):
    missing = server.get("/api/v1/lanes/nope")
    assert (missing.status, missing.json["error"]) == (404, "unknown_lane")
    cli = run_cli("lane", "show", "nope", "--json", cwd=repo).json
    # the same advice, in each face's words (test_hint_advice.py)
    assert missing.json == cli | {"hint": "see `GET /api/v1/lanes`"}
    bad = server.post("/api/v1/lanes", {"name": "bad..name"})
    assert bad.status == 400 and bad.json["error"] == run_cli("lane", "create", "bad..name", "--json",
                                                              cwd=repo).json["error"]
    assert server.post(f"/api/v1/board/%23{seeded['post']}/resolve", {"actor": "lead"}).status == 200  # "#1"
    unknown = server.post("/api/v1/board/zz/resolve", {"actor": "lead"})
    assert (unknown.status, unknown.json["error"]) == (404, "unknown_post")
    again = server.post(f"/api/v1/board/{seeded['post']}/resolve", {"actor": "lead"})
    assert (again.status, again.json["error"]) == (409, "already_resolved")
    usage = server.post("/api/v1/lanes", {"name": "ok", "colour": "blue"})
    assert (usage.status, usage.json["error"]) == (400, "usage")
    wrong_type = server.post("/api/v1/tasks", {"title": 5})
    assert (wrong_type.status, wrong_type.json["error"]) == (400, "usage")
    not_json = server.request("POST", "/api/v1/tasks", raw=b"{", token=server.token)
    assert (not_json.status, not_json.json["error"]) == (400, "usage")
    for number in (b"NaN", b"Infinity", b"1e999"):  # Python's JSON reads them; none is a cost
        infinite = server.request("POST", "/api/v1/lanes/feat/commit", token=server.token,
                                  raw=b'{"prompt": "p", "agent_id": "a", "cost_usd": ' + number + b"}")
        assert (infinite.status, infinite.json["error"]) == (400, "usage"), infinite.body
        assert "cost_usd must be a finite number" in infinite.json["message"], infinite.json
    assert server.get("/api/v1/nothing").status == 404
    assert server.request("PUT", "/api/v1/lanes", {}, token=server.token).status == 405


def test_a_wrong_method_names_every_method_the_path_takes(server):
    """`PUT /api/v1/tasks` answered "this path takes GET", though it takes POST too (each method is a route
    of its own, and only the first one found was asked), and no 405 carried the `Allow` header HTTP
    requires of it."""
    for method, path, allowed in (("PUT", "/api/v1/tasks", "GET, POST"), ("PATCH", "/api/v1/lanes/feat", "GET, DELETE"),
                                  ("DELETE", "/api/v1/tasks/abc", "GET"), ("GET", "/api/v1/board/read", "POST")):
        reply = server.request(method, path, {}, token=server.token)
        assert (reply.status, reply.json["error"]) == (405, "method_not_allowed"), (method, path, reply.body)
        assert reply.json["hint"] == f"this path takes {allowed}", (method, path)
        headers = {name.lower(): value for name, value in reply.headers.items()}
        # HEAD is answered wherever GET is, as HTTP has it
        assert headers["allow"] == allowed.replace("GET", "GET, HEAD"), (method, path, headers)


def test_a_failing_required_gate_is_422(server, api, repo):
    (repo / ".lanes.toml").write_text('[[gate]]\nname = "no"\ncommand = "exit 1"\n')
    api.accept(api.commit("declare gates", "lead", cwd=repo, auto_accept=True)["id"])
    (workspace(repo, "feat") / "g.txt").write_text("g\n")
    proposal = server.post("/api/v1/lanes/feat/commit", {"prompt": "Add g", "agent_id": "coder-1"}).json
    failed = server.post(f"/api/v1/transitions/{proposal['id']}/accept")
    assert (failed.status, failed.json["error"]) == (422, "gate_failed")


def test_accept_moves_the_lane_and_a_moved_lane_is_409(server, api, repo, seeded):
    accepted = server.post(f"/api/v1/transitions/{seeded['transition']}/accept")
    assert accepted.status == 200 and accepted.json["status"] == "accepted"
    assert api.lane_show("feat")["head"] == accepted.json["to"]
    (workspace(repo, "feat") / "h.txt").write_text("h\n")
    stale = api.commit("Add h", "coder-1", lane="feat")
    (workspace(repo, "feat") / "h.txt").write_text("h2\n")
    api.commit("Add h again", "coder-1", lane="feat", auto_accept=True)
    moved = server.post(f"/api/v1/transitions/{stale['id']}/accept")
    assert (moved.status, moved.json["error"]) == (409, "stale_proposal")


def test_proposals_are_accepted_and_rejected_under_proposals(server, api, repo, seeded):
    """The API offers `proposals (accept, reject)`: next to GET /proposals, each pending one is decided at
    /proposals/{id}/accept and /proposals/{id}/reject, with the records and errors of /transitions/{id}/…."""
    assert [p["id"] for p in server.get("/api/v1/proposals").json] == [seeded["transition"]]
    accepted = server.post(f"/api/v1/proposals/{seeded['transition'][:8]}/accept")
    assert accepted.status == 200 and accepted.json["status"] == "accepted", accepted.json
    assert api.lane_show("feat")["head"] == accepted.json["to"]
    again = server.post(f"/api/v1/proposals/{seeded['transition']}/reject", {"reason": "late"})
    assert (again.status, again.json["error"]) == (409, "already_decided")
    (workspace(repo, "feat") / "g.txt").write_text("g\n")
    second = api.commit("Add g", "coder-1", lane="feat")
    assert server.post(f"/api/v1/proposals/{second['id']}/reject", {"reason": "no"}, token=None).status == 401
    rejected = server.post(f"/api/v1/proposals/{second['id']}/reject", {"reason": "not now"})
    assert (rejected.status, rejected.json["status"], rejected.json["reason"]) == (200, "rejected", "not now")
    assert server.get("/api/v1/proposals").json == []


def test_cookie_from_the_token_link_and_the_same_origin_rule(server):
    assert server.get("/?token=wrong").status == 401
    link = server.get(f"/?token={server.token}")
    assert link.status == 303 and link.headers["location"] == "/"
    cookie = link.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert server.token not in cookie
    session = cookie.split(";")[0]
    origin = server.url
    made = server.request("POST", "/api/v1/lanes", {"name": "from-page"},
                          headers={"Cookie": session, "Origin": origin})
    assert made.status == 200 and made.json["created"]
    elsewhere = server.request("POST", "/api/v1/lanes", {"name": "from-evil"},
                               headers={"Cookie": session, "Origin": "http://evil.example"})
    assert (elsewhere.status, elsewhere.json["error"]) == (403, "cross_origin")
    cross_site = server.request("POST", "/api/v1/lanes", {"name": "from-evil"},
                                headers={"Cookie": session, "Sec-Fetch-Site": "cross-site"})
    assert cross_site.status == 403
    unnamed = server.request("POST", "/api/v1/lanes", {"name": "from-evil"}, headers={"Cookie": session})
    assert unnamed.status == 403
    bearer_elsewhere = server.request("POST", "/api/v1/lanes", {"name": "from-evil"}, token=server.token,
                                      headers={"Origin": "http://evil.example"})
    assert bearer_elsewhere.status == 403
    assert server.get("/api/v1/lanes/from-evil").status == 404
    assert server.get("/api/v1/session", headers={"Cookie": session}).json["can_write"] is True
    assert server.get("/api/v1/session").json["can_write"] is False


def test_two_dashboards_on_one_host_keep_their_own_sessions(server, repo):
    # A browser sends a host's cookies to every port of it, and one server's link set the cookie every
    # server reads: opening a second repository's dashboard signed the first one's page out of writing.
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with Server(repo) as other:
        for running in (server, other):
            with browser.open(f"{running.url}/?token={running.token}", timeout=60) as page:
                assert page.status == 200
        assert len(jar) == 2
        for running in (server, other):
            with browser.open(f"{running.url}/api/v1/session", timeout=60) as reply:
                assert json.loads(reply.read())["can_write"] is True, running.url


def test_a_foreign_host_name_is_refused_on_loopback(server):
    """A page on another site whose name resolves to 127.0.0.1 (DNS rebinding) reads nothing."""
    reply = server.get("/api/v1/status", headers={"Host": "evil.example"})
    assert (reply.status, reply.json["error"]) == (403, "forbidden_host")
    assert server.get("/api/v1/status", headers={"Host": "localhost"}).status == 200


def test_every_response_carries_the_security_headers(server):
    for path in ("/", "/api/v1/status", "/api/openapi.json", "/static/app.js"):
        headers = {k.lower(): v for k, v in server.get(path).headers.items()}
        assert "script-src 'self'" in headers["content-security-policy"], path
        assert headers["x-content-type-options"] == "nosniff"


def test_openapi_documents_every_route(server):
    document = server.get("/api/openapi.json").json
    assert document["openapi"].startswith("3.")
    for route in routes.ROUTES:
        path = "/api/v1" + route.path.replace(":path", "")
        assert route.method.lower() in document["paths"][path], path
    assert "/api/v1/events" in document["paths"]


def test_the_document_describes_the_errors_and_the_cookie_as_they_are(server, repo):
    """The document said an error's `hint` is a string, and every error without advice sends null, so a
    client that validates answers against the document refused them; it named no 410 (the repository
    gone), which any route may answer; and it named the session cookie `git_lanes_session`, where each
    server sets its own, named after its port."""
    import jsonschema

    document = server.get("/api/openapi.json").json
    refused = server.post("/api/v1/tasks", {"title": ""})
    assert (refused.status, refused.json["hint"]) == (400, None)
    jsonschema.validate(refused.json, document["components"]["schemas"]["Error"])
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if path.endswith(("/events", "/session")):
                continue
            assert "410" in operation["responses"], (method, path)
    signed_in = server.get(f"/?token={server.token}")
    cookie = signed_in.headers.get("set-cookie") or signed_in.headers["Set-Cookie"]
    assert cookie.startswith(document["components"]["securitySchemes"]["cookie"]["name"] + "=")


def listen(server) -> tuple[list[dict], threading.Thread]:
    """Open /api/v1/events; returns what arrives (a final {"kind": "end"} when the stream closes)."""
    received: list[dict] = []
    opened = threading.Event()

    def read():
        with urllib.request.urlopen(server.url + "/api/v1/events", timeout=120) as stream:
            for raw in stream:
                line = raw.decode().strip()
                if line == "event: hello":
                    opened.set()
                if line.startswith("data: {\"events\""):
                    received.extend(json.loads(line[6:])["events"])
        received.append({"kind": "end"})

    listener = threading.Thread(target=read, daemon=True)
    listener.start()
    assert opened.wait(60), "the stream never opened"
    return received, listener


def test_events_stream_a_cli_commit_and_end_on_sigterm(server, repo):
    received, listener = listen(server)
    ws = workspace(repo, "feat")
    (ws / "c.txt").write_text("c\n")
    commit = run_cli("commit", "-m", "Add c", "--agent-id", "coder-2", "--auto-accept", "--json", cwd=ws).json
    while not any(e["kind"] == "lane" and e["new"] == commit["to"] for e in received):
        listener.join(0.05)
        assert listener.is_alive(), received
    assert listener.is_alive(), "the stream must still be open when the server is told to stop"
    assert server.stop(signal.SIGTERM) == 0
    listener.join(60)
    assert received[-1] == {"kind": "end"}


def test_an_edit_in_a_workspace_is_an_event_though_no_ref_moved(server, repo):
    received, listener = listen(server)
    ws = workspace(repo, "feat")
    for attempt in range(600):  # the first edit may land before the server's first look: edit again
        (ws / f"edit-{attempt}.txt").write_text("draft\n")
        listener.join(0.1)
        if any(e["kind"] == "workspace" for e in received):
            break
    assert any(e["kind"] == "workspace" for e in received), received
    assert not any(e["kind"] in ("lane", "ledger") for e in received)


def test_ctrl_c_stops_the_server_cleanly(server):
    assert server.get("/api/v1/status").status == 200
    assert server.stop(signal.SIGINT) == 0


def unfinished_post(server) -> socket.socket:
    """A write whose body never comes: in flight until the server's grace after a stop runs out."""
    host, port = server.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    connection = socket.create_connection((host, int(port)), timeout=60)
    connection.sendall(f"POST /api/v1/board HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {server.token}"
                       "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{".encode())
    return connection


def test_a_second_signal_stops_the_server_at_once_and_quietly(server):
    # A second SIGTERM or Ctrl-C (an impatient person, or `timeout`, which signals the child and then its
    # whole group) skipped the app's shutdown, and uvicorn printed a CancelledError traceback. A request in
    # flight holds the server in its grace after the first signal, so the second surely comes during it (an
    # idle server may stop before any pause a test could take).
    assert server.get("/api/v1/status").status == 200
    connection = unfinished_post(server)
    assert server.get("/api/v1/status").status == 200  # the server has read the unfinished request's head
    server.proc.send_signal(signal.SIGTERM)
    time.sleep(0.05)  # two signals sent at once are delivered as one
    assert server.proc.poll() is None, "the first signal had stopped the server already"
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=60) == 0
    assert "Traceback" not in server.proc.stderr.read()
    connection.close()


def test_a_request_the_stop_cuts_off_is_answered_and_no_traceback_printed(server):
    connection = unfinished_post(server)
    assert server.get("/api/v1/status").status == 200
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=60) == 0
    assert "Traceback" not in server.proc.stderr.read()
    answer = b""
    while chunk := connection.recv(4096):
        answer += chunk
    connection.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503"), answer
    assert json.loads(body)["error"] == "server_stopping"


class Shape:
    """A record-shaped result: it publishes its own schema."""

    @classmethod
    def json_schema(cls) -> dict:
        return {"type": "object", "title": "Shape", "properties": {"id": {"type": "string"}}, "required": ["id"]}


class RecordApi:
    def one(self) -> Shape: ...

    def many(self) -> list[Shape]: ...

    def plain(self) -> dict: ...


def test_response_schemas_come_from_the_records_the_api_returns():
    from git_lanes.http import openapi

    table = tuple(routes.Route("GET", f"/{name}", name, name, lambda m, p: m(), "t") for name in ("one", "many",
                                                                                                 "plain"))
    paths = openapi.document(table, "/api/v1", "0", RecordApi)["paths"]
    schema = {name: paths[f"/api/v1/{name}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
              for name in ("one", "many", "plain")}
    assert schema["one"] == Shape.json_schema()
    assert schema["many"] == {"type": "array", "items": Shape.json_schema()}
    assert schema["plain"] == {"type": "object"}


def test_open_hands_the_one_time_link_to_the_browser(repo, tmp_path):
    """`--open` goes through Python's webbrowser, which runs $BROWSER: here a script noting the URL."""
    noted = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys, pathlib\npathlib.Path({str(noted)!r}).write_text(sys.argv[1])\n")
    with Server(repo, "--open", env={"BROWSER": f"{sys.executable} {browser} %s"}) as server:
        while not noted.exists():
            assert server.proc.poll() is None
            threading.Event().wait(0.05)
        assert noted.read_text() == f"{server.url}/?token={server.token}"


def test_open_with_a_token_of_url_characters_hands_a_link_that_signs_in(repo, tmp_path):
    """A token given with --token went into the link as it was: `+` read back as a space, `&` ended it and
    `#` hid the rest from the server, so the page `--open` opened was refused."""
    token = "p+ss&w%rd#1234567890 "[:-1]
    noted = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys, pathlib\npathlib.Path({str(noted)!r}).write_text(sys.argv[1])\n")
    with Server(repo, "--open", "--token", token, env={"BROWSER": f"{sys.executable} {browser} %s"}) as server:
        while not noted.exists():
            assert server.proc.poll() is None
            threading.Event().wait(0.05)
        link = noted.read_text()
        assert link.startswith(server.url + "/?token=")
        signed_in = server.get(link.removeprefix(server.url))
        assert (signed_in.status, signed_in.headers.get("location")) == (303, "/"), signed_in.body


def test_an_unknown_task_status_is_a_400_as_in_every_face(server, api):
    """A misspelt status lists nothing: that is a wrong answer, not an empty one (the CLI and MCP refuse it)."""
    from git_lanes.errors import UserError

    reply = server.get("/api/v1/tasks?status=bogus")
    assert (reply.status, reply.json["error"]) == (400, "usage")
    with pytest.raises(UserError) as refused:
        api.task_list(status="bogus")
    assert refused.value.code == "invalid_status"


def test_a_gate_running_for_an_accept_freezes_neither_reads_nor_other_writes(api, repo, tmp_path):
    # Every write waited behind one lock while a gate ran, each waiting on a thread of the event loop's
    # small pool (6 on 2 cores): with a few writes queued behind a slow gate, GET /status waited for the gate
    # too (23.6 s behind a 25 s gate), and a board post waited out the gate it has nothing to do with.
    started, release = tmp_path / "gate-started", tmp_path / "release-gate"
    code = (f"import pathlib, time; pathlib.Path({str(started)!r}).touch()\n"
            f"while not pathlib.Path({str(release)!r}).exists(): time.sleep(0.05)")
    declare(api, repo, gate("slow", code))
    api.lane_create("feat")
    (workspace(repo, "feat") / "f.txt").write_text("f\n")
    proposal = api.commit("Add f", "coder-1", lane="feat")["id"]
    with Server(repo) as server:
        accepting = threading.Thread(target=lambda: server.post(f"/api/v1/transitions/{proposal}/accept"))
        accepting.start()
        try:
            for _ in range(600):
                if started.exists():
                    break
                time.sleep(0.1)
            assert started.exists(), "the gate never started"
            posts = [threading.Thread(target=server.post, args=("/api/v1/board", {"text": f"p{n}", "agent": "a1"}))
                     for n in range(8)]
            for post in posts:
                post.start()
            began = time.monotonic()
            assert server.get("/api/v1/status").status == 200
            for post in posts:
                post.join(timeout=60)
            waited = time.monotonic() - began
            assert not release.exists() and all(not post.is_alive() for post in posts), waited
            assert len(server.get("/api/v1/board?limit=100").json["posts"]) == 8
        finally:
            release.touch()
            accepting.join(timeout=120)
    assert api.show(proposal)["status"] == "accepted"


def test_a_repository_removed_under_the_server_is_410_and_ends_the_live_updates(server, repo, tmp_path):
    """Removed or moved while the server ran, the repository made every route a 500 ("FileNotFoundError: ...")
    and the watcher log a traceback a second for as long as the server ran, while pages stayed "live"."""
    received, listener = listen(server)
    repo.rename(tmp_path / "moved")
    listener.join(60)
    assert not listener.is_alive(), "the stream went on"
    gone = {"error": "repository_gone",
            "message": f"the repository {repo} is gone: it was removed or moved after it was opened",
            "hint": "open it again where it is now (a server holding it open must be restarted there)"}
    assert received[-2:] == [{"kind": "gone", **gone}, {"kind": "end"}]
    for method, path in (("GET", "/api/v1/status"), ("GET", "/api/v1/lanes"), ("POST", "/api/v1/lanes"),
                         ("GET", "/api/v1/events")):
        reply = server.request(method, path, {"name": "x"} if method == "POST" else None, token=server.token)
        assert (reply.status, reply.json) == (410, gone), path
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=60) == 0
    log = server.proc.stderr.read()
    assert log.splitlines() == [f"{gone['message']}; live updates stop"]
