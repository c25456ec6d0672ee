"""The one surface every face calls. Methods take plain values and return plain records.

Each capability contributes a mixin in its own module; `Lanes` unites them. The type checker sees that union
below. At run time `Lanes` is CoreApi (which every command needs to open the repository) plus one small
descriptor per other attribute, which imports the attribute's mixin module on first use and puts the mixin's
attributes in its place: a command loads only the modules of the methods it calls (issue 15), while every
method stays visible to `dir`, `getattr` and `inspect` (the MCP and HTTP faces derive their schemas so).

Which module holds each attribute is `owners.py`, generated from the union: after adding a mixin (import it
and add it to the bases below) or a method, run `python -m git_lanes.api.mixins`."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import …`: the light sync loads no typing
if TYPE_CHECKING:
    from typing import Any

    from git_lanes.api.board import BoardApi
    from git_lanes.api.budgets import BudgetsApi
    from git_lanes.api.core import CoreApi
    from git_lanes.api.dispatch import DispatchApi
    from git_lanes.api.doctor import DoctorApi
    from git_lanes.api.integration import IntegrationApi
    from git_lanes.api.lane_setup import SetupApi
    from git_lanes.api.ledger import LedgerApi
    from git_lanes.api.oplog import OplogApi
    from git_lanes.api.overview import OverviewApi
    from git_lanes.api.pipeline import PipelineApi
    from git_lanes.api.promotion import PromotionApi
    from git_lanes.api.publishing import PublishingApi
    from git_lanes.api.running import RunningApi
    from git_lanes.api.runs import RunsApi
    from git_lanes.api.spawn import SpawnApi
    from git_lanes.api.supervise import SuperviseApi
    from git_lanes.api.sync import SyncApi
    from git_lanes.api.tasks import TasksApi
    from git_lanes.api.upkeep import UpkeepApi
    from git_lanes.api.worktrees import WorktreeApi

    class Lanes(CoreApi, SyncApi, PromotionApi, IntegrationApi, TasksApi, BoardApi, LedgerApi, OverviewApi,
                WorktreeApi, RunsApi, DoctorApi, SetupApi, SpawnApi, RunningApi, SuperviseApi, PipelineApi,
                BudgetsApi, PublishingApi, UpkeepApi, OplogApi, DispatchApi):
        """A repository opened for lanes: the CLI, MCP server, SDK, hooks and HTTP faces all call this."""
else:
    import _thread  # loaded with the interpreter: `threading` would cost the light sync an import

    # Threads that first ask for `Lanes` at once must get one class: an instance of a second one would load
    # its mixins into the first and look its own descriptor up again, for ever. Re-entrant: a module imported
    # while `Lanes` is made may ask for it.
    _MAKING = _thread.RLock()

    def __getattr__(name: str) -> Any:
        # `Lanes` is made on first use, not when the package loads: the light sync (api/sync_light.py) lives
        # in this package and needs none of CoreApi's imports (`re` and `enum` through model.ids, contextlib,
        # collections: ~7 ms of a 110 ms sync).
        if name != "Lanes":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        with _MAKING:
            lanes = globals().get("Lanes")
            if lanes is None:
                lanes = globals()["Lanes"] = _united()
        return lanes

    def __dir__() -> list[str]:
        # `Lanes` before it is made too: `help()`, pydoc and `from … import *` checkers list what dir() says
        return sorted({*globals(), "Lanes"})

    def _united() -> type:
        """`Lanes`: CoreApi, with a `_Deferred` for every attribute of the other mixins."""
        from git_lanes.api.core import CoreApi
        from git_lanes.api.owners import OWNERS

        class Lanes(CoreApi):
            """A repository opened for lanes: the CLI, MCP server, SDK, hooks and HTTP faces all call this."""

        Lanes.__qualname__ = "Lanes"  # as if made at the module's top: for reprs, docs and pickling alike
        for name, module in OWNERS.items():
            if module != "core":
                setattr(Lanes, name, _Deferred(name, module))
        return Lanes

    class _Deferred:
        """A `Lanes` attribute whose mixin module has not been imported yet."""

        __slots__ = ("name", "module")

        def __init__(self, name: str, module: str) -> None:
            self.name = name
            self.module = module

        def __get__(self, instance: object, owner: type | None = None) -> Any:
            _load(self.module)
            if vars(Lanes).get(self.name) is self:  # owners.py is stale: the mixin no longer has it
                delattr(Lanes, self.name)
            return getattr(Lanes if instance is None else instance, self.name)

        def __repr__(self) -> str:
            return f"<{self.name} of git_lanes.api.{self.module}, not loaded yet>"

    def _load(module: str) -> None:
        """Put the mixin's attributes on `Lanes` in place of their descriptors. An attribute owners.py does
        not know yet (a method added since it was generated) is taken too, unless `Lanes` has it already."""
        import importlib  # here: with `warnings`, ~0.5 ms a command that loads no other mixin would pay

        from git_lanes.api.owners import MIXINS, OWNERS

        mixin = getattr(importlib.import_module(f"git_lanes.api.{module}"), MIXINS[module])
        for name, value in list(vars(mixin).items()):
            if name.startswith("__") and name.endswith("__"):
                continue
            owner = OWNERS.get(name)
            if owner == module or owner is None and not any(name in vars(cls) for cls in Lanes.__mro__):
                setattr(Lanes, name, value)


__all__ = ["Lanes"]
