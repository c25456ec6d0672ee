"""Starting `git lanes mcp`. Importing the MCP SDK takes about a second, and an agent CLI waits for the
answer to `initialize` before it goes on; so over stdio the answer goes out before the SDK is imported.

Two relay threads stand between the wire and the SDK: the inbound one answers the first message when it is a
well-formed `initialize` request (with exactly what the SDK answers: same versions, capabilities, server
info) and hands every line on; the outbound one drops the SDK's own answer to that request and copies the
rest. The SDK then serves through its public stdio transport, on pipes in place of fds 0 and 1. This module
uses the standard library only until the relays run."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterable
from typing import BinaryIO

from git_lanes import __version__
from git_lanes.mcp import INSTRUCTIONS, NAME

# The SDK's HANDSHAKE_PROTOCOL_VERSIONS and the capabilities its MCPServer declares (tools, resources and
# prompts, none of them changing); tests/test_mcp_start.py checks both against the SDK's own answer.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CAPABILITIES = {"prompts": {"listChanged": False}, "resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False}}
HOST = "127.0.0.1"
# Written after the SDK stopped: the SDK never closes its copy of fd 1, so the outbound pipe never ends by
# itself, and everything the SDK wrote comes out of the pipe before this line.
LAST_LINE = b"\x00git-lanes: the SDK stopped\n"


def early_answer(message: object) -> dict | None:
    """The SDK's answer to `message` if it is a well-formed `initialize` request, else None (the SDK answers
    anything else itself, errors included)."""
    if not isinstance(message, dict) or message.get("method") != "initialize" or "id" not in message:
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return None
    client, requested = params.get("clientInfo"), params.get("protocolVersion")
    if not isinstance(requested, str) or not isinstance(client, dict) \
            or not all(isinstance(client.get(key), str) for key in ("name", "version")):
        return None
    version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    return {"jsonrpc": "2.0", "id": message["id"],
            "result": {"capabilities": CAPABILITIES, "instructions": INSTRUCTIONS, "protocolVersion": version,
                       "serverInfo": {"name": NAME, "version": __version__}}}


def unreadable(line: bytes) -> bytes | None:
    """None when the SDK can read `line`; else the JSON-RPC error to answer it with (empty for a notification,
    which gets no answer). The SDK drops a message it cannot parse without a word, so a request carrying,
    say, a lone surrogate or JSON nested too deep would leave its client waiting forever."""
    from mcp.types import jsonrpc_message_adapter
    from pydantic import ValidationError

    text = line.decode("utf-8", errors="replace")  # as the SDK's stdio transport reads it
    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
        return None
    except ValidationError as exc:
        unparsed = any(error["type"] == "json_invalid" for error in exc.errors())
        problem = "; ".join(str(error["msg"]) for error in exc.errors()[:3])
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        message = None
    ident = message.get("id") if isinstance(message, dict) else None
    if isinstance(message, dict) and "method" in message and ident is None:
        return b""
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        ident = None
    code, what = (-32700, "Parse error") if unparsed else (-32600, "Invalid Request")
    answer = {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": f"{what}: {problem}"}}
    return json.dumps(answer, separators=(",", ":")).encode()


class Relay:
    """The wire (the process's original stdin and stdout) on one side, the SDK's fds 0 and 1 on the other."""

    def __init__(self) -> None:
        self.wire_in = os.fdopen(os.dup(0), "rb")
        self.wire_out = os.fdopen(os.dup(1), "wb")
        inbound_read, self._inbound_write = os.pipe()
        self._outbound_read, outbound_write = os.pipe()
        os.dup2(inbound_read, 0)
        os.dup2(outbound_write, 1)
        os.close(inbound_read)
        self._outbound_write = outbound_write
        self._lock = threading.Lock()
        self._answered: dict[str, dict] = {}  # request id (as JSON) -> the result sent early
        self.sdk_loaded = threading.Event()
        self._inbound = threading.Thread(target=self._relay_in, name="mcp-wire-in", daemon=True)
        self._outbound = threading.Thread(target=self._relay_out, name="mcp-wire-out", daemon=True)
        self._inbound.start()
        self._outbound.start()

    def _send(self, line: bytes) -> None:
        with self._lock:
            self.wire_out.write(line if line.endswith(b"\n") else line + b"\n")
            self.wire_out.flush()

    def _relay_in(self) -> None:
        first = True
        with os.fdopen(self._inbound_write, "wb", buffering=0) as sdk:
            for line in self.wire_in:
                if first:
                    first = False
                    self._answer_early(line)
                elif not line.strip():
                    continue
                else:
                    # Importing the SDK here while the main thread imports it would break its circular imports.
                    self.sdk_loaded.wait()
                    refusal = unreadable(line)
                    if refusal is not None:
                        if refusal:
                            self._send(refusal)
                        continue
                try:
                    sdk.write(line)
                except BrokenPipeError:  # the SDK stopped serving
                    return

    def _answer_early(self, line: bytes) -> None:
        try:
            answer = early_answer(json.loads(line))
        except ValueError:
            return
        if answer is not None:
            self._answered[json.dumps(answer["id"])] = answer["result"]
            self._send(json.dumps(answer, separators=(",", ":")).encode())

    def _relay_out(self) -> None:
        with os.fdopen(self._outbound_read, "rb") as sdk:
            for line in sdk:
                if line == LAST_LINE:
                    return
                if not line.lstrip().startswith(b"{"):
                    # Stray output (a print before the SDK took fd 1 over) would break the protocol.
                    sys.stderr.buffer.write(line)
                    sys.stderr.flush()
                elif not self._answered_already(line):
                    self._send(line)

    def _answered_already(self, line: bytes) -> bool:
        if not self._answered:
            return False
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or ("result" not in message and "error" not in message):
            return False
        sent = self._answered.pop(json.dumps(message.get("id")), None)
        if sent is None:
            return False
        if message.get("result") != sent:
            print(f"git-lanes: warning: the SDK answered initialize differently from the early answer: "
                  f"{json.dumps(message)}", file=sys.stderr)
        return True

    def hang_up(self) -> None:
        """End the SDK's input as if the client had left, so it stops serving. Its stdin is read on a worker
        thread that a cancellation (Ctrl-C) waits for; only an end of input ends that read. The pipe's write
        end is replaced by /dev/null rather than closed, so the inbound relay, still holding its number,
        never writes into whatever file might be opened under that number next."""
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._inbound_write, inheritable=False)
        finally:
            os.close(null)

    def close(self) -> None:
        """After the SDK stopped: let the outbound relay copy what is left, then stop."""
        os.write(self._outbound_write, LAST_LINE)
        os.close(self._outbound_write)
        self._outbound.join(timeout=10)
        if self._outbound.is_alive():
            print("git-lanes: warning: the MCP relay did not finish writing", file=sys.stderr)


def serve(path: str | os.PathLike, agent: str | None, toolsets: Iterable[str], http_port: int | None) -> None:
    """Serve MCP over stdio (or, with `http_port`, streamable HTTP on 127.0.0.1) until the client leaves."""
    relay = Relay() if http_port is None else None
    try:
        import anyio

        from git_lanes.mcp.binding import Binding
        from git_lanes.mcp.server import build

        if relay is not None:
            relay.sdk_loaded.set()
        server = build(Binding(path, agent), toolsets)
        if relay is not None:
            _serve_stdio(server, relay)
        else:
            anyio.run(_serve_http, server, http_port)
    finally:
        if relay is not None:
            relay.close()


def _serve_stdio(server: object, relay: Relay) -> None:
    """Serve over stdio; Ctrl-C (SIGINT) ends the SDK's input, so the server stops as when its client leaves,
    then stops the command as Ctrl-C does (KeyboardInterrupt)."""
    import signal

    import anyio

    interrupted = threading.Event()

    def on_interrupt(signum: int, frame: object) -> None:
        interrupted.set()
        relay.hang_up()

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        anyio.run(server.run_stdio_async)  # type: ignore[attr-defined]
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted.is_set():
        raise KeyboardInterrupt


async def _serve_http(server: object, port: int) -> None:
    """Streamable HTTP on 127.0.0.1 only; port 0 lets the OS choose, and the address is printed either way."""
    import socket

    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((HOST, port))
    except OSError as exc:
        from git_lanes.errors import UserError

        raise UserError(f"cannot listen on {HOST}:{port}: {exc.strerror}", code="port_unavailable",
                        hint="choose another port, or 0 to let the system choose") from None
    app = server.streamable_http_app(host=HOST)  # type: ignore[attr-defined]
    print(f"git-lanes: MCP (streamable HTTP) at http://{HOST}:{listener.getsockname()[1]}/mcp", file=sys.stderr,
          flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[listener])
