"""The model's records: validated on construction, to_dict/from_dict round trips, one JSON schema per record
for every face to derive its types from; and the API returning them with a docstring on every method.
Also D9 (issue 9): control characters through the API are refused at the model layer, for every face."""

from __future__ import annotations

import inspect
import json

import pytest
from conftest import git, workspace

from git_lanes import api as api_package
from git_lanes.api import Lanes
from git_lanes.errors import UserError
from git_lanes.model import (coordination, ledger_results, promotion_results, records, sync_results,
                             workspace_results, worktree_results)
from git_lanes.model.coordination import Task, TaskView
from git_lanes.model.ids import Actor, AgentId, LaneName, TransitionId
from git_lanes.model.record import Record

RECORD_MODULES = [records, coordination, ledger_results, workspace_results, promotion_results, sync_results,
                  worktree_results]
TASK = {"id": "0123456789abcdef", "title": "Add login", "created": 1.5, "created_by": "Jane Doe", "updated": 2,
        "description": "", "depends": [], "dependents": [], "ticket": None, "files": ["src/**"], "status": "open",
        "owner": None, "lane": None, "version": 1, "blocked_reason": None, "done_at": None}


def record_classes() -> list[type[Record]]:
    found = [obj for module in RECORD_MODULES for obj in vars(module).values()
             if isinstance(obj, type) and issubclass(obj, Record) and obj is not Record
             and obj.__module__ == module.__name__]
    assert len(found) > 30
    return found


@pytest.mark.parametrize("cls", record_classes(), ids=lambda c: c.__name__)
def test_every_record_describes_itself_as_a_json_schema(cls: type[Record]):
    schema = cls.json_schema()
    assert schema["type"] == "object" and schema["title"] == cls.__name__
    assert set(schema["required"]) <= set(schema["properties"])
    json.dumps(schema)  # plain JSON, ready for an MCP tool, an SDK type or an OpenAPI component


def test_a_field_whose_null_skips_its_check_is_one_whose_check_passes_null_as_it_is():
    """Building a record calls no coercer for a null a field's type admits (`admits_null`): for every field
    of every record, that holds exactly where the coercer returns None for None, and refuses nothing."""
    from git_lanes.model.field_types import admits_null, coercer
    from git_lanes.model.record import _specs

    skipped = 0
    for cls in record_classes():
        for spec in _specs(cls):
            try:
                passes = coercer(spec.type)(None, spec.key, cls) is None
            except UserError:
                passes = False
            assert admits_null(spec.type) == passes, (cls.__name__, spec.name)
            skipped += passes
    assert skipped > 50


def test_a_record_round_trips_and_prints_exactly_its_json():
    task = Task.from_dict(TASK)
    assert task.to_dict() == TASK and Task.from_dict(task.to_dict()) == task
    assert isinstance(task.created_by, Actor) and task.files == ("src/**",)
    assert task["title"] == "Add login" and task.get("lane") is None and "owner" in task


def test_a_record_refuses_what_its_field_types_refuse():
    with pytest.raises(UserError) as caught:
        Task.from_dict({**TASK, "owner": "Jane Doe"})
    assert caught.value.code == "invalid_agent"
    with pytest.raises(UserError) as caught:
        Task.from_dict({**TASK, "version": "1"})
    assert caught.value.code == "invalid_record"
    with pytest.raises(UserError) as caught:
        Task.from_dict({**TASK, "title": "a\x00b"})
    assert caught.value.code == "invalid_title"
    with pytest.raises(UserError) as caught:
        TaskView.from_dict({**TASK, "status": "finished"})
    assert caught.value.code == "invalid_record"


def test_a_list_of_plain_values_is_checked_item_by_item_and_a_wrong_item_named_by_its_place():
    """Lists of ints or texts pass on their items' types alone (a reader's inbox is read on every board op):
    a bool among ints, a number among texts, is still refused, naming where it sits."""
    reader = coordination.ReadPosition.from_dict({"agent": "agent-1", "cursor": 3, "inbox": [4, 5], "own": [6]})
    assert reader.inbox == (4, 5) and reader.to_dict()["own"] == [6]
    for bad in (True, 5.0, "7", None):
        with pytest.raises(UserError, match=r"inbox\[2\]") as caught:
            coordination.ReadPosition.from_dict({"agent": "agent-1", "cursor": 3, "inbox": [4, 5, bad], "own": []})
        assert caught.value.code == "invalid_record"
    with pytest.raises(UserError, match=r"files\[1\]"):
        Task.from_dict({**TASK, "files": ["src/**", 5]})
    assert Task.from_dict({**TASK, "files": ["src/**", "docs/**"]}).files == ("src/**", "docs/**")


