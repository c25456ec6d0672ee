"""Lane setup through the API: ports reserved in the ledger, the trunk's `[setup]` applied to a workspace,
and a lane's variables for a shell or an agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from git_lanes.api.held import held
from git_lanes.domain.context import Context
from git_lanes.errors import LanesError

if TYPE_CHECKING:
    from git_lanes import ledger
    from git_lanes.domain import lane_setup, lanes, ports
    from git_lanes.model.lane_setup import Setup, SetupReport


@held
class SetupApi:
    """Mixed into `Lanes`, next to LedgerApi, which provides `_append`, `_state` and `_actor`."""

    ctx: Context
    _append: Callable[[str, str, dict[str, Any]], dict[str, Any]]
    _state: Callable[[], ledger.State]
    _actor: Callable[[str | None], str]

    def lane_setup(self, lane: str, *, actor: str | None = None) -> dict[str, Any]:
        """(Re)apply the trunk's `[setup]` to `lane`'s workspace: reserve its ports, copy, run. A failing
        command is reported (`status: failed`), never raised: the lane stays usable."""
        from git_lanes.domain import lane_setup, lanes

        workspace = lanes.require_workspace(self.ctx, lane)
        return self._set_up(lane_setup.load(self.ctx), lane, workspace, actor).to_dict()

    def _set_up(self, setup: Setup, lane: str, workspace: Path, actor: str | None) -> SetupReport:
        from git_lanes.domain import lane_setup
        from git_lanes.model.lane_setup import SetupReport

        if setup.empty:
            return SetupReport(lane, "none")
        try:
            held = self._reserve_ports(lane, setup, actor)
        except LanesError as exc:
            return SetupReport(lane, "failed", message=exc.message + (f" ({exc.hint})" if exc.hint else ""))
        return lane_setup.apply(self.ctx, setup, lane, workspace, held)

    def _reserve_ports(self, lane: str, setup: Setup, actor: str | None) -> tuple[int, ...]:
        from git_lanes.domain import lanes, ports

        state = self._state()
        if not setup.ports and not ports.reserved(state, lane):
            return ()
        live = set(lanes.lane_names(self.ctx))
        gone = sorted(other for other in ports.held(state) if other not in live and other != lane)
        result = self._append("ports.reserve", self._actor(actor), {
            "lane": lane, "count": setup.ports, "range": list(setup.port_range), "gone": gone})
        return tuple(result["ports"])

    def _release_ports(self, lane: str, actor: str | None = None) -> list[int]:
        from git_lanes.domain import ports

        if not ports.reserved(self._state(), lane):
            return []
        released: list[int] = self._append("ports.release", self._actor(actor), {"lane": lane})["released"]
        return released

    def lane_env(self, lane: str) -> dict[str, Any]:
        """The lane's variables from the trunk's `[setup] env`, its ports filled in."""
        from git_lanes.domain import lane_setup, lanes, ports

        lanes.lane_head(self.ctx, lane)
        setup = lane_setup.load(self.ctx)
        held = ports.ports_of(self._state(), lane)
        workspace = lanes.workspace_path(self.ctx, lane) or lanes.default_workspace(self.ctx, lane)
        return {"lane": lane, "ports": list(held),
                "env": lane_setup.environment(self.ctx, setup, lane, workspace, held)}
