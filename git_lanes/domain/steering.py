"""Steering a running agent through its hooks, on the light path (no pygit2): messages a person told the run
(`git lanes tell`), delivered at the model's next tool call or stop, and the budgets of its lane, task and
ticket (`git lanes budget set`), which warn at 80% and block writes and commands at 100%.

Budgets are read from the ledger's state and the spend from the run logs and the transition records (a cost
recorded outside any run, as `commit --cost-usd` does, counts as `budget show` counts it), all with the hook's
own object reader; the check runs under the runs' lock, against the run's state as it is being charged, so two
agents of one task cannot both slip past the limit."""

from __future__ import annotations

import json

from git_lanes.errors import UnsupportedFormat, command
from git_lanes.model import ledger_delta
from git_lanes.model.calls import ToolCall
from git_lanes.model.refs import LEDGER, NOTES
from git_lanes.model.runs import RunEvent, RunState
from git_lanes.store import ref_files
from git_lanes.store.objects import parse_commit, parse_tree

TYPE_CHECKING = False  # not `from typing import …`: the hook path never loads typing
if TYPE_CHECKING:
    from typing import Any

    from git_lanes.model.budgets import Budget

RANK = {"ok": 0, "warn": 1, "exhausted": 2}
BUDGETS = "budgets"


# -- messages -----------------------------------------------------------------------------------------------
def deliver(state: RunState | None, via: str, now: float) -> tuple[list[RunEvent], str | None]:
    """The event marking every queued message delivered, and the text that carries them to the model."""
    if state is None or not state.inbox:
        return [], None
    text = "\n".join(f"Message from {m.get('from') or 'a person'} (git lanes tell): {m.get('text')}"
                     for m in state.inbox)
    return [RunEvent("message_delivered", now, {"ids": [m.get("id") for m in state.inbox], "via": via})], text


# -- the ledger, read lightly -----------------------------------------------------------------------------
class LedgerReader:
    """Records of the ledger's current state, read with the hook's object reader: the last checkpoint's tree
    (one tree per level, each read once: one reader serves every check of a call) with the records of the
    delta commits since laid over it (model/ledger_delta.py)."""

    __slots__ = ("objects", "root", "_trees", "_overlay")

    def __init__(self, repo: Any) -> None:
        self.objects = repo.log.objects
        head = ref_files.read_ref(repo.common_dir, LEDGER)
        self.root: str | None = None
        self._trees: dict[str, dict[str, tuple[int, str]]] = {}
        self._overlay: dict[str, Any] = {}
        if head is not None:
            at = ledger_delta.materialize(head, self._commit)
            self.root, self._overlay = at.tree, at.overlay

    def _commit(self, oid: str) -> tuple[str, str | None, str]:
        headers, message = parse_commit(self.objects.read_typed(oid, b"commit"))
        parents = headers.get("parent") or [None]
        return headers["tree"][0], parents[0], message

    def tree(self, oid: str) -> dict[str, tuple[int, str]]:
        entries = self._trees.get(oid)
        if entries is None:
            entries = self._trees[oid] = parse_tree(self.objects.read_typed(oid, b"tree"))
        return entries

    def _tree(self, directory: str) -> dict[str, tuple[int, str]] | None:
        if self.root is None:
            return None
        entries = self.tree(self.root)
        for part in [p for p in directory.split("/") if p]:
            entry = entries.get(part)
            if entry is None or entry[0] != 0o040000:
                return None
            entries = self.tree(entry[1])
        return entries

    def record(self, path: str) -> dict | None:
        if path in self._overlay:
            found = self._overlay[path]
            return found if isinstance(found, dict) else None
        directory, _, name = path.rpartition("/")
        entries = self._tree(directory)
        entry = entries.get(name) if entries is not None else None
        if entry is None:
            return None
        data = json.loads(self.objects.read_typed(entry[1], b"blob"))
        return data if isinstance(data, dict) else None

    def names(self, directory: str) -> list[str]:
        return sorted(self._entries(directory))

    def _entries(self, directory: str) -> dict[str, bool]:
        entries = self._tree(directory) or {}
        found = {name: mode == 0o040000 for name, (mode, _) in entries.items()}
        if not self._overlay:
            return found
        return ledger_delta.overlaid_names(found, self._overlay, directory, self._holds_files)

    def _holds_files(self, folder: str) -> bool:
        return any(not is_folder or self._holds_files(f"{folder}/{name}")
                   for name, is_folder in self._entries(folder).items())


def task_path(task: str) -> str:
    return f"tasks/{task[:2]}/{task}.json"


def ticket_path(ticket: str) -> str:
    return f"tickets/{ticket}.json"


# -- budgets --------------------------------------------------------------------------------------------
class BudgetCheck:
    """What the budgets say about one call: a deny reason, warnings for the model, the alert events to
    record, and the budgets that became exhausted with it (their tasks get blocked, outside the lock)."""

    __slots__ = ("deny", "warnings", "events", "exhausted")

    def __init__(self) -> None:
        self.deny: str | None = None
        self.warnings: list[str] = []
        self.events: list[RunEvent] = []
        self.exhausted: list[dict] = []


