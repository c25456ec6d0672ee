"""Start-up is part of every command's cost (DESIGN.md §5, issue 15): each command loads only the git_lanes
modules it needs. The sets are pinned: a new module on one of these paths fails this test until it is either
imported lazily (inside the function that needs it) or added here on purpose."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = {"git_lanes", "git_lanes.cli", "git_lanes.cli.options", "git_lanes.cli.output", "git_lanes.errors"}
# What opening the repository through the API costs any command: CoreApi (with the operation log's decorator
# and the check that the repository held open is still there) and the table of where `Lanes` finds the rest;
# every other mixin loads with the first method of it called.
API = {"git_lanes.api.core", "git_lanes.api.held", "git_lanes.api.owners", "git_lanes.api.recording"}
STORE = {f"git_lanes.store.{name}" for name in ("clock", "gitcli", "lock", "records", "ref_moves", "repo",
                                                  "notes", "rereading", "setup", "stale", "trees", "values",
                                                  "workspace", "worktree_add")}
# What reading a worktree's files costs (what needs attention after a promotion, which `status` shows)
FILES = {"git_lanes.store.filters", "git_lanes.store.worktree_files"}
REPOSITORY = CLI | API | STORE | {
    "git_lanes.api", "git_lanes.store", "git_lanes.domain", "git_lanes.domain.context",
    "git_lanes.model", "git_lanes.model.entries", "git_lanes.model.format",
    "git_lanes.model.frozen", "git_lanes.model.ids", "git_lanes.model.refs",
    "git_lanes.model.text"}
# A record's class and its field grammar (the JSON schema module loads with the first schema asked for)
RECORD = {"git_lanes.model.record", "git_lanes.model.field_types"}
TRANSITIONS = RECORD | {"git_lanes.domain.lanes", "git_lanes.domain.wording", "git_lanes.domain.attention",
                        "git_lanes.domain.inspect", "git_lanes.domain.transitions", "git_lanes.model.names",
                        "git_lanes.model.records"}
LEDGER = {"git_lanes.api.ledger", "git_lanes.ledger", "git_lanes.ledger.log", "git_lanes.ledger.op", "git_lanes.ledger.state",
          "git_lanes.domain.agents", "git_lanes.domain.board", "git_lanes.domain.board_index",
          "git_lanes.domain.questions",
          "git_lanes.model.coordination", "git_lanes.domain.stored",
          "git_lanes.model.ledger_delta", "git_lanes.model.jsontext"} | RECORD

PINNED = {
    ("--version",): {"git_lanes", "git_lanes.cli"},
    ("status",): REPOSITORY | TRANSITIONS | FILES | {"git_lanes.cli.inspect", "git_lanes.model.results",
                                             "git_lanes.model.workspace_results", "git_lanes.domain.undo_marks"},
    ("show", "SHOWN"): REPOSITORY | TRANSITIONS | {"git_lanes.cli.inspect", "git_lanes.model.results"},
    ("lane", "list"): REPOSITORY | RECORD | {"git_lanes.cli.lane", "git_lanes.domain.lanes",
                                             "git_lanes.domain.wording", "git_lanes.model.names",
                                             "git_lanes.model.records", "git_lanes.model.results"},
    ("history",): REPOSITORY | TRANSITIONS | {"git_lanes.cli.inspect", "git_lanes.domain.trace",
                                              "git_lanes.model.results"},
    ("task", "list"): REPOSITORY | LEDGER | {"git_lanes.cli.task", "git_lanes.api.tasks",
                                             "git_lanes.domain.claims", "git_lanes.domain.task_records",
                                             "git_lanes.domain.tasks", "git_lanes.domain.tickets",
                                             "git_lanes.model.globs", "git_lanes.model.names"},
    ("board", "read", "--agent", "coder-1"): REPOSITORY | LEDGER | {"git_lanes.cli.board",
                                                                      "git_lanes.api.board",
                                                                      "git_lanes.model.ledger_results",
                                                                      "git_lanes.store.object_cache",
                                                                      "git_lanes.store.tree_bytes",
                                                                      "git_lanes.domain.wording"},
}


# `python -m git_lanes ARGS`, then the modules loaded, on stderr's last line. (`-X importtime` cannot tell:
# it misses what importlib.import_module loads, as the CLI's lazy command table does.)
PROBE = """
import runpy, sys
sys.argv = ["git_lanes", *sys.argv[1:]]
try:
    runpy.run_module("git_lanes", run_name="__main__", alter_sys=True)
