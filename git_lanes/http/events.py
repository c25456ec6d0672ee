"""One watcher, many listeners: the server polls the shared change feed (ref moves) and fans each batch out
to every open event stream. Workspace edits move no ref, so while someone listens the unsnapshotted edits
are compared every second too and reported as a `workspace` event; where that comparison is slow (many
files, many workspaces) it runs less often, so it never takes more than a tenth of a core."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from git_lanes.errors import RepositoryGone

POLL_SECONDS = 0.1
DIRTY_EVERY = 1.0
DIRTY_SHARE = 0.1  # of the time, at most, spent comparing workspaces
KEEPALIVE_SECONDS = 15.0
# A listener this far behind (a stalled tab) loses the oldest batches rather than growing without bound.
MAX_QUEUED = 100
log = logging.getLogger("git_lanes.http")


class Broadcaster:
    def __init__(self, poll: Callable[[], list[dict]], dirty: Callable[[], Any]) -> None:
        self._poll = poll
        self._dirty = dirty
        self._listeners: set[asyncio.Queue] = set()
        self._closed = False
        self._task: asyncio.Task | None = None
        self.batches = 0
        self.gone: RepositoryGone | None = None  # the repository went: nothing more to watch

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self.close()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    def close(self) -> None:
        """End every stream now (shutdown): each listener gets the end marker."""
        self._closed = True
        for queue in list(self._listeners):
            _offer(queue, None)

    @property
    def listeners(self) -> int:
        return len(self._listeners)

    async def _run(self) -> None:
        dirty_seen: Any = None
        next_dirty = 0.0
        loop = asyncio.get_running_loop()
        while not self._closed:
            await asyncio.sleep(POLL_SECONDS)
            try:
                # Polled with nobody listening too, so a new listener hears what changes after it came.
                events = await asyncio.to_thread(self._poll)
                if not self._listeners:
                    dirty_seen, next_dirty = None, 0.0
                    continue
                if loop.time() >= next_dirty:
                    next_dirty = loop.time() + DIRTY_EVERY  # a failing comparison is retried no sooner
                    started = loop.time()
                    dirty_now = await asyncio.to_thread(self._dirty)
                    took = loop.time() - started
                    next_dirty = loop.time() + max(DIRTY_EVERY, took / DIRTY_SHARE)
                    if dirty_seen is not None and dirty_now != dirty_seen:
                        events.append({"kind": "workspace"})
                    dirty_seen = dirty_now
            except RepositoryGone as exc:
                # Said once, to the log and to every page, which then stops listening; not a traceback a
                # second for as long as the server runs.
                log.warning("%s; live updates stop", exc.message)
                self.gone = exc
                self.publish([{"kind": "gone", **exc.to_dict()}])
                self.close()
                return
            except Exception:  # noqa: BLE001 - one bad look (a damaged index, a ref mid-repair) must not end
                log.exception("watching the repository failed; still watching")  # every page's live updates
                events = [{"kind": "ref"}]  # something changed that could not be read: pages reload what they show
            if events:
                self.publish(events)

    def publish(self, events: list[dict]) -> None:
        self.batches += 1
        for queue in list(self._listeners):
            _offer(queue, events)

    async def stream(self) -> AsyncIterator[bytes]:
        """One listener's server-sent events, until it disconnects or the server shuts down."""
        queue: asyncio.Queue = asyncio.Queue(MAX_QUEUED)
        self._listeners.add(queue)
        try:
            yield b"retry: 1000\nevent: hello\ndata: {}\n\n"
            while not self._closed:
                try:
                    events = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except asyncio.TimeoutError:
                    yield b": keepalive\n\n"
                    continue
                if events is None:
                    return
                kind = "gone" if events[0]["kind"] == "gone" else "change"
                yield f"event: {kind}\ndata: {json.dumps({'events': events}, default=str)}\n\n".encode()
        finally:
            self._listeners.discard(queue)


def _offer(queue: asyncio.Queue, item: Any) -> None:
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(item)