def applicable(ledger: LedgerReader, state: RunState) -> tuple[list[Budget], list[str], str | None]:
    """The budgets over this run (its lane's, its task's, its task's ticket's), the ticket's tasks and the
    run's task. A run with no task of its own (one its hooks started) works on the task working in its lane
    (`lane_task`)."""
    from git_lanes.model.budgets import Budget, budget_path  # only where budgets exist: the hook path stays lean

    found, ticket_tasks = [], []
    task_id = state.task or lane_task(ledger, state)
    wanted = [("lane", state.lane), ("task", task_id)]
    if task_id:
        task = ledger.record(task_path(task_id)) or {}
        ticket = task.get("ticket")
        if ticket:
            wanted.append(("ticket", ticket))
            ticket_tasks = list((ledger.record(ticket_path(ticket)) or {}).get("tasks") or [])
    for scope, key in wanted:
        if key:
            path = budget_path(scope, key)
            record = ledger.record(path)
            if record is not None:  # a wrong shape denies, naming the record: the wall cannot be judged
                found.append(Budget.decode(record, f"ledger record {path}", f"{command('doctor')} lists it"))
    return found, ticket_tasks, task_id


def lane_task(ledger: LedgerReader, state: RunState) -> str | None:
    """The task a run with none of its own works on, as domain/budgets.py counts it: the newest task working
    in the run's lane that was made before the run. Only tasks a budget can concern are read (those with a
    budget, and the tasks of tickets with one), so a repository without task budgets pays nothing."""
    if not state.lane:
        return None
    candidates = [name[:-5] for name in ledger.names(f"{BUDGETS}/task") if name.endswith(".json")]
    for name in ledger.names(f"{BUDGETS}/ticket"):
        if name.endswith(".json"):
            members = (ledger.record(ticket_path(name[:-5])) or {}).get("tasks")
            candidates += [t for t in members if isinstance(t, str)] if isinstance(members, list) else []
    best: tuple[str, float] | None = None
    for task, (lane, created) in spans(ledger, candidates).items():
        if lane == state.lane and created <= state.created_at and (best is None or created > best[1]):
            best = (task, created)
    return best[0] if best else None


def spans(ledger: LedgerReader, task_ids: list[str]) -> dict[str, tuple[str, float]]:
    """{task: (its lane, when it was made)} of those tasks that work in a lane."""
    found = {}
    for task in dict.fromkeys(task_ids):
        if len(task) < 2:
            continue
        record = ledger.record(task_path(task)) or {}
        created = record.get("created")
        if isinstance(record.get("lane"), str) and isinstance(created, (int, float)) and not isinstance(created, bool):
            found[task] = (record["lane"], float(created))
    return found


def run_states(repo: Any, current: RunState) -> list[RunState]:
    """Every run's state, `current` as given (it may be ahead of its log); a damaged log is skipped here
    (doctor reports it)."""
    states = [current]
    for other, head in repo.log.runs().items():
        if other == current.id:
            continue
        try:
            states.append(RunState.from_dict(json.loads(repo.log.state_at(head))))
        except (ValueError, UnsupportedFormat):
            continue
    return states


def runs_spend(budget: Budget, states: list[RunState], ticket_tasks: list[str],
               task_spans: dict[str, tuple[str, float]]) -> tuple[float, int]:
    """Dollars and tokens the runs under `budget` spent: a lane's runs; a task's runs, with the runs of no
    task that worked in its lane since it was made; a ticket's, its tasks' together (domain/budgets.py)."""
    def on_task(state: RunState, task: str) -> bool:
        if state.task is not None:
            return state.task == task
        span = task_spans.get(task)
        return span is not None and state.lane == span[0] and state.created_at >= span[1]

    if budget.scope == "lane":
        chosen = [s for s in states if s.lane == budget.key]
    else:
        members = [budget.key] if budget.scope == "task" else ticket_tasks
        chosen = [s for task in members for s in states if on_task(s, task)]
    return round(sum(s.usage.cost_usd for s in chosen), 6), sum(s.usage.tokens for s in chosen)


RUN_TAG = "run:"  # as domain/budgets.py: a transition a run's hooks recorded is in that run's usage already


