"""Hints advise commands in each face's own words (STYLE.md: a face-neutral hint; each face phrases its own
advice). The lower layers name a command with `errors.command`; here every such reference, found in the source
(so new ones are covered as they land), must name a real CLI command with real options, no hint may spell a
command by hand, and each face's table of equivalents must name real CLI commands on one side and real MCP
tools, REST routes or SDK methods on the other. Then the faces themselves: the MCP server names its tools, REST its
routes, the SDK its calls, the CLI keeps its words."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import anyio
import click
import pytest
from conftest import run_cli, workspace
from http_helpers import Server
from mcp_helpers import fails, mcp_session

from git_lanes.cli import cli
from git_lanes.errors import COMMAND_PREFIX, NotARepository, NotFound, Refused, command, option
from git_lanes.http import advice as rest_advice
from git_lanes.http import routes
from git_lanes.mcp import advice as mcp_advice
from git_lanes.mcp.binding import Binding
from git_lanes.mcp.server import argument_names, catalog
from git_lanes.model.advice import CLI_LABEL, Equivalent, references
from git_lanes.sdk import AgentSession
from git_lanes.sdk import advice as sdk_advice

PACKAGE = Path(__file__).resolve().parent.parent / "git_lanes"
LOWER = [path for layer in ("domain", "api", "ledger", "model") for path in sorted((PACKAGE / layer).rglob("*.py"))]
LOWER.append(PACKAGE / "errors.py")


def cli_command(words: list[str]) -> tuple[click.Command, list[str], list[str]]:
    """The click command `words` names, its path, and the words left for its arguments and options."""
    ctx = click.Context(cli, info_name=COMMAND_PREFIX)
    found: click.Command = cli
    path: list[str] = []
    for word in words:
        sub = found.get_command(ctx, word) if isinstance(found, click.Group) else None
        if sub is None:
            break
        found, path = sub, path + [word]
    return found, path, words[len(path):]


def options_of(found: click.Command) -> dict[str, click.Option]:
    return {opt: param for param in found.params if isinstance(param, click.Option) for opt in param.opts}


def command_calls() -> list[tuple[str, ast.Call]]:
    calls = []
    for path in LOWER[:-1]:  # errors.py itself defines them
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("command", "command_line"):
                calls.append((f"{path.relative_to(PACKAGE.parent)}:{node.lineno}", node))
    return calls


CALLS = command_calls()


def option_calls() -> list[tuple[str, ast.Call]]:
    return [(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}", node) for path in LOWER[:-1]
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "option"]


OPTIONS = option_calls()


def test_the_walk_finds_the_hints_command_references():
    assert len(CALLS) > 60


@pytest.mark.parametrize("where,call", CALLS, ids=[where for where, _ in CALLS])
def test_every_command_a_hint_names_is_a_real_command_with_real_options(where, call):
    assert call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str), \
        f"{where}: name the command path as a literal, so it can be checked"
    words = call.args[0].value.split()
    found, path, rest = cli_command(words)
    assert path and not rest, f"{where}: `git lanes {' '.join(words)}` is not a command"
    if isinstance(found, click.Group):
        assert found.invoke_without_command or len(call.args) == 1, f"{where}: {path} takes a subcommand"
    arguments = [p for p in found.params if isinstance(p, click.Argument)]
    if not any(p.nargs == -1 for p in arguments) and not isinstance(found, click.Group):
        assert len(call.args) - 1 <= len(arguments), f"{where}: {' '.join(path)} takes {len(arguments)} argument(s)"
    options = options_of(found)
    for keyword in call.keywords:
        assert keyword.arg is not None, f"{where}: name each option"
        name = keyword.arg.rstrip("_")
        flag = ("-" if len(name) == 1 else "--") + name.replace("_", "-")
        assert flag in options, f"{where}: {' '.join(path)} has no option {flag}"
        given_a_flag = isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        assert given_a_flag == options[flag].is_flag, f"{where}: {flag} is{'' if given_a_flag else ' not'} a flag"


def _literal_strings(tree: ast.AST) -> list[tuple[int, str]]:
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


# Texts that are no hint: the example plan `dispatch --example` prints, a file a person edits.
NO_HINT = {("git_lanes/model/plan.py", "# A dispatch plan: ")}


def test_no_hint_spells_a_command_by_hand():
    """A reference written out (`git lanes show …` in a string) would reach every face in the CLI's words."""
    by_hand = [f"{where}:{line}: {text.strip()[:80]}" for path in LOWER
               for where in [str(path.relative_to(PACKAGE.parent))]
               for line, text in _literal_strings(ast.parse(path.read_text())) if f"`{COMMAND_PREFIX} " in text
               and not any(where == file and text.startswith(start) for file, start in NO_HINT)]
    assert by_hand == [], "name these with errors.command(...):\n" + "\n".join(by_hand)