def test_from_dict_refuses_a_key_the_record_does_not_declare_but_a_stored_one_is_read():
    """A key our own code adds to a result must be declared, or no face would show it; what a repository
    holds may come from a newer minor format version, whose extra keys an older reader ignores."""
    with pytest.raises(UserError) as caught:
        Task.from_dict({**TASK, "colour": "red"})
    assert caught.value.code == "invalid_record" and "'colour'" in caught.value.message
    assert Task.from_dict({**TASK, "format": 1}) == Task.from_dict(TASK)
    newer = {**TASK, "colour": "red"}
    assert Task.from_stored(newer) == Task.from_dict(TASK)
    detail = coordination.TicketDetail.from_stored({"id": "0123456789abcdef", "title": "t", "created": 1,
                                                    "created_by": "Jane Doe", "task_records": [newer]})
    assert detail.task_records[0].title == "Add login"
    with pytest.raises(UserError):  # the leniency ends with the read
        coordination.TicketDetail.from_dict(detail.to_dict() | {"task_records": [newer]})


def test_the_schema_carries_the_one_rule_of_each_name():
    properties = Task.json_schema()["properties"]
    assert properties["owner"]["anyOf"][0] == AgentId.JSON_SCHEMA
    assert properties["lane"]["anyOf"][0] == LaneName.JSON_SCHEMA
    assert records.Transition.json_schema()["properties"]["id"] == TransitionId.JSON_SCHEMA
    assert properties["status"] == {"enum": ["open", "claimed", "blocked", "needs_review", "done"]}


def test_every_public_api_method_has_a_docstring():
    """They become the MCP tools' and the SDK's descriptions."""
    missing = []
    for name, member in inspect.getmembers(Lanes):
        if name.startswith("_") or not callable(member) and not isinstance(member, property):
            continue
        function = member.fget if isinstance(member, property) else member
        if function.__module__.startswith(api_package.__name__) and not inspect.getdoc(function):
            missing.append(name)
    assert missing == []


def test_the_coordination_api_returns_records(api):
    created = api.task_create("Add login", actor="lead")
    assert isinstance(created, ledger_results.TaskCreated) and created.version == 1
    listed = api.task_list()
    assert [type(t) for t in listed] == [TaskView] and listed[0].id == created.task
    assert created.to_dict() == {"task": created.task, "version": 1, "ready": True, "ticket": None,
                                 "op": created.op}



def test_the_workspace_api_returns_records_and_the_faces_publish_their_schemas(api, repo):
    from git_lanes.http.openapi import response_schema
    from git_lanes.http.routes import ROUTES
    from git_lanes.mcp.server import output_shape
    from git_lanes.model.workspace_results import Decided, LaneDetail, RepositoryStatus, Unchanged

    api.lane_create("feat")
    (workspace(repo, "feat") / "f.txt").write_text("f\n")
    proposed = api.commit("Add f", "coder-1", lane="feat")
    assert isinstance(proposed, Decided) and proposed.status == "proposed" and proposed.worktree is None
    status = api.status()
    assert isinstance(status, RepositoryStatus) and [t.id for t in status.proposals] == [proposed.id]
    accepted = api.accept(proposed.id[:8])
    assert isinstance(accepted, Decided) and accepted.status == "accepted"
    assert isinstance(api.commit("again", "coder-1", lane="feat"), Unchanged)
    shown = api.lane_show("feat")
    assert isinstance(shown, LaneDetail) and shown.recent[0].id == proposed.id and shown.totals.count == 1
    assert shown.to_dict()["recent"][0] == accepted.to_dict()  # what --json prints, format key included

    commit_route = next(r for r in ROUTES if r.api == "commit")
    either = response_schema(commit_route, Lanes)
    assert either["anyOf"] == [Decided.json_schema(), Unchanged.json_schema()]
    status_route = next(r for r in ROUTES if r.api == "status")
    assert response_schema(status_route, Lanes) == RepositoryStatus.json_schema()
    published = output_shape(Decided | Unchanged).model_json_schema()
    assert published["anyOf"] == either["anyOf"] and published["type"] == "object"

    preview = api.promote("feat", dry_run=True)
    assert isinstance(preview, promotion_results.PromotionPreview) and preview.status == "clean"
    promoted = api.promote("feat", auto_accept=True)
    assert isinstance(promoted, promotion_results.Promoted) and promoted.transition.status == "accepted"
    assert promoted.worktree is not None and promoted.worktree.updated == ("f.txt",)
    assert isinstance(api.promote("feat"), promotion_results.UpToDate)

    (workspace(repo, "feat") / "f.txt").write_text("edited\n")
    restored = api.restore("feat", lane="feat", force=True)
    assert isinstance(restored, workspace_results.Restored) and restored.backup is not None
    (workspace(repo, "feat") / "g.txt").write_text("g\n")
    api.commit("Add g", "coder-1", lane="feat", auto_accept=True)
    api.lane_create("other")
    reset = api.lane_reset("feat", "other")
    assert isinstance(reset, workspace_results.LaneReset) and reset.transition is not None
    assert reset.to_dict()["from"] == reset.old and reset.kept_at == f"refs/lanes/rejected/{reset.transition.id}"
    deleted = api.lane_delete("feat")
    assert isinstance(deleted, workspace_results.LaneDeleted) and "released_ports" not in deleted



