"""Promotion, evaluation gates and lane reset: the API the `promote`, `evaluate` and `lane reset` faces call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from collections.abc import Callable
from contextlib import AbstractContextManager

from git_lanes.api.held import held
from git_lanes.api.recording import recorded
from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, GateFailed, StaleState, command, notice, problem
from git_lanes.model.ids import Actor, AgentId

if TYPE_CHECKING:
    from git_lanes.domain import gates, lanes, promotion, reset, transitions
    from git_lanes.model.promotion_results import Evaluated, Promoted, PromotionPreview, UpToDate
    from git_lanes.model.records import Cost, Evaluation, Intent, Transition
    from git_lanes.model.workspace_results import LaneReset
    from git_lanes.store import merge_gate

# A target that moves under every attempt is being written faster than its gates run; give up and say so.
MAX_ATTEMPTS = 5


@held
class PromotionApi:
    """Mixed into `Lanes`, next to CoreApi, which provides `ctx` and `_writing`."""

    ctx: Context
    _writing: Callable[[], AbstractContextManager[Context]]

    @recorded(lambda a: f"promote {a['lane']} into {a['into'] or 'the trunk'}" + (" --force" if a["force"] else ""))
    def promote(self, lane: str, into: str | None = None, *, prompt: str | None = None,
                agent_id: str | None = None, agent_type: str | None = None, model: str | None = None,
                tags: tuple[str, ...] = (), cost: Cost | None = None, dry_run: bool = False,
                force: bool = False, auto_accept: bool = False) -> Promoted | UpToDate | PromotionPreview:
        """Promote `lane` into `into` (default: the trunk): the merged state is proposed on the target and,
        with `auto_accept`, judged by the trunk's gates and accepted. Collisions raise Conflict (exit 3)
        unless `force`; a failing required gate rejects the attempt and raises GateFailed (exit 4). With
        `dry_run`, only the plan (PromotionPreview, its `problem` the Conflict the real run would raise):
        nothing is written."""
        from git_lanes.domain import gates, promotion
        from git_lanes.model.promotion_results import Promoted, PromotionPreview, UpToDate
        from git_lanes.model.records import Cost, Intent
        from git_lanes.store import merge_gate

        from git_lanes.model.names import validate_lane_name

        target = self.ctx.trunk if into is None else into  # an empty name given is refused, not defaulted
        # Checked before the dry run answers, so that it refuses what the real run would refuse; the names
        # first, as the default prompt holds them and would be refused for them.
        validate_lane_name(lane)
        validate_lane_name(target)
        who = AgentId(agent_id) if agent_id is not None else Actor(self._human())
        intent = Intent(prompt=prompt if prompt is not None else f"Promote {lane} into {target}", agent_id=who,
                        agent_type=agent_type, model=model, tags=tags)
        gates.load(self.ctx)  # trunk gates that cannot be read refuse before a merge is proposed, as for commit
        if dry_run:
            plan = promotion.plan(self.ctx, lane, target)
            status = "up_to_date" if plan.up_to_date else "collision" if plan.comparison.collisions else "clean"
            # answered as the real run would be: collisions without --force are its conflict (exit 3)
            stops = plan.comparison.collisions and not force
            return PromotionPreview.from_dict(
                {"status": status, "dry_run": True, **plan.to_dict(), "left_pending": self._left_pending(lane),
                 "unsnapshotted": _unsnapshotted(self.ctx, lane, target, auto_accept=auto_accept),
                 **({"ways": promotion.ways_on(lane, target)} if plan.comparison.collisions else {}),
                 "problem": problem(promotion.collision_error(plan)) if stops else None})
        with merge_gate.serialized(self.ctx.store.common_dir, target):
            for attempt in range(1, MAX_ATTEMPTS + 1):
                # The cost was spent once, whatever number of attempts a moving target forces.
                report = self._attempt(lane, target, intent, cost if attempt == 1 else Cost(), force, auto_accept)
                if report is not None:
                    result = report | {"attempts": attempt, "left_pending": self._left_pending(lane),
                                       "unsnapshotted": _unsnapshotted(self.ctx, lane, target,
                                                                       auto_accept=auto_accept)}
                    return UpToDate.from_dict(result) if result["transition"] is None else Promoted.from_dict(result)
        raise Conflict(f"{target} moved under each of {MAX_ATTEMPTS} attempts to promote {lane}",
                       code="target_busy", hint="retry when the target is quieter")

    def _left_pending(self, lane: str) -> list[str]:
        """Proposals on `lane` still awaiting a decision: promotion takes the lane's accepted head only."""
        from git_lanes.domain import transitions

        return [t.id for t in transitions.pending_for(self.ctx, lane) if t.kind == "commit"]

    def _attempt(self, lane: str, target: str, intent: Intent, cost: Cost | None, force: bool,
                 auto_accept: bool) -> dict[str, Any] | None:
        """One try: plan and propose under the writers' lock, run the gates without it, then decide under it
        again. None when the target moved while the gates ran (the attempt is rejected as superseded)."""
        from git_lanes.domain import gates, lanes, promotion, transitions
        from git_lanes.model.records import Cost

        with self._writing() as ctx:
            plan = promotion.plan(ctx, lane, target)
            if plan.up_to_date:
                return {"status": "up_to_date", **plan.to_dict(), "transition": None}
            record = promotion.propose(ctx, plan, intent, cost or Cost(), force=force)
            checks = gates.scoped(ctx, record)
            if not checks:
                return self._settle(ctx, plan, record, (), auto_accept)
        evaluations = gates.evaluate(self.ctx, record, checks)
        with self._writing() as ctx:
            current = transitions.load(ctx, record.state) or record
            if current.status != "proposed":  # someone decided it by hand meanwhile; their word stands
                return {"status": current.status, **_report(plan, record), "transition": current.to_dict(),
                        "worktree": None}
            if lanes.lane_head(ctx, target) != record.base:
                transitions.reject(ctx, record.with_evaluations(evaluations),
                                   f"superseded: {target} moved while the gates ran; recomputed")
                return None
            return self._settle(ctx, plan, record, evaluations, auto_accept)

    def _settle(self, ctx: Context, plan: promotion.Plan, record: Transition, evaluations: tuple[Evaluation, ...],
                auto_accept: bool) -> dict[str, Any]:
        from git_lanes.domain import gates, transitions

        report = _report(plan, record)
        try:
            if auto_accept or gates.failures(evaluations):
                decided = gates.decide(ctx, record, evaluations, auto=auto_accept)
            else:
                if evaluations:
                    record = record.with_evaluations(evaluations)
                    transitions.save(ctx, record, f"lanes: evaluate {record.id[:8]}")
                decided = record.to_dict()
        except GateFailed as failure:
            failure.details.update(report)
            raise
        worktree = decided.pop("worktree", None)
        return {"status": decided["status"], **report, "transition": decided, "worktree": worktree}

    @recorded(lambda a: f"evaluate {str(a['transition_id'])[:8]}")
    def evaluate(self, transition_id: str) -> Evaluated:
        """Re-run the gates on a pending proposal and record the results in its note (exit 4 when a required
        gate fails; the proposal stays pending)."""
        from git_lanes.domain import gates, transitions
        from git_lanes.model.promotion_results import Evaluated

        record = transitions.find(self.ctx, transition_id)
        _require_pending(record)
        checks = gates.scoped(self.ctx, record)
        evaluations = gates.evaluate(self.ctx, record, checks)
        with self._writing() as ctx:
            current = transitions.load(ctx, record.state) or record
            _require_pending(current)
            current = current.with_evaluations(evaluations)
            transitions.save(ctx, current, f"lanes: evaluate {current.id[:8]}")
        if gates.failures(evaluations):
            raise gates.gate_failed(current)
        return Evaluated.from_dict(current.to_dict() | {"gates": [g.name for g in checks]})

    def gates(self, *, lane: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        """The gates declared at the trunk's head with what each guards; with `lane` and/or `kind`, only
        those that judge such accepts (`lane` need not exist yet)."""
        from git_lanes.domain import gates, lanes

        if lane is not None:
            lanes.validate_lane_name(lane)
        return [g.to_dict() for g in gates.load(self.ctx)
                if (kind is None or kind in g.on) and (lane is None or g.covers(lane))]

    @recorded(lambda a: f"reset lane {a['name']} onto {a['onto'] or 'the trunk'}")
    def lane_reset(self, name: str, onto: str | None = None, *, force: bool = False, reason: str | None = None,
                   agent_id: str | None = None) -> LaneReset:
        """Move lane `name` (and its workspace) to the head of `onto` (default: the trunk). Work the lane holds
        that `onto` lacks is kept as a rejected transition; unsnapshotted edits are refused, or with `force`
        kept in a backup ref first."""
        from git_lanes.domain import reset
        from git_lanes.model.workspace_results import LaneReset

        with self._writing() as ctx:
            return LaneReset.from_dict(reset.reset(ctx, name, ctx.trunk if onto is None else onto, force=force,
                                                   reason=reason,
                                                   agent_id=AgentId(agent_id) if agent_id is not None else None))

    def _human(self) -> str:
        """Who promotes when no agent id is given: the person in git's configured identity."""
        return self.ctx.store.signature().name


def _unsnapshotted(ctx: Context, lane: str, target: str, *, auto_accept: bool) -> dict[str, Any] | None:
    """The edits in `lane`'s workspace that no state holds, which promoting the lane leaves behind (it takes
    the accepted head only), told as a notice too (the CLI's `warning:` line): silence would let the user take
    their latest edits for promoted. Never included, never discarded."""
    from git_lanes.domain import inspect
    from git_lanes.model.text import shown_path

    into = None if target == ctx.trunk else target
    again = command("promote", lane, into=into, auto_accept=True) if auto_accept else \
        command("promote", lane, into=into)
    found = inspect.left_unsnapshotted(ctx, lane, f"promote again: {again}")
    if found is not None:
        count, paths = found["count"], found["paths"]
        named = ", ".join(shown_path(p) for p in paths[:3]) + (", ..." if count > 3 else "")
        notice(f"{lane}'s workspace has {count} unsnapshotted path{'' if count == 1 else 's'} ({named}), not "
               f"promoted (a promotion takes the lane's snapshots only): {found['hint']}")
    return found


def _report(plan: promotion.Plan, record: Transition) -> dict[str, Any]:
    extra = record.promotion
    return plan.to_dict() | {"forced": list(extra.forced) if extra else [], "backup": extra.backup if extra else None}


def _require_pending(record: Transition) -> None:
    if record.status != "proposed":
        raise StaleState(f"transition {record.id[:8]} is already {record.status}", code="already_decided",
                         hint=f"its evaluations are in {command('show', record.id[:8])}")
