"""`git lanes serve`: the dashboard and the REST API (git_lanes/http)."""

from __future__ import annotations

import json
import os
import sys
from urllib.parse import quote

import click

from git_lanes.cli import Command
from git_lanes.cli.output import fail, json_option, open_api
from git_lanes.errors import LanesError


@click.command(cls=Command)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback requires the token for every request.")
@click.option("--port", default=7331, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0 picks a free one).")
@click.option("--token", metavar="T", help="The token to require (default: a new random one, printed).")
@click.option("--token-file", metavar="F", type=click.Path(dir_okay=False),
              help="Read the token from file F.")
@click.option("--open", "open_browser", is_flag=True, help="Open the dashboard in a web browser.")
@json_option
def serve(host: str, port: int, token: str | None, token_file: str | None, open_browser: bool,
          as_json: bool) -> None:
    """Serve the live dashboard and the REST API of this repository until Ctrl-C or SIGTERM.

    The dashboard (/) shows lanes with ahead/behind, unsnapshotted edits, pending proposals (accept or
    reject), an overlap radar of lanes that would collide, agents, the task graph, the board, history and
    cost, updating live. The API is under /api/v1 (OpenAPI document at /api/openapi.json; events at
    /api/v1/events). On loopback (the default) anyone on this machine may read; every write needs the token,
    as `Authorization: Bearer T` or through the printed ?token= link, which lets the browser act. Off
    loopback every request needs it. A generated token is printed.

    \b
    Example:
      git lanes serve --open
      git lanes serve --host 0.0.0.0 --port 8080 --token-file ~/.config/lanes-token
    """
    if token is not None and token_file is not None:
        raise click.UsageError("pass --token or --token-file, not both")
    try:
        from git_lanes.http.security import choose_token, is_loopback

        chosen, generated = choose_token(host, token, token_file)
        from git_lanes.http.app import create_app
        from git_lanes.http.server import bind, serve as run_server

        root = os.getcwd()
        bound = bind(host, port)  # first: the session cookie is named after the port it got
        app = create_app(lambda: open_api(root), chosen, host, bound.port)
    except LanesError as exc:
        fail(exc, as_json)
        return
    # quoted: a given token may hold `+`, `&`, `#` or `%`, which a query string would read otherwise
    link = bound.url(f"/?token={quote(chosen, safe='')}")
    record = {"url": bound.url(), "host": bound.host, "port": bound.port, "loopback": is_loopback(host),
              "token_generated": generated, **({"token": chosen, "link": link} if generated else {})}
    if as_json:
        click.echo(json.dumps(record, sort_keys=True))
    else:
        click.echo(f"serving {bound.url()} (API {bound.url('/api/v1')}; Ctrl-C stops)")
        if generated:
            click.echo(f"token {chosen}\nopen {link} to act from the dashboard")
        else:
            click.echo(f"open {bound.url('/?token=YOUR_TOKEN')} to act from the dashboard")
    sys.stdout.flush()
    if open_browser:
        import webbrowser

        webbrowser.open(link)
    run_server(app, bound, app.state.broadcaster.close)
