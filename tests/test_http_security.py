"""The security model away from loopback, checked in-process (no socket is bound off loopback in tests),
and what `git lanes serve` refuses before it binds anything."""

from __future__ import annotations

import socket

import pytest
from conftest import run_cli
from starlette.testclient import TestClient
from test_http_api import sample_body, sample_path, seeded  # noqa: F401  (fixture)

from git_lanes.errors import UserError
from git_lanes.http import routes
from git_lanes.http.app import create_app
from git_lanes.http.security import MIN_TOKEN, choose_token, is_loopback

OFF_LOOPBACK = "192.0.2.10"  # TEST-NET-1: documentation only, never reached
TOKEN = "a-token-of-thirty-two-characters"


@pytest.fixture
def client(repo, seeded):  # noqa: F811
    from git_lanes.api import Lanes

    app = create_app(lambda: Lanes(repo), TOKEN, OFF_LOOPBACK)
    return TestClient(app, base_url=f"http://{OFF_LOOPBACK}:7331")


def test_off_loopback_every_route_needs_the_token(client, seeded):  # noqa: F811
    for route in routes.ROUTES:
        reply = client.request(route.method, sample_path(route, seeded),
                               json=sample_body(route) if route.writes else None)
        assert (reply.status_code, reply.json()["error"]) == (401, "unauthorized"), route.path
    assert client.get("/api/v1/events").status_code == 401
    assert client.get("/api/v1/session").status_code == 401


def test_off_loopback_with_the_token_every_route_answers(client, seeded):  # noqa: F811
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    for route in routes.ROUTES:
        reply = client.request(route.method, sample_path(route, seeded), headers=bearer,
                               json=sample_body(route) if route.writes else None)
        assert reply.status_code in (200, 400, 404, 409, 422), (route.path, reply.text)
    wrong = client.get("/api/v1/status", headers={"Authorization": "Bearer " + TOKEN[:-1] + "x"})
    assert wrong.status_code == 401


def test_the_page_shell_and_schema_need_no_token_but_hold_no_data(client):
    assert client.get("/").status_code == 200
    assert client.get("/api/openapi.json").status_code == 200
    assert client.get("/static/app.js").status_code == 200


@pytest.mark.parametrize("token", ["", "   ", "short"])
def test_off_loopback_without_a_real_token_is_refused_at_start(repo, token):
    result = run_cli("serve", "--host", OFF_LOOPBACK, "--port", "0", "--token", token, cwd=repo, timeout=60)
    assert result.code == 1 and result.out == ""
    assert result.err.startswith("git-lanes: error:") and "Traceback" not in result.err
    assert "token" in result.err.splitlines()[0]


def test_a_token_is_generated_when_none_is_given():
    token, generated = choose_token("0.0.0.0", None, None)
    assert generated and len(token) >= MIN_TOKEN
    assert choose_token("0.0.0.0", None, None)[0] != token
    assert choose_token("127.0.0.1", "short", None) == ("short", False)  # loopback: the person's choice


def test_token_file(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    assert choose_token(OFF_LOOPBACK, None, str(path)) == (TOKEN, False)
    with pytest.raises(UserError):
        choose_token(OFF_LOOPBACK, None, str(tmp_path / "missing"))
    with pytest.raises(UserError):
        choose_token(OFF_LOOPBACK, TOKEN, str(path))


def test_loopback_names():
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.9.1", "localhost", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", OFF_LOOPBACK, "example.com"))


def test_a_port_in_use_is_one_line(repo):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        result = run_cli("serve", "--port", port, cwd=repo, timeout=60)
    assert result.code == 1
    assert result.err.splitlines()[0] == f"git-lanes: error: port {port} on 127.0.0.1 is already in use"
    assert "Traceback" not in result.err


def test_outside_a_lanes_repository_is_one_line(tmp_path):
    result = run_cli("serve", "--port", "0", cwd=tmp_path, timeout=60)
    assert result.code == 1 and result.err.startswith("git-lanes: error: not a git repository")


def test_token_and_token_file_together_is_a_usage_error(repo, tmp_path):
    (tmp_path / "token").write_text(TOKEN)
    result = run_cli("serve", "--token", TOKEN, "--token-file", str(tmp_path / "token"), "--json", cwd=repo,
                     timeout=60)
    assert result.code == 2 and result.json["error"] == "usage"