def test_no_hint_spells_an_option_by_hand():
    """`pass --force` written out reached every face in the CLI's words: an MCP client has no --force."""
    by_hand = [f"{where}:{line}: {text.strip()[:80]}" for path in LOWER
               for where in [str(path.relative_to(PACKAGE.parent))]
               for line, text in _literal_strings(ast.parse(path.read_text())) if ("pass --" in text or "`--" in text)
               and not any(where == file and text.startswith(start) for file, start in NO_HINT)]
    assert by_hand == [], "name these with errors.option(...):\n" + "\n".join(by_hand)


@pytest.mark.parametrize("where,call", OPTIONS, ids=[where for where, _ in OPTIONS])
def test_every_option_a_hint_names_is_a_real_option_and_a_real_keyword(where, call):
    """An option is named by the parameter every face calls it (`force`): some command takes it as a long
    option, and some SDK call as a keyword (MCP and REST name theirs the same)."""
    assert call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str), \
        f"{where}: name the option as a literal, so it can be checked"
    name = call.args[0].value.rstrip("_")
    assert len(name) > 1, f"{where}: a long option: a face translates only those"
    flag = "--" + name.replace("_", "-")
    given_a_value = len(call.args) > 1
    commands = [sub for sub in cli_commands(cli) if flag in options_of(sub)]
    assert any(options_of(sub)[flag].is_flag != given_a_value for sub in commands), \
        f"{where}: no command has {flag}{' VALUE' if given_a_value else ''}"
    from git_lanes.api import Lanes
    calls = [method for key, method in inspect.getmembers(Lanes, inspect.isroutine) if not key.startswith("_")]
    assert any(name in inspect.signature(method).parameters for method in calls), f"{where}: no SDK call takes {name}="


def cli_commands(group: click.Group) -> list[click.Command]:
    ctx = click.Context(group)
    found: list[click.Command] = []
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        found += [sub] + (cli_commands(sub) if isinstance(sub, click.Group) else [])
    return found


def test_an_option_of_the_command_answered_is_each_faces_parameter():
    hint = f"snapshot them with {command('commit')}, or pass {option('force')}; or {option('branch', 'NAME')}"
    assert hint == "snapshot them with `git lanes commit`, or pass `--force`; or `--branch NAME`"
    assert mcp_advice.advise(hint, {"commit"}) == "snapshot them with `commit`, or pass `force=true`; or `branch=NAME`"
    assert rest_advice.advise(hint) == \
        f'snapshot them with `git lanes commit`{CLI_LABEL}, or pass `"force": true`; or `"branch": NAME`'
    assert sdk_advice.advise(hint) == \
        "snapshot them with `session.api.commit(PROMPT, session.agent_id)`, or pass `force=True`; or `branch=NAME`"
    assert sdk_advice.advise(f"{option('agent', 'coder-2')} or {option('no_setup')}") == \
        '`agent="coder-2"` or `setup=False`'


