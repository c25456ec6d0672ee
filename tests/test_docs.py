"""Every command, found by walking the click tree (so commands are covered as they land), is documented:
help text, an `Example:` block, `--json`, and an entry in man/git-lanes.1, which must match its generator.
Start-up stays light: `--version` and `--help` load neither pygit2 nor the API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from git_lanes.cli import cli
from git_lanes.cli.manpage import generate, root_context, summaries, walk
from git_lanes.model.config import tomllib  # tomli: TOML 1.1, as git-lanes reads it

ROOT = Path(__file__).resolve().parent.parent
MAN_PAGE = ROOT / "man" / "git-lanes.1"
REGENERATE = ".venv/bin/python -m git_lanes.cli.manpage > man/git-lanes.1"

COMMANDS = [(ctx.command_path, command) for command, ctx in walk(cli, root_context())]
LEAVES = [(path, command) for path, command in COMMANDS if not isinstance(command, click.Group)]


def test_the_walk_finds_nested_commands():
    paths = {path for path, _ in COMMANDS}
    assert {"git lanes commit", "git lanes lane", "git lanes lane create", "git lanes lane delete"} <= paths


@pytest.mark.parametrize("path,command", COMMANDS, ids=[p for p, _ in COMMANDS])
def test_command_has_help_with_an_example(path, command):
    text = command.help or ""
    assert text.strip(), f"{path} has no help"
    example = next((block for block in text.split("\n\n") if block.strip().startswith("\b")
                    and "Example:" in block), None)
    assert example is not None, f"{path}'s help has no \\b-protected 'Example:' block"
    assert f"{path}" in example or "git lanes" in example, f"{path}'s example does not show the command"


@pytest.mark.parametrize("path,command", LEAVES, ids=[p for p, _ in LEAVES])
def test_command_has_json_output(path, command):
    assert any("--json" in param.opts for param in command.params if isinstance(param, click.Option)), path


@pytest.mark.parametrize("path,command", COMMANDS, ids=[p for p, _ in COMMANDS])
def test_command_help_runs(path, command):
    args = path.split()[2:] + ["-h"]
    result = CliRunner().invoke(cli, args, prog_name="git lanes")
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output and "Usage: git lanes" in result.output


def test_man_page_is_up_to_date():
    assert MAN_PAGE.read_text() == generate(), f"regenerate it: {REGENERATE}"


def test_the_help_summaries_are_up_to_date():
    """`git lanes --help` lists the commands from git_lanes/cli/summaries.py, so that it loads none of them."""
    regenerate = ".venv/bin/python -m git_lanes.cli.manpage --summaries > git_lanes/cli/summaries.py"
    assert (ROOT / "git_lanes" / "cli" / "summaries.py").read_text() == summaries(), f"regenerate it: {regenerate}"


@pytest.mark.parametrize("path,command", COMMANDS, ids=[p for p, _ in COMMANDS])
def test_man_page_has_an_entry_per_command(path, command):
    page = MAN_PAGE.read_text()
    assert f'.SS "{path}"' in page
    entry = page.split(f'.SS "{path}"', 1)[1].split(".SS ", 1)[0]
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.opts[-1].replace("-", "\\-") in entry, f"{path}: {param.opts[-1]} missing"


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_warnings():
    proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(MAN_PAGE)], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_man_page_is_installed_where_man_finds_it():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data_files = config["tool"]["setuptools"]["data-files"]
    assert data_files["share/man/man1"] == ["man/git-lanes.1"]
    installed = Path(sys.prefix) / "share" / "man" / "man1" / "git-lanes.1"
    assert installed.exists(), "editable installs get the man page from contrib/packaging/backend.py"


def test_the_editable_install_adds_no_import_hook_to_every_start():
    """setuptools' editable finder costs ~16 ms on each interpreter start (hooks, commands); the backend puts a
    plain path in its place (contrib/packaging/backend.py)."""
    site = Path(sysconfig.get_paths()["purelib"])
    assert not list(site.glob("__editable___*finder*.py"))
    found = subprocess.run([sys.executable, "-c", "import sys; print(sorted(sys.modules))"], capture_output=True,
                           text=True, check=True, cwd="/").stdout
    assert "__editable__" not in found and "'pathlib'" not in found


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_and_git_help_find_the_page_from_path(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MANPATH", "MANPAGER", "PAGER")}
    env |= {"PATH": f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ['PATH']}", "MANPAGER": "cat",
            "MANWIDTH": "80"}
    found = subprocess.run(["man", "-w", "git-lanes"], capture_output=True, text=True, env=env)
    assert found.returncode == 0 and Path(found.stdout.strip()).resolve().parent.parent.parent.parent == \
        Path(sys.prefix).resolve(), found.stderr
    shown = subprocess.run(["git", "lanes", "--help"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert shown.returncode == 0 and "GIT-LANES(1)" in shown.stdout, shown.stderr


PROBE = """
import sys
from git_lanes.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="git lanes")
except SystemExit:
    pass
print(__import__("json").dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("pygit2", "git_lanes"))),
      file=sys.stderr)
"""


def loaded_modules(*args: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT)
    return json.loads(proc.stderr.strip().splitlines()[-1])


def test_version_loads_no_command_module():
    assert loaded_modules("--version") == ["git_lanes", "git_lanes.cli"]


@pytest.mark.parametrize("args", [["--help"], ["lane", "--help"], ["commit", "-h"], ["lane", "create", "-h"]])
def test_help_loads_neither_pygit2_nor_the_api(args):
    loaded = loaded_modules(*args)
    heavy = [m for m in loaded if m.startswith(("pygit2", "git_lanes.api", "git_lanes.store", "git_lanes.domain"))]
    assert heavy == []


def test_one_command_loads_only_its_own_module():
    loaded = loaded_modules("lane", "--help")
    assert "git_lanes.cli.lane" in loaded
    assert not [m for m in loaded if m.startswith("git_lanes.cli.") and m not in
                {"git_lanes.cli.lane", "git_lanes.cli.output", "git_lanes.cli.options"}]
