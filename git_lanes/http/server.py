"""Running the app: bind first (so a port in use is one line, and port 0 tells which port it got), then
serve with uvicorn; SIGTERM or Ctrl-C ends every live stream at once and the process within 2 s."""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from git_lanes.errors import UserError

# In-flight requests get this long to finish on shutdown; streams end at once.
GRACE_SECONDS = 1.0


@dataclass(frozen=True)
class Bound:
    sock: socket.socket
    host: str
    port: int

    def url(self, path: str = "/") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"


def bind(host: str, port: int) -> Bound:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(f"cannot serve on {host!r}: {exc.strerror}", code="bad_host") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(f"port {port} on {host} is already in use", code="port_in_use",
                            hint="pass --port with another number (0 picks a free one)") from None
        raise UserError(f"cannot serve on {host}:{port}: {exc.strerror or exc}", code="bind_failed") from None
    sock.set_inheritable(True)
    return Bound(sock, host, sock.getsockname()[1])


def serve(app: Any, bound: Bound, on_stop: Callable[[], None]) -> None:
    """Serve until SIGTERM or Ctrl-C. `on_stop` runs on the event loop as the signal arrives."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            # uvicorn re-raises the signal after a graceful stop, which would make a clean stop look like a
            # crash; the stop is handled here, so it is not recorded.
            self.force_exit = self.should_exit
            self.should_exit = True
            try:
                asyncio.get_running_loop().call_soon_threadsafe(on_stop)
            except RuntimeError:
                on_stop()

    async def quiet_when_forced(scope: Any, receive: Any, send: Any) -> None:
        # A second signal forces the exit: uvicorn skips the app's shutdown and the event loop's teardown
        # cancels the lifespan, which Starlette reports as a failed shutdown and uvicorn prints as a
        # traceback. The streams ended on the first signal (`on_stop`): there is nothing to report.
        async def send_quietly(message: Any) -> None:
            if message["type"] == "lifespan.shutdown.failed" and server.force_exit:
                message = {"type": message["type"]}
            await send(message)

        if scope["type"] != "lifespan":
            try:
                await app(scope, receive, send)
            except asyncio.CancelledError:
                # A request still open when the grace after the first signal ran out (a client that never
                # sent its whole body, say) is cancelled by uvicorn, which printed that as a traceback. The
                # stop was asked for: the client is told so, if its answer has not begun.
                if not server.should_exit:
                    raise
                await _answer_stopping(send)
            return
        try:
            await app(scope, receive, send_quietly)
        except asyncio.CancelledError:
            if not server.force_exit:
                raise

    config = uvicorn.Config(quiet_when_forced, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=GRACE_SECONDS, lifespan="on", ws="none")
    server = Server(config)
    server.run(sockets=[bound.sock])


async def _answer_stopping(send: Callable[[Any], Awaitable[None]]) -> None:
    body = b'{"error": "server_stopping", "message": "the server stopped before this request was answered"}'
    try:
        await send({"type": "http.response.start", "status": 503,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})
    except Exception:  # noqa: BLE001 - its answer had begun, or the connection is gone: nothing more to say
        pass

