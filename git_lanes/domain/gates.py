"""Evaluation gates: commands declared in `.lanes.toml` at the trunk's committed head, run on a candidate
tree in a scratch checkout. Reading them from the trunk (never a workspace) means a lane cannot choose or
weaken which gates judge it, nor their commands; what a command runs (a script, the tests, a conftest.py)
comes from the candidate tree, so a lane can change that: protected paths (see `protected`) hold such a
change for a person.

    [[gate]]
    name = "tests"
    command = ["python", "-m", "pytest", "-q"]   # or a shell string: "make test"
    required = true                             # default; a failing optional gate is only recorded
    timeout = 600                               # seconds
    workdir = "."                               # relative to the tree
    on = ["promote"]                            # which accepts it judges: "commit", "promote" (default: both)
    into = ["main", "release/*"]                # which lanes' accepts, as globs (default: every lane)
    from_trunk = ["ci/**", "conftest.py"]       # these paths as the trunk has them, whatever the candidate's
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from git_lanes.domain import lanes, promotion, protected, transitions
from git_lanes.domain.claims import validate_glob
from git_lanes.domain.context import Context
from git_lanes.errors import Conflict, GateFailed, UserError, command
from git_lanes.model import config, refs
from git_lanes.model.config import CONFIG
from git_lanes.model.frozen import replace
from git_lanes.model.globs import glob_matches
from git_lanes.model.names import normalize_repo_path
from git_lanes.model.records import Evaluation, Transition
from git_lanes.store import scratch

DEFAULT_TIMEOUT = 600.0
OUTPUT_LINES = 5  # of a failed gate's output, shown with the error; the note keeps a longer tail
_KEYS = {"name", "command", "required", "timeout", "workdir", "on", "into", "from_trunk"}
# What a gate may guard: accepting a lane's own state (commit --auto-accept, accept) or a promotion into it.
KINDS = ("commit", "promote")


@dataclass(frozen=True)
class Gate:
    name: str
    command: str | tuple[str, ...]
    required: bool = True
    timeout: float = DEFAULT_TIMEOUT
    workdir: str = ""
    on: tuple[str, ...] = KINDS
    into: tuple[str, ...] = ("*",)
    # Paths (globs as for claims; a plain path covers what is beneath it) the gate runs as the trunk's head
    # has them: the candidate's copies (and paths it added there) are set aside in the scratch checkout.
    from_trunk: tuple[str, ...] = ()

    def guards(self, kind: str, lane: str) -> bool:
        """Whether this gate judges accepting a transition of `kind` on `lane`."""
        return kind in self.on and self.covers(lane)

    def covers(self, lane: str) -> bool:
        """Whether `into` names `lane` (fnmatch globs: `release/*` is every lane under release/)."""
        return any(fnmatchcase(lane, pattern) for pattern in self.into)

    def to_dict(self) -> dict:
        return {"name": self.name, "command": self.command if isinstance(self.command, str) else list(self.command),
                "required": self.required, "timeout": self.timeout, "workdir": self.workdir or ".",
                "on": list(self.on), "into": list(self.into)} | \
            ({"from_trunk": list(self.from_trunk)} if self.from_trunk else {})


def parse(text: str | bytes) -> tuple[Gate, ...]:
    """The `[[gate]]` entries of a `.lanes.toml`; other tables belong to other parts of git-lanes."""
    return from_config(config.parse(text, _invalid))


def from_config(data: dict) -> tuple[Gate, ...]:
    entries = data.get("gate", [])
    if not isinstance(entries, list):
        raise _invalid(f"{CONFIG}: `gate` must be an array of tables ([[gate]])")
    gates = [_gate(entry, number) for number, entry in enumerate(entries, 1)]
    names = [g.name for g in gates]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise _invalid(f"{CONFIG}: two gates are named {duplicate!r}")
    return tuple(gates)


def _gate(entry: object, number: int) -> Gate:
    if not isinstance(entry, dict):
        raise _invalid(f"{CONFIG}: gate {number} is not a table")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise _invalid(f"{CONFIG}: gate {number} has unknown key(s) {', '.join(unknown)}")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _invalid(f"{CONFIG}: gate {number} needs a name")
    command = entry.get("command")
    if isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        command = tuple(command)
    elif not (isinstance(command, str) and command.strip()):
        raise _invalid(f"{CONFIG}: gate {name!r} needs a command (an argv list or a shell string)")
    required = entry.get("required", True)
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(required, bool):
        raise _invalid(f"{CONFIG}: gate {name!r}: required must be true or false")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise _invalid(f"{CONFIG}: gate {name!r}: timeout must be a positive number of seconds")
    workdir = entry.get("workdir", ".")
    if not isinstance(workdir, str):
        raise _invalid(f"{CONFIG}: gate {name!r}: workdir must be a path relative to the tree")
    try:
        workdir = normalize_repo_path(workdir)
    except UserError as exc:
        raise _invalid(f"{CONFIG}: gate {name!r}: {exc.message}") from None
    on = config.string_list(entry.get("on", list(KINDS)), f"gate {name!r}: on", _invalid)
    strange = [kind for kind in on if kind not in KINDS]
    if strange or not on:
        raise _invalid(f"{CONFIG}: gate {name!r}: on must list some of {', '.join(map(repr, KINDS))}"
                       + (f", not {', '.join(map(repr, strange))}" if strange else ""))
    into = config.string_list(entry.get("into", ["*"]), f"gate {name!r}: into", _invalid)
    if not into:
        raise _invalid(f"{CONFIG}: gate {name!r}: into must name at least one lane or glob")
    from_trunk = config.string_list(entry.get("from_trunk", []), f"gate {name!r}: from_trunk", _invalid)
    try:
        from_trunk = tuple(dict.fromkeys(validate_glob(glob) for glob in from_trunk))
    except UserError as exc:
        raise _invalid(f"{CONFIG}: gate {name!r}: from_trunk: {exc.message}") from None
    return Gate(name, command, required, float(timeout), workdir, tuple(dict.fromkeys(on)), into, from_trunk)


def _invalid(message: str) -> UserError:
    return UserError(message, code="invalid_gates", hint=f"fix {CONFIG} on the trunk; until then nothing is "
                                                         "evaluated and nothing is accepted")


def load(ctx: Context) -> tuple[Gate, ...]:
    """Every gate the trunk's committed `.lanes.toml` declares."""
    head = lanes.lane_head(ctx, ctx.trunk)
    text = ctx.store.read_path(ctx.store.tree_of(head), CONFIG)
    return parse(text) if text is not None else ()