def test_a_prompt_with_a_nul_is_refused_before_anything_is_written(api, repo):
    api.lane_create("l1")
    (repo / ".lanes" / "workspaces" / "l1" / "x").write_text("1\n")
    before = git("for-each-ref", cwd=repo)
    with pytest.raises(UserError) as caught:
        api.commit("fix\x00", "ag1", lane="l1")
    assert caught.value.code == "invalid_prompt"
    assert git("for-each-ref", cwd=repo) == before


# Malformed tasks, each with the error a record of a class not yet compiled gives (`compiled` below).
MALFORMED_TASKS = [{**TASK, "owner": "Jane Doe"}, {**TASK, "version": "1"}, {**TASK, "version": 0},
                   {**TASK, "title": "a\x00b"}, {**TASK, "title": 5}, {**TASK, "id": "XYZ"}, {**TASK, "id": None},
                   {**TASK, "created_by": "<x>"}, {**TASK, "status": "finished"}, {**TASK, "files": ["a", 5]},
                   {**TASK, "depends": "0123456789abcdef"}, {**TASK, "lane": "a..b"}, {**TASK, "created": True},
                   {**TASK, "integrated": []}, {**TASK, "exclusive": 1}]


def _outcome(cls: type[Record], data: dict) -> object:
    try:
        return cls.from_dict(data).to_dict()
    except UserError as exc:
        return (exc.code, exc.message)


def test_a_record_class_built_often_checks_its_fields_as_before_in_one_compiled_function():
    """Once a class has built FIRST_USES records its field checks run as one compiled function (a held-open
    ledger append decodes three records and builds one each op): every value it refuses is refused with the
    same error as before, everything it keeps is the same, and a field whose value has the exact type its
    check returns as it is (a text, an id already made) calls no check at all."""
    import sys

    from git_lanes.model import field_types, ids
    from git_lanes.model.frozen import FIRST_USES
    from git_lanes.model.record import _VALIDATORS

    class Fresh(Task):  # a class of its own, so what other tests built does not count
        pass

    first = [_outcome(Fresh, bad) for bad in MALFORMED_TASKS] + [_outcome(Fresh, TASK)]
    assert Fresh not in _VALIDATORS
    for _ in range(FIRST_USES):
        Fresh.from_dict(TASK)
    assert Fresh in _VALIDATORS
    assert [_outcome(Fresh, bad) for bad in MALFORMED_TASKS] + [_outcome(Fresh, TASK)] == first
    assert all(isinstance(outcome, tuple) for outcome in first[:-1])
    built = Fresh.from_dict(TASK)
    assert isinstance(built.created_by, Actor) and built.files == ("src/**",) \
        and built.to_dict() == Task.from_dict(TASK).to_dict()

    calls: list[str] = []

    def count(frame, event, arg):
        if event == "call" and frame.f_code.co_filename in (field_types.__file__, ids.__file__):
            calls.append(frame.f_code.co_name)

    exact = Fresh.from_dict({**TASK, "owner": "agent-1", "lane": "feature/x", "blocked_reason": "why"})
    sys.setprofile(count)
    try:
        Fresh(**{f: getattr(exact, f) for f in ("id", "title", "created", "created_by", "updated", "description",
                                                 "depends", "dependents", "ticket", "files", "status", "owner",
                                                 "lane", "version", "blocked_reason", "done_at")})
    finally:
        sys.setprofile(None)
    # left: the bounded fields (title, description, times, version: each one test), the literal and the
    # tuples; no id, and no text's check (`blocked_reason` is of its exact type)
    assert "__new__" not in calls and "_str" not in calls, calls