def test_a_refusal_a_flag_overrides_names_it_in_each_faces_words(repo, api):
    """Deleting a lane with unsnapshotted edits: each face says how to force it with its own control."""
    api.lane_create("feat")
    (workspace(repo, "feat") / "draft.txt").write_text("unsaved\n")
    cli_hint = run_cli("lane", "delete", "feat", "--json", cwd=repo).json["hint"]
    assert cli_hint == "snapshot them with `git lanes commit`, or pass `--force` (they are kept in a backup ref)"
    with Server(repo) as server:
        rest = server.request("DELETE", "/api/v1/lanes/feat", token=server.token)
        # DELETE takes `force` in its query: a body field of that name is refused as unknown, so the hint
        # that said `"force": true` here sent the reader to a second refusal
        assert rest.json["hint"] == \
            f'snapshot them with `git lanes commit`{CLI_LABEL}, or pass `?force=true` (they are kept in a backup ref)'
        api.lane_create("other")
        (workspace(repo, "other") / "draft.txt").write_text("unsaved\n")
        reset = server.post("/api/v1/lanes/other/reset", {"onto": "main"})  # a POST takes it in its body
        assert reset.json["error"] == "dirty_workspace", reset.json
        assert '`"force": true`' in reset.json["hint"], reset.json
        assert server.request("DELETE", "/api/v1/lanes/other?force=true", token=server.token).status == 200
    with pytest.raises(Refused) as refused:
        AgentSession(repo, agent_id="coder-1").api.lane_delete("feat")
    assert refused.value.hint == ("snapshot them with `session.api.commit(PROMPT, session.agent_id)`, or pass "
                                  "`force=True` (they are kept in a backup ref)")

    async def scenario():
        async with mcp_session(repo) as session:
            return await fails(session, "restore", state="main", lane="feat")

    assert anyio.run(scenario)["hint"] == ("snapshot them with `commit`, or pass `force=true` to keep them in a "
                                           "backup ref and restore anyway")


def test_a_command_reads_as_the_cli_spells_it():
    assert command("show", "ab12cd34") == "`git lanes show ab12cd34`"
    assert command("restore", "feat", w="feat", force=True, reason=None, keep=False) == \
        "`git lanes restore feat -w feat --force`"
    assert command("lane create", "NEW", from_="old lane") == "`git lanes lane create NEW --from 'old lane'`"
    assert [words for _, words in references(f"see {command('lane create', 'NEW', from_='old lane')}")] == \
        [("lane", "create", "NEW", "--from", "old lane")]


def parameters(equivalent: Equivalent) -> set[str]:
    flags = {flag.lstrip("!") for flag in equivalent.flags.values() if flag}
    return {*equivalent.arguments, *equivalent.options.values(), *flags}


def _check_cli_side(table: dict[str, Equivalent]) -> None:
    for key, equivalent in table.items():
        found, path, rest = cli_command(key.split())
        assert path == key.split() and not rest, f"{key!r} is not a CLI command"
        options = options_of(found)
        for flag in equivalent.options:
            assert flag in options and not options[flag].is_flag, f"{key}: {flag} is not a valued option"
        for flag in equivalent.flags:
            assert flag in options and options[flag].is_flag, f"{key}: {flag} is not a flag"
        arguments = [p for p in found.params if isinstance(p, click.Argument)]
        if not isinstance(found, click.Group):  # a group run without a subcommand reads its own (`publish T`)
            assert len(equivalent.arguments) <= len(arguments), f"{key}: more arguments than the CLI takes"


def test_each_mcp_equivalent_is_a_real_command_and_a_real_tool_with_its_parameters(repo):
    _check_cli_side(mcp_advice.TOOLS)
    tools = {spec.fn.__name__: argument_names(spec.fn) for spec in catalog(Binding(repo, None))}
    for key, equivalent in mcp_advice.TOOLS.items():
        assert equivalent.name in tools, f"{key}: no MCP tool {equivalent.name}"
        named = parameters(equivalent)
        assert named <= tools[equivalent.name], f"{key}: {equivalent.name} takes no {named - tools[equivalent.name]}"


def test_each_rest_equivalent_is_a_real_command_and_a_real_route_with_its_parameters():
    _check_cli_side(rest_advice.ROUTES)
    served = {f"{r.method} {r.path}": r for r in routes.ROUTES + routes.RUN_ROUTES}
    for key, equivalent in rest_advice.ROUTES.items():
        route = served.get(equivalent.name)
        assert route is not None, f"{key}: no route {equivalent.name}"
        takes = {*route.path_params, *(p.name for p in route.query + route.body)}
        named = parameters(equivalent)
        assert named <= takes, f"{key}: {equivalent.name} takes no {named - takes}"