def scoped(ctx: Context, record: Transition) -> tuple[Gate, ...]:
    """The gates that judge accepting `record`: those whose `on` names its kind and whose `into` its lane."""
    return tuple(gate for gate in load(ctx) if gate.guards(record.kind, record.lane))


def evaluate(ctx: Context, record: Transition, gates: tuple[Gate, ...] | None = None) -> tuple[Evaluation, ...]:
    """Run every gate that judges the record (see `scoped`) on its state in one scratch checkout, restored
    between gates. Takes no lock: a gate may run for minutes and must not stall other writers."""
    gates = scoped(ctx, record) if gates is None else gates
    if not gates:
        return ()
    results = []
    trunk = lanes.lane_head(ctx, ctx.trunk) if any(gate.from_trunk for gate in gates) else None
    with scratch.checkout(ctx.store.root, ctx.store.common_dir, record.state) as tree_dir:
        for number, gate in enumerate(gates):
            if number:
                scratch.restore(tree_dir)
            if gate.from_trunk and trunk is not None:
                _take_from_trunk(ctx, gate.from_trunk, tree_dir, record.tree, trunk)
            results.append(_run(gate, tree_dir, record))
    return tuple(results)


def _take_from_trunk(ctx: Context, globs: tuple[str, ...], tree_dir: Path, tree: str, trunk: str) -> None:
    """Make the paths `globs` cover in the scratch checkout what they are at the trunk's head: the trunk's
    copies written, the candidate's own there removed. git writes them, so a symlink the candidate put on
    the way is replaced, never followed."""
    paths = {change.path for source in (ctx.store.tree_of(trunk), tree)
             for change in ctx.store.diff_trees(None, source) if any(glob_matches(g, change.path) for g in globs)}
    if paths:
        scratch.take_paths(tree_dir, trunk, sorted(paths))