def test_a_record_class_that_read_often_reads_a_mapping_as_before_in_one_compiled_function():
    """`from_dict` of a class that has read FIRST_USES records runs compiled (no loop over its specs): what
    it refuses (no mapping, a key lacking, a key not declared) it refuses with the same error, a stored
    record's newer keys are still ignored, and a mapping that is not a dict still reads."""
    from types import MappingProxyType

    from git_lanes.model.frozen import FIRST_USES
    from git_lanes.model.record import _READERS

    class Fresh(Task):
        pass

    lacking = {key: value for key, value in TASK.items() if key != "title"}
    cases = [[], "task", None, lacking, {**TASK, "colour": "red"}, {**TASK, "format": 1}, {**TASK, 5: "five"},
             MappingProxyType(TASK), TASK]

    def outcomes() -> list[object]:
        found = [_outcome(Fresh, case) for case in cases]  # type: ignore[arg-type]
        found.append(Fresh.from_stored({**TASK, "colour": "red"}).to_dict())
        return found

    first = outcomes()
    assert Fresh not in _READERS
    for _ in range(FIRST_USES):
        Fresh.from_dict(TASK)
    assert Fresh in _READERS
    assert outcomes() == first
    assert [isinstance(outcome, tuple) for outcome in first] == [True] * 5 + [False, True, False, False, False]


def test_a_bounded_number_or_text_passes_on_one_test_and_anything_else_is_judged_as_before(monkeypatch):
    """A bounded float or int of its exact type within its bounds, or a printable text within its length, is
    taken on one test; every other value (a bool, a NaN, an infinity, a text with a control character or a
    line break, a blank title, a text past its bytes) gets the answer the full check gives, error and all,
    for every bounded field of every record."""
    import typing

    from git_lanes.model import field_types

    probes: list[object] = [None, True, False, 0, 1, -1, 7, 10 ** 8, 10 ** 8 - 1, 10 ** 400, 0.0, -0.0, 0.5, 1.5,
                            -1.5, 1e308, 253_402_300_799.0, 253_402_300_800.0, float("nan"), float("inf"),
                            float("-inf"), "", " ", "  x ", "plain", "tab\there", "line\nbreak", "ctl\x07",
                            "\x85", "lone \udcff", "ünïcode ✓", "🦊" * 4100, "a" * 200, "a" * 201, "a" * 20_001,
                            "é" * 8192, "é" * 8193, "a" * 16_385, [], {}, b"bytes"]
    from git_lanes.model.record import _specs

    bounded = {spec.type for cls in record_classes() for spec in _specs(cls)
               if typing.get_origin(spec.type) is typing.Annotated}
    assert len(bounded) >= 8

    def outcome(coerce: object, value: object) -> object:
        try:
            return ("kept", coerce(value, "field", Task))  # type: ignore[operator]
        except UserError as exc:
            return ("refused", exc.code, exc.message)
        except (OverflowError, TypeError) as exc:  # an int past any float (10**400) for a float's check
            return ("raised", type(exc), str(exc))

    fast = {tp: field_types.coercer(tp) for tp in bounded}
    monkeypatch.setattr(field_types, "_passing", lambda coerce_base, checks, checked: None)
    full = {tp: field_types.coercer(tp) for tp in bounded}
    for tp in bounded:
        for value in probes:
            got, expected = outcome(fast[tp], value), outcome(full[tp], value)
            assert got == expected, (tp, value)
            if got[0] == "kept":
                assert got[1] is value or got[1] == expected[1]


def test_an_id_field_read_back_takes_the_instance_its_class_already_made_and_still_refuses_a_bad_one():
    """A compiled record takes an id its class found valid before as that instance, without a call; a text it
    has not seen is checked, and one that is no id refused, as before; a list read back empty is its empty
    tuple."""
    from git_lanes.model.frozen import FIRST_USES
    from git_lanes.model.ids import AgentId

    class Fresh(Task):
        pass

    for _ in range(FIRST_USES):
        Fresh.from_dict(TASK)
    owner = AgentId("owner-of-" + "fresh")
    read = Fresh.from_dict({**TASK, "owner": "owner-of-fresh"})
    assert read.owner is owner and read.depends == () and read.files == ("src/**",)
    for bad in ("Jane Doe", 5, ["a1"]):
        with pytest.raises(UserError) as expected:
            AgentId(bad)
        with pytest.raises(UserError) as caught:
            Fresh.from_dict({**TASK, "owner": bad})
        assert (caught.value.code, caught.value.message) == (expected.value.code, expected.value.message)
    with pytest.raises(UserError) as caught:
        Fresh.from_dict({**TASK, "depends": {}})
    assert caught.value.code == "invalid_record"
