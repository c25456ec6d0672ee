"""Who may read and who may write. Loopback is the default bind, and there anyone on this machine may read
(as with `git log`); any other address requires the token for every route. Writing always requires the
token, a non-GET method, and a request from the page's own origin.

The token arrives as `Authorization: Bearer T` (tools) or as a cookie the server set when the browser
opened the one-time `?token=T` link, after which the page redirects to a URL without it, so the token is
not left in the address bar or history. The cookie holds a digest of the token, never the token itself,
and is HttpOnly and SameSite=Strict. Every comparison is constant-time. On loopback the Host header must
name a loopback address, so a page on another site cannot reach the server by pointing its own domain at
127.0.0.1 (DNS rebinding)."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

from git_lanes.errors import UserError

COOKIE = "git_lanes_session"
# A token anyone can guess protects nothing; a generated one has 256 bits.
MIN_TOKEN = 16
LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def choose_token(host: str, token: str | None, token_file: str | None) -> tuple[str, bool]:
    """The token to require and whether it was generated. Off loopback a given token must be long enough."""
    if token is not None and token_file is not None:
        raise UserError("pass --token or --token-file, not both", code="usage")
    if token_file is not None:
        try:
            token = Path(token_file).read_text().strip()
        except OSError as exc:
            raise UserError(f"cannot read the token file {token_file}: {exc.strerror or exc}",
                            code="token_file") from None
    if token is None:
        return secrets.token_urlsafe(32), True
    token = token.strip()
    if not token or any(c.isspace() or not c.isprintable() for c in token):
        raise UserError("the token must be one word of printable characters", code="invalid_token",
                        hint="omit --token to have one generated")
    if not is_loopback(host) and len(token) < MIN_TOKEN:
        raise UserError(f"serving on {host}, off loopback, needs a token of at least {MIN_TOKEN} characters",
                        code="weak_token", hint="omit --token to have one generated and printed")
    return token, False


@dataclass(frozen=True)
class Verdict:
    status: int
    code: str
    message: str
    hint: str | None = None


class Guard:
    def __init__(self, token: str, host: str, port: int | None = None) -> None:
        self._token = token.encode()
        self.loopback = is_loopback(host)
        self.cookie_value = hmac.new(self._token, b"git-lanes dashboard session", hashlib.sha256).hexdigest()
        # A browser sends a host's cookies to all its ports: named after the port, each server on the host
        # keeps its own session rather than the last link opened replacing every other server's.
        self.cookie_name = f"{COOKIE}_{port}" if port else COOKIE

    def token_matches(self, offered: str | None) -> bool:
        return offered is not None and hmac.compare_digest(offered.encode(), self._token)

    def authenticated(self, headers: dict[str, str], cookies: dict[str, str]) -> bool:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self.token_matches(value.strip()):
            return True
        cookie = cookies.get(self.cookie_name)
        return cookie is not None and hmac.compare_digest(cookie.encode(), self.cookie_value.encode())

    def check(self, method: str, headers: dict[str, str], cookies: dict[str, str], scheme: str) -> Verdict | None:
        """None when the request may go on, else why not."""
        host = headers.get("host", "")
        if self.loopback and not is_loopback(_hostname(host)):
            return Verdict(403, "forbidden_host", f"Host {host!r} is not a loopback name; this server serves "
                                                  "loopback only", "open it as http://127.0.0.1:PORT/ or "
                                                  "http://localhost:PORT/")
        writing = method not in ("GET", "HEAD", "OPTIONS")
        if writing or not self.loopback:
            if not self.authenticated(headers, cookies):
                return Verdict(401, "unauthorized", "this needs the token",
                               "send `Authorization: Bearer TOKEN`, or open the ?token= link `git lanes serve` "
                               "printed")
        if writing and not same_origin(headers, scheme):
            return Verdict(403, "cross_origin", "a state-changing request must come from the dashboard's own "
                                                "origin",
                           "send the request from the dashboard's page, or from a tool without an Origin header")
        return None


def same_origin(headers: dict[str, str], scheme: str) -> bool:
    """A browser names where a request comes from (Origin, Sec-Fetch-Site); it must be this server. A tool
    sends neither and authenticates with the bearer header, which a page on another site cannot set
    without a CORS preflight this server never grants."""
    origin = headers.get("origin")
    if origin is not None and origin != f"{scheme}://{headers.get('host', '')}":
        return False
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    if origin is None and site is None and "authorization" not in headers:
        return False  # a cookie alone, from something that hides where it came from
    return True


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host