def _run(gate: Gate, tree_dir: Path, record: Transition) -> Evaluation:
    cwd, problem = scratch.inside(tree_dir, gate.workdir)
    if problem is not None:
        return Evaluation(gate.name, False, gate.required, None, 0.0,
                          f"workdir {gate.workdir!r} {problem}; a gate runs only inside the candidate's checkout",
                          record.tree)
    command = gate.command if isinstance(gate.command, str) else list(gate.command)
    result = scratch.run_command(command, cwd, gate.timeout, {
        "GIT_LANES_GATE": gate.name, "GIT_LANES_TRANSITION": record.id, "GIT_LANES_LANE": record.lane,
        "GIT_LANES_STATE": record.state})
    return Evaluation(gate.name, result.exit_code == 0, gate.required, result.exit_code, result.duration,
                      result.output_tail, record.tree)


def failures(evaluations: tuple[Evaluation, ...]) -> list[Evaluation]:
    return [e for e in evaluations if e.required and not e.passed]


def decide(ctx: Context, record: Transition, evaluations: tuple[Evaluation, ...], *, auto: bool) -> dict:
    """Accept `record` with its evaluations, or reject it when a required gate failed (raising GateFailed).
    `auto`: nobody asked for this very transition (`--auto-accept`), so one that changes a protected path is
    not accepted but held: it stays proposed, with its evaluations and why (see protected).
    Call with the writers' lock held; the record is re-read, since another writer may have decided it."""
    current = transitions.load(ctx, record.state) or record
    judged = current.with_evaluations(evaluations) if evaluations else current
    failed = failures(evaluations)
    if failed:
        raise gate_failed(transitions.reject(ctx, judged, failure_reason(failed)))
    touched = protected.touched(ctx, judged) if auto else []
    if touched:
        held = replace(judged, extra={**judged.extra, "held": protected.hold(touched)})
        transitions.save(ctx, held, f"lanes: hold {held.id[:8]} for a person: protected paths")
        return held.to_dict()
    if judged.kind == "promote":
        accepted, worktree = promotion.land(ctx, judged)
        return accepted.to_dict() | ({"worktree": worktree} if worktree else {})
    return transitions.accept(ctx, judged).to_dict()


def decide_raced(ctx: Context, record: Transition, evaluations: tuple[Evaluation, ...]) -> dict:
    """Decide a proposal this process just made (to accept automatically), whose gates ran outside the lock. Another writer may have
    decided it meanwhile: accepting the same content on the same head supersedes it. When the lane now holds
    exactly this content, the work landed: answer with the transition that carried it. Otherwise the race is
    lost and nothing of ours moved: a Conflict (exit 3), never a refusal of bad input."""
    current = transitions.load(ctx, record.state) or record
    if current.status == "proposed":
        return decide(ctx, record, evaluations, auto=True)
    if current.status == "accepted":
        return current.to_dict()
    head = ctx.store.read_ref(refs.lane_ref(record.lane, ctx.trunk))
    if head is not None and ctx.store.tree_of(head) == record.tree:
        landed = transitions.load(ctx, head)
        if landed is not None and landed.status == "accepted":
            return landed.to_dict() | {"superseded": current.id}
    raise Conflict(f"{record.id[:8]} on {record.lane} was {current.status} by another writer while its gates "
                   f"ran" + (f": {current.reason}" if current.reason else ""), code="decided_meanwhile",
                   hint=f"see {command('show', record.id[:8])} and the lane's history; commit again if the "
                        "workspace still holds work the lane lacks")


def failure_reason(failed: list[Evaluation]) -> str:
    return "; ".join(f"gate {e.gate} failed" + (f" (exit {e.exit_code})" if e.exit_code is not None else "")
                     for e in failed)


def gate_failed(record: Transition, extra: dict | None = None) -> GateFailed:
    failed = failures(record.evaluations)
    output = "".join(f"\n  {line}" for e in failed for line in e.output_tail.strip().splitlines()[-OUTPUT_LINES:])
    return GateFailed(f"{record.id[:8]} on {record.lane}: {failure_reason(failed)}"
                      + ("; rejected" if record.status == "rejected" else "") + output,
                      details={"transition": record.to_dict()} | (extra or {}),
                      hint=f"see the output with {command('show', record.id[:8])}; the attempt is kept as signal")