def transition_costs(repo: Any) -> dict[str, list]:
    """{annotated commit: [lane, created_at, usd, tokens]} of the transitions whose cost counts on its own
    (domain/budgets.py `spend`: a commit recorded outside any run, with a cost). Drawn from the notes once and
    kept beside the run logs; a later call reads only the notes that changed since."""
    head = ref_files.read_ref(repo.common_dir, NOTES)
    if head is None:
        return {}
    saved = repo.log.note_costs() or {}
    rows = _kept_rows(saved)
    if saved.get("notes") == head and rows is not None:
        return rows
    objects = repo.log.objects
    tree = parse_commit(objects.read_typed(head, b"commit"))[0]["tree"][0]
    old = saved.get("tree") if rows is not None and isinstance(saved.get("tree"), str) else None
    try:
        changed, gone = repo.log.notes_changed(old, tree)
    except UnsupportedFormat:  # the tree it was drawn from is gone (gc): draw it all again
        rows, (changed, gone) = None, repo.log.notes_changed(None, tree)
    rows = dict(rows or {})
    for target in gone:
        rows.pop(target, None)
    for target, blob in changed.items():
        row = _cost_row(objects, blob)
        if row is None:
            rows.pop(target, None)
        else:
            rows[target] = row
    repo.log.save_note_costs({"notes": head, "tree": tree, "rows": rows})
    return rows


def _kept_rows(saved: dict) -> dict[str, list] | None:
    """The rows a former call kept, or None when any is not one (a damaged or foreign copy): drawn again from
    the notes rather than trusted, since a budget check that fails denies every tool call."""
    rows = saved.get("rows")
    if not isinstance(rows, dict):
        return None
    for row in rows.values():
        if not isinstance(row, list) or len(row) != 4 or not isinstance(row[0], str) \
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row[1:]):
            return None
    return rows


def _cost_row(objects: Any, blob: str) -> list | None:
    try:
        record = json.loads(objects.read_typed(blob, b"blob"))
        cost, intent = record.get("cost") or {}, record.get("intent") or {}
        if record.get("kind") != "commit" or not isinstance(record.get("lane"), str) \
                or any(isinstance(tag, str) and tag.startswith(RUN_TAG) for tag in intent.get("tags") or ()):
            return None
        usd = float(cost.get("cost_usd") or 0)
        tokens = int(cost.get("tokens_in") or 0) + int(cost.get("tokens_out") or 0)
        created = float(record.get("created_at") or 0)
    except (UnsupportedFormat, ValueError, TypeError, AttributeError, RecursionError):
        return None  # a malformed record counts nothing here, as it is set aside everywhere else
    return [record["lane"], created, usd, tokens] if usd or tokens else None


def transitions_spend(budget: Budget, rows: dict[str, list], ticket_tasks: list[str],
                      task_spans: dict[str, tuple[str, float]]) -> tuple[float, int]:
    """Dollars and tokens the transitions recorded outside runs spent on `budget`: a lane's on the lane; a
    task's on the task's lane since the task was made; a ticket's, its tasks' together."""
    if budget.scope == "lane":
        lanes = [(budget.key, 0.0)]
    else:
        members = [budget.key] if budget.scope == "task" else ticket_tasks
        lanes = [task_spans[task] for task in members if task in task_spans]
    usd, tokens = 0.0, 0
    for lane, since in lanes:
        for row_lane, created, row_usd, row_tokens in rows.values():
            if row_lane == lane and created >= since:
                usd, tokens = usd + row_usd, tokens + row_tokens
    return usd, tokens


def check(repo: Any, state: RunState, call: ToolCall | None, now: float,
          ledger: LedgerReader | None = None) -> BudgetCheck:
    """Judge the run's budgets for `call` (None: only record how far they have gone)."""
    result = BudgetCheck()
    if not state.lane and not state.task:
        return result
    ledger = ledger or LedgerReader(repo)
    if not ledger.names(BUDGETS):
        return result
    budgets, ticket_tasks, task_id = applicable(ledger, state)
    if not budgets:
        return result
    from git_lanes.model.budgets import describe, level

    states = run_states(repo, state)
    rows = transition_costs(repo)
    task_spans = spans(ledger, [b.key for b in budgets if b.scope == "task"] + ticket_tasks)
    for budget in budgets:
        usd, tokens = runs_spend(budget, states, ticket_tasks, task_spans)
        more_usd, more_tokens = transitions_spend(budget, rows, ticket_tasks, task_spans)
        usd, tokens = round(usd + more_usd, 6), tokens + more_tokens
        now_level = level(budget, usd, tokens)
        key = f"{budget.scope}:{budget.key}"
        before = state.alerts.get(key, "ok")
        detail = describe(budget, usd, tokens)
        if now_level == "exhausted" and call is not None and call.changes_things and result.deny is None:
            result.deny = (f"the budget of {budget.label} is spent ({detail}): no more writes or commands. "
                           f"Summarize where you are and stop; a person can raise it with {command('budget set')}")
        if now_level != before:
            result.events.append(RunEvent("budget_alert", now, {"scope": budget.scope, "key": budget.key,
                                                               "level": now_level, "detail": detail,
                                                               "usd": usd, "tokens": tokens}))
        if RANK[now_level] > RANK[before]:
            if now_level == "warn":
                result.warnings.append(f"warning: 80% of the budget of {budget.label} is spent ({detail})")
            else:
                result.warnings.append(f"the budget of {budget.label} is spent ({detail}): writes and commands "
                                       "are blocked from now on")
                result.exhausted.append({"scope": budget.scope, "key": budget.key, "detail": detail,
                                         "task": task_id})
    return result
