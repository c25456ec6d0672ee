"""The one surface every face calls. Methods take plain values and return plain records (dicts).

Each capability contributes a mixin in its own module; `Lanes` unites them."""

from __future__ import annotations

from git_lanes.api.core import CoreApi
from git_lanes.api.dispatch import DispatchApi
from git_lanes.api.doctor import DoctorApi
from git_lanes.api.integration import IntegrationApi
from git_lanes.api.lane_setup import SetupApi
from git_lanes.api.ledger import LedgerApi
from git_lanes.api.oplog import OplogApi
from git_lanes.api.overview import OverviewApi
from git_lanes.api.promotion import PromotionApi
from git_lanes.api.publishing import PublishingApi
from git_lanes.api.runs import RunsApi
from git_lanes.api.sync import SyncApi
from git_lanes.api.upkeep import UpkeepApi
from git_lanes.api.worktrees import WorktreeApi
from git_lanes.api.spawn import SpawnApi
from git_lanes.api.supervise import SuperviseApi
from git_lanes.api.budgets import BudgetsApi


class Lanes(CoreApi, SyncApi, PromotionApi, IntegrationApi, LedgerApi, OverviewApi, WorktreeApi, RunsApi, DoctorApi,
            SetupApi, SpawnApi, SuperviseApi, BudgetsApi, PublishingApi, UpkeepApi, OplogApi, DispatchApi):
    """A repository opened for lanes: the CLI, MCP server, SDK, hooks and HTTP faces all call this."""


__all__ = ["Lanes"]