def test_each_sdk_equivalent_is_a_real_command_and_a_real_method_with_its_parameters():
    _check_cli_side(sdk_advice.METHODS)
    for key, equivalent in sdk_advice.METHODS.items():
        owner = sdk_advice.owner_of(equivalent.name)
        method = getattr(owner, equivalent.name.rpartition(".")[2], None)
        assert callable(method), f"{key}: {owner.__name__} has no method {equivalent.name}"
        takes = set(inspect.signature(method).parameters)
        named = parameters(equivalent)
        assert named <= takes, f"{key}: {equivalent.name} takes no {named - takes}"


def reference_words(call: ast.Call) -> tuple[str, ...]:
    """The words of the command an `errors.command` call in the source names, its values filled in (`X`)."""
    words = call.args[0].value.split() + ["X"] * (len(call.args) - 1)
    for keyword in call.keywords:
        name = keyword.arg.rstrip("_")
        words.append(("-" if len(name) == 1 else "--") + name.replace("_", "-"))
        if not (isinstance(keyword.value, ast.Constant) and keyword.value.value is True):
            words.append("X")
    return tuple(words)


def test_every_sdk_call_a_hint_can_name_is_python_that_the_method_takes():
    """Each reference in the source, rendered by the SDK face: whatever call it names parses as Python and
    binds to the real method's signature (every required parameter given, none it lacks), so a user can paste
    it."""
    named = set()
    for where, call in CALLS:
        rendered = sdk_advice.method_call(reference_words(call))
        if rendered is None:
            continue
        expression = ast.parse(rendered.strip("`"), mode="eval").body
        assert isinstance(expression, ast.Call), where
        name = ast.unparse(expression.func)
        method = getattr(sdk_advice.owner_of(name), name.rpartition(".")[2])
        signature = inspect.signature(method)
        if "self" in signature.parameters:
            expression.args.insert(0, ast.Constant(None))
        values = [ast.unparse(arg) for arg in expression.args]
        signature.bind(*values, **{k.arg: ast.unparse(k.value) for k in expression.keywords})  # raises if not
        named.add(name)
    assert {"session.api.show", "session.api.task_list", "session.api.commit", "session.claim_task",
            "session.post", "Lanes.init"} <= named


def test_every_tool_a_hint_can_name_is_one_the_server_lists(repo):
    """Each reference in the source, its arguments filled in, rendered by the MCP face with every tool set
    on: whatever tool it names is in the server's tool list (and a tool not offered is never named)."""
    listed = {spec.fn.__name__ for spec in catalog(Binding(repo, None))}
    named = set()
    for where, call in CALLS:
        words = reference_words(call)
        rendered = mcp_advice.tool_call(tuple(words), listed)
        if rendered is not None:
            named.add(rendered.strip("`").split("(")[0])
        assert mcp_advice.tool_call(tuple(words), set()) is None, where
    assert named and named <= listed
    assert {"show", "list_tasks", "commit", "read_board"} <= named


def test_a_face_without_an_equivalent_keeps_the_clis_words_labelled():
    hint = f"{command('lane reset', 'feat', onto='main')}, or {command('task list', ready=True)}"
    assert mcp_advice.advise(hint, {"list_tasks"}) == \
        f"`git lanes lane reset feat --onto main`{CLI_LABEL}, or `list_tasks(ready_only=true)`"
    assert mcp_advice.advise(hint, set()) == \
        f"`git lanes lane reset feat --onto main`{CLI_LABEL}, or `git lanes task list --ready`{CLI_LABEL}"
    assert rest_advice.advise(hint) == \
        '`POST /api/v1/lanes/feat/reset {"onto": "main"}`, or `GET /api/v1/tasks?ready_only=true`'
    assert sdk_advice.advise(hint) == \
        '`session.api.lane_reset("feat", "main")`, or `session.api.task_list(ready=True)`'
    assert sdk_advice.advise(f"see {command('install', 'claude')}") == f"see `git lanes install claude`{CLI_LABEL}"
    assert mcp_advice.advise("no command here", set()) == "no command here"