finally:
    print("\\n" + " ".join(sorted(sys.modules)), file=sys.stderr)
"""


def every_module(args: tuple[str, ...], cwd) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    names = set(proc.stderr.splitlines()[-1].split())
    assert "git_lanes.cli" in names, "the probe saw no import at all"
    return names


def loaded(args: tuple[str, ...], cwd) -> set[str]:
    return {name for name in every_module(args, cwd) if name.split(".")[0] == "git_lanes"}


@pytest.mark.parametrize("args", sorted(PINNED), ids=" ".join)
def test_each_read_command_loads_only_its_own_modules(repo, args):
    from git_lanes.api import Lanes

    pinned = PINNED[args]
    if args[0] == "board":
        Lanes(repo).agent_register("coder-1")
    if args[0] == "show":
        (repo / "README.md").write_text("changed\n")
        args = ("show", Lanes(repo).commit("change", "coder-1", cwd=repo)["id"][:8])
    found = loaded(args, repo)
    assert sorted(found - pinned) == [], "loaded but not pinned: import it lazily, or pin it here"
    assert sorted(pinned - found) == [], "pinned but no longer loaded: unpin it"


def test_options_cost_neither_gettext_lookups_nor_suggestions(repo):
    """click's own `--help` and `--version` options ask gettext for their text, whose first lookup imports
    locale (~1.5 ms); a short option makes click build a "no such option" error, with difflib's suggestions,
    before it parses it as the short option it is. Ours do neither, and still work."""
    found = every_module(("history", "-n", "1", "--json"), repo)
    assert "gettext" in found and {"locale", "difflib"} & found == set()
    assert {"locale", "difflib"} & every_module(("--version",), repo) == set()
    assert "shutil" not in every_module(("--help",), repo), "the help formatter measures the terminal itself"
    from click.testing import CliRunner

    from git_lanes.cli import cli

    version = CliRunner().invoke(cli, ["--version"], prog_name="git lanes")
    assert (version.exit_code, version.output) == (0, "git-lanes, version 0.2.0\n")
    for args in (["lane", "list", "-h"], ["lane", "list", "--help"]):
        shown = CliRunner().invoke(cli, args, prog_name="git lanes")
        assert shown.exit_code == 0 and "  -h, --help  Show this message and exit." in shown.output
    assert CliRunner().invoke(cli, ["history", "-x"]).output.endswith("No such option '-x'.\n")
    assert CliRunner().invoke(cli, ["history", "--limt", "1"]).output.endswith("Did you mean '--limit'?\n")


def test_help_lists_the_commands_without_loading_them(repo):
    assert loaded(("--help",), repo) == {"git_lanes", "git_lanes.cli", "git_lanes.cli.summaries"}
    found = loaded(("lane", "--help"), repo)
    assert "git_lanes.cli.lane" in found
    assert sorted(name for name in found if name.split(".")[1:2] in (["api"], ["domain"], ["store"], ["ledger"],
                                                                      ["model"])) == []


def imported_before_git_lanes(command: list[str], cwd) -> list[str]:
    """The modules a process imports itself before it first imports git_lanes: `-X importtime` lists each
    import once it is done, what it imported in turn indented above it."""
    proc = subprocess.run(command, capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, proc.stderr
    names = [line.split("| ")[2].rstrip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    ours = [number for number, name in enumerate(names) if name.strip().split(".")[0] == "git_lanes"]
    assert ours, "importtime saw no import of git_lanes"
    return [name for name in names[1:ours[0]] if not name.startswith(" ")]


def test_the_installed_launcher_imports_nothing_before_the_program(tmp_path):
    """`git-lanes` in the venv's bin is contrib/packaging/git-lanes, not the launcher pip generates for a
    [project.scripts] entry, which imports `re` (enum, functools...) and compiles a pattern before main() on
    every run: ahead of the light sync's gc.disable(), 1.5% of that process's instructions (pyproject.toml)."""
    from git_lanes.model.config import tomllib

    root = Path(__file__).resolve().parent.parent
    config = tomllib.loads((root / "pyproject.toml").read_text())
    assert "scripts" not in config["project"], "pip would write its launcher over ours or beside it"
    assert config["tool"]["setuptools"]["script-files"] == ["contrib/packaging/git-lanes"]
    launcher = Path(sys.executable).with_name("git-lanes")
    shebang, _, body = launcher.read_text().partition("\n")
    if body != (root / "contrib" / "packaging" / "git-lanes").read_text().partition("\n")[2]:
        pytest.skip("this venv's git-lanes predates the script: rerun `.venv/bin/pip install -e '.[test]'`")
    assert Path(shebang.removeprefix("#!")).parent == Path(sys.executable).parent, "pip writes the interpreter"
    bare = imported_before_git_lanes([sys.executable, "-c", "import git_lanes.__main__"], tmp_path)
    assert "site" in bare
    assert imported_before_git_lanes([str(launcher), "--version"], tmp_path) == bare, \
        "the script imports for itself before main() runs"


def test_help_lists_what_the_commands_say_of_themselves(repo):
    """The listing a fresh `--help` makes from summaries.py (it loads no command: pinned above) is the one
    click makes from the loaded commands."""
    from click.testing import CliRunner

    from git_lanes.cli import COMMANDS, cli

    fresh = subprocess.run([sys.executable, "-m", "git_lanes", "--help"], capture_output=True, text=True, cwd=repo,
                           env={**os.environ, "COLUMNS": "80"})
    for name in COMMANDS:
        assert cli.get_command(None, name) is not None  # type: ignore[arg-type]
    # click formats for the terminal less 2 columns (78 of 80)
    loaded_all = CliRunner().invoke(cli, ["--help"], prog_name="git lanes", terminal_width=78)
    assert fresh.returncode == loaded_all.exit_code == 0
    assert "  lane " in fresh.stdout and fresh.stdout == loaded_all.output


def checking_only_uses(source: str) -> list[int]:
    """Lines where code that runs uses a name imported only under `if TYPE_CHECKING:` without importing it
    itself: the NameError mypy cannot see, since it reads the TYPE_CHECKING imports as real."""
    tree = ast.parse(source)
    blocks = [node for node in tree.body if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
              and node.test.id == "TYPE_CHECKING"]
    # A name the block's `else:` defines for run time (a stand-in for the checker's import) is bound.
    checking = {alias.asname or alias.name.split(".")[0] for node in blocks
                for statement in node.body if isinstance(statement, (ast.Import, ast.ImportFrom))
                for alias in statement.names} - {
        name for node in blocks for statement in node.orelse for part in ast.walk(statement)
        for name in _binds(part) + ([part.name] if isinstance(part, (ast.FunctionDef, ast.ClassDef)) else [])}
    annotations = {id(part) for node in ast.walk(tree) for annotation in _annotations(node)
                   for part in ast.walk(annotation)}
    found = []

    def visit(node: ast.AST, bound: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                local = bound | {name for part in ast.walk(child) for name in _binds(part)}
                visit(child, local)
            else:
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load) and child.id in checking \
                        and child.id not in bound and id(child) not in annotations:
                    found.append(child.lineno)
                visit(child, bound)

    visit(tree, set())
    return sorted(set(found))


def _annotations(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        return [a.annotation for a in every if a.annotation is not None] + ([node.returns] if node.returns else [])
    return []


def _binds(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return [node.id]
    return []


def test_names_imported_for_type_checking_are_imported_where_code_uses_them():
    package = Path(__file__).resolve().parent.parent / "git_lanes"
    found = [f"{file.relative_to(package.parent)}:{line}" for file in sorted(package.rglob("*.py"))
             for line in checking_only_uses(file.read_text())]
    assert found == []


def test_the_type_checking_checker_sees_a_missing_import():
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from git_lanes.domain import lanes\n\n"
              "def fine(x: lanes.Lane) -> None:\n    from git_lanes.domain import lanes\n    lanes.get(x)\n\n"
              "def broken() -> None:\n    lanes.get(1)\n\nDEFAULT = lanes.X\n")
    assert checking_only_uses(source) == [10, 12]
    stand_in = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from typing import final\nelse:\n"
                "    def final(f):\n        return f\n\n@final\nclass C:\n    pass\n")
    assert checking_only_uses(stand_in) == []


def test_owners_is_generated_from_the_mixins_the_type_checker_sees():
    from git_lanes.api import mixins

    written = (Path(mixins.__file__).parent / "owners.py").read_text()
    assert written == mixins.render(), "owners.py is stale: run `python -m git_lanes.api.mixins`"


def test_lanes_finds_every_attribute_where_the_union_of_its_mixins_does():
    """The lazy `Lanes` and the union the type checker sees resolve each name to the same object, once loaded
    (which `getattr` on the class does: what the MCP and HTTP faces' introspection sees)."""
    from git_lanes.api import Lanes, mixins

    union = mixins.union()
    names = [name for name in dir(union) if not (name.startswith("__") and name.endswith("__"))]
    assert len(names) > 100 and "task_list" in names and "_state" in names
    for name in names:
        getattr(Lanes, name)
    assert {name: inspect.getattr_static(Lanes, name) for name in names} == \
        {name: inspect.getattr_static(union, name) for name in names}


STALE = """
import sys
import git_lanes.api as api
from git_lanes.api import Lanes, owners
del owners.OWNERS["_state"], Lanes._state  # a method added since owners.py was generated
owners.OWNERS["gone"] = "ledger"  # and one since removed
Lanes.gone = api._Deferred("gone", "ledger")
assert "git_lanes.api.ledger" not in sys.modules and "_state" not in vars(Lanes)
assert Lanes.agent_list.__module__ == "git_lanes.api.ledger"
from git_lanes.api.ledger import LedgerApi
assert vars(Lanes)["_state"] is vars(LedgerApi)["_state"]
try:
    Lanes.gone
except AttributeError:
    print("ok")
"""


def test_a_stale_owners_table_costs_no_method():
    proc = subprocess.run([sys.executable, "-c", STALE], capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, "ok\n"), proc.stderr


RACE = """
import sys, threading
root, count = sys.argv[1], 8
start, found, failed = threading.Barrier(count), [], []

def first_use():
    start.wait()
    from git_lanes.api import Lanes
    found.append(Lanes)
    try:
        Lanes(root).task_list()  # a method of a mixin not loaded yet: its descriptor loads it
    except BaseException as exc:
        failed.append(repr(exc)[:200])

threads = [threading.Thread(target=first_use) for _ in range(count)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
import git_lanes.api as api
print(len({id(lanes) for lanes in found}), all(lanes is api.Lanes for lanes in found), failed)
"""


def test_threads_that_first_use_lanes_at_once_share_one_class(repo):
    """`Lanes` is made on first use: threads that ask for it at the same moment get the same class, whose
    methods each of them can call (an instance of a second class made by the race had descriptors that loaded
    their mixin into the other class and looked the name up again on themselves: RecursionError)."""
    proc = subprocess.run([sys.executable, "-c", RACE, str(repo)], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "1 True []\n"), proc.stdout + proc.stderr


def test_help_on_the_api_package_shows_lanes_before_its_first_use():
    """`Lanes` is made on first use; `dir()` on the package, and so `help()` and pydoc, list it all the same."""
    proc = subprocess.run([sys.executable, "-m", "pydoc", "git_lanes.api"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PAGER": "cat"})
    assert proc.returncode == 0 and "class Lanes(" in proc.stdout, proc.stdout[-2000:] + proc.stderr