def test_the_mcp_server_names_its_tools_in_hints_and_the_cli_its_commands(repo):
    async def scenario():
        async with mcp_session(repo) as session:
            unknown_task = await fails(session, "get_task", task_id="feedbeef")
            unknown_transition = await fails(session, "show", transition_id="feedbeef")
            return unknown_task, unknown_transition

    unknown_task, unknown_transition = anyio.run(scenario)
    assert unknown_task["hint"] == "see `list_tasks`"
    assert unknown_transition["hint"] == "list them with `history`"
    cli_task = run_cli("task", "show", "feedbeef", "--json", cwd=repo)
    assert cli_task.json["hint"] == "see `git lanes task list`"
    assert "hint: list them with `git lanes history`" in run_cli("show", "feedbeef", cwd=repo).err


def test_a_tool_the_server_does_not_offer_is_never_named():
    """`undo` is a maintenance tool: a core server has none, so its hint names the command, labelled."""
    assert mcp_advice.advise(command("undo", "OP"), {"op_log"}) == f"`git lanes undo OP`{CLI_LABEL}"
    assert mcp_advice.advise(command("undo", "OP"), {"undo"}) == "`undo(operation=OP)`"


def test_the_rest_api_names_its_routes_in_hints(repo):
    with Server(repo) as server:
        missing = server.get("/api/v1/lanes/nope")
        task = server.get("/api/v1/tasks/feedbeef")
    assert (missing.status, missing.json["hint"]) == (404, "see `GET /api/v1/lanes`")
    assert (task.status, task.json["hint"]) == (404, "see `GET /api/v1/tasks`")
    assert run_cli("lane", "show", "nope", "--json", cwd=repo).json["hint"] == "see `git lanes lane list`"


def test_hints_about_posts_and_lanes_name_tools_and_no_cli_option(repo):
    """An unknown post's hint once told an MCP client what `--json` gives, and an unknown lane's named the
    CLI's `lane list` though the `status` tool lists the lanes."""
    async def scenario():
        async with mcp_session(repo) as session:
            return (await fails(session, "resolve_question", post="#feedbeef"),
                    await fails(session, "history", lane="nope"))

    unknown_post, unknown_lane = anyio.run(scenario)
    assert unknown_post["hint"] == "see `read_board(all_posts=true)` for each post's id"
    assert unknown_lane["hint"] == "see `status`"
    cli_post = run_cli("board", "resolve", "#feedbeef", "--json", cwd=repo)
    assert cli_post.json["hint"] == "see `git lanes board read --all --json` for each post's id"


def test_a_subcommand_is_never_read_as_the_argument_of_its_group():
    """`publish` takes a ticket when run alone, and `publish sync` was read as it: the MCP face advised
    `publish_ticket(ticket_id="sync")`, which publishes nothing and fails."""
    offered = {"publish_ticket", "close_ticket_on_merge"}
    assert mcp_advice.advise(f"{command('publish sync')} closes merged tickets", offered) == \
        "`close_ticket_on_merge` closes merged tickets"
    for key in mcp_advice.TOOLS:
        found, path, _ = cli_command(key.split())
        if isinstance(found, click.Group):
            for sub in found.list_commands(click.Context(found)):
                words = (*key.split(), sub)
                if " ".join(words) not in mcp_advice.TOOLS:
                    assert mcp_advice.tool_call(words, offered | {e.name for e in mcp_advice.TOOLS.values()}) \
                        is None, words


def test_the_sdk_names_its_calls_in_the_hints_of_the_errors_it_raises(repo, tmp_path):
    """A session's errors carried the CLI's commands (`git lanes task list`), which a script cannot run."""
    session = AgentSession(repo, agent_id="coder-1")
    with pytest.raises(NotFound) as unknown:
        session.claim_task("feedbeef")
    assert unknown.value.hint == "see `session.api.task_list()`"
    with pytest.raises(NotARepository) as not_set_up:
        AgentSession(tmp_path, agent_id="coder-1")
    assert not_set_up.value.hint == "run `Lanes.init(PATH)` first"
    # A hint is translated once, however many of the session's calls it is raised through.
    assert sdk_advice.advised_error(unknown.value).hint == "see `session.api.task_list()`"
