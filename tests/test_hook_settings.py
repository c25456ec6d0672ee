"""install / uninstall merge into the agent CLIs' settings files without touching anything else; doctor
reports missing or broken hooks."""

from __future__ import annotations

import json

import pytest
from conftest import git, run_cli

USER_HOOK = {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "/path/to/lint-check.sh"}]}


def settings_file(repo, cli):
    return repo / {"claude": ".claude/settings.json", "codex": ".codex/hooks.json",
                   "gemini": ".gemini/settings.json"}[cli]


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_install_keeps_other_hooks_and_keys_and_uninstall_removes_exactly_ours(repo, cli):
    path = settings_file(repo, cli)
    path.parent.mkdir()
    original = {"model": "x", "permissions": {"allow": ["Bash(ls:*)"]},
                "hooks": {"PostToolUse": [USER_HOOK], "Notification": [{"hooks": [{"type": "command",
                                                                                   "command": "notify.sh"}]}]}}
    path.write_text(json.dumps(original, indent=4))
    first = run_cli("install", cli, "--json", cwd=repo)
    assert first.code == 0 and first.json["changed"], first.err
    installed = json.loads(path.read_text())
    assert installed["model"] == "x" and installed["permissions"] == original["permissions"]
    assert USER_HOOK in installed["hooks"]["PostToolUse"]
    commands = [h["command"] for groups in installed["hooks"].values() for g in groups for h in g["hooks"]]
    pre = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool"}[cli]
    assert any(c.endswith(f"hook {cli} {pre}") for c in commands)
    again = run_cli("install", cli, "--json", cwd=repo)
    assert again.json["changed"] is False and json.loads(path.read_text()) == installed
    removed = run_cli("uninstall", cli, "--json", cwd=repo)
    assert removed.code == 0 and removed.json["changed"]
    assert json.loads(path.read_text()) == original


def test_install_on_a_missing_file_and_uninstall_leaves_no_trace(repo):
    path = settings_file(repo, "claude")
    dry = run_cli("install", "claude", "--dry-run", "--json", cwd=repo)
    assert dry.json["changed"] and not path.exists()
    assert run_cli("install", "claude", cwd=repo).code == 0
    data = json.loads(path.read_text())
    assert set(data["hooks"]) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                                  "PostToolUseFailure", "PreCompact", "Stop", "SubagentStop", "SessionEnd"}
    assert data["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] == 60
    assert run_cli("uninstall", "claude", cwd=repo).code == 0
    assert not path.exists() and not path.parent.exists()  # install made them; an empty `{}` was a trace


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_install_then_uninstall_leaves_the_worktree_as_it_was(repo, cli):
    """Install made the settings files (and the MCP entry's file) and their folders; uninstall left them
    behind holding `{}` or nothing, untracked files in `git status` that were never the person's."""
    before = git("status", "--porcelain", "--untracked-files=all", cwd=repo)
    assert run_cli("install", cli, cwd=repo).code == 0
    assert git("status", "--porcelain", cwd=repo) != before  # the precondition: install wrote files here
    assert run_cli("uninstall", cli, cwd=repo).code == 0
    assert git("status", "--porcelain", "--untracked-files=all", cwd=repo) == before


def test_uninstall_keeps_a_file_that_holds_anything_else(repo):
    path = settings_file(repo, "claude")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"model": "opus"}\n')
    assert run_cli("install", "claude", cwd=repo).code == 0
    assert run_cli("uninstall", "claude", cwd=repo).code == 0
    assert json.loads(path.read_text()) == {"model": "opus"}


def test_gemini_timeouts_are_milliseconds(repo):
    run_cli("install", "gemini", cwd=repo)
    data = json.loads(settings_file(repo, "gemini").read_text())
    assert data["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] == 60000


def test_user_scope_writes_in_home(repo, hermetic):
    assert run_cli("install", "claude", "--scope", "user", cwd=repo).code == 0
    assert (hermetic / ".claude" / "settings.json").exists() and not settings_file(repo, "claude").exists()


def test_a_settings_file_that_is_not_json_is_never_overwritten(repo):
    path = settings_file(repo, "claude")
    path.parent.mkdir()
    path.write_text("{ not json")
    result = run_cli("install", "claude", cwd=repo)
    assert result.code == 1 and "not valid JSON" in result.err and path.read_text() == "{ not json"


@pytest.mark.parametrize("groups", [[{"hooks": "x"}], ["x"], [{"hooks": {"command": "y"}}]])
def test_a_matcher_group_that_is_malformed_is_never_merged_into(repo, groups):
    """A group the agent CLI cannot read may cost the whole file: install would say the wall is up while the
    CLI drops it. It is refused, as a malformed event list already was, and the file is left as it was."""
    path = settings_file(repo, "claude")
    path.parent.mkdir()
    text = json.dumps({"hooks": {"PreToolUse": groups}})
    path.write_text(text)
    result = run_cli("install", "claude", "--json", cwd=repo)
    assert result.code == 1 and result.json["error"] == "invalid_settings", result.err
    assert "Traceback" not in result.err and path.read_text() == text


def test_a_settings_path_that_cannot_be_read_is_one_user_error(repo):
    """A folder where the settings file goes, or a file that is not UTF-8: one line, exit 1, nothing changed
    (it was an internal error, exit 6)."""
    path = settings_file(repo, "claude")
    path.mkdir(parents=True)
    for command in (["install", "claude"], ["uninstall", "claude"]):
        result = run_cli(*command, "--json", cwd=repo)
        assert (result.code, result.json["error"]) == (1, "invalid_settings") and "Is a directory" in result.err
    path.rmdir()
    path.write_bytes(b"\xff\xfe{}")
    result = run_cli("install", "claude", "--json", cwd=repo)
    assert (result.code, result.json["error"]) == (1, "invalid_settings") and path.read_bytes() == b"\xff\xfe{}"


@pytest.mark.parametrize("cli,servers,content", [("claude", ".mcp.json", "{ not json"),
                                                  ("codex", ".codex/config.toml", "bad = ["),
                                                  ("codex", ".codex/config.toml", None)])
def test_an_mcp_settings_file_that_cannot_be_read_leaves_the_hooks_unwritten_too(repo, cli, servers, content):
    """install wrote the hooks, then met the MCP settings it cannot read and said "nothing was changed": a
    half install. Both files are checked before either is written. (None: a folder where the file goes.)"""
    place = repo / servers
    place.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        place.mkdir()
    else:
        place.write_text(content)
    result = run_cli("install", cli, "--json", cwd=repo)
    assert (result.code, result.json["error"]) == (1, "invalid_settings"), result.err
    assert not settings_file(repo, cli).exists()
    assert run_cli("install", cli, "--no-mcp", cwd=repo).code == 0  # the hooks alone, when asked
    hooks = settings_file(repo, cli).read_text()
    result = run_cli("uninstall", cli, "--json", cwd=repo)
    assert (result.code, result.json["error"]) == (1, "invalid_settings")
    assert settings_file(repo, cli).read_text() == hooks


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
@pytest.mark.parametrize("prefix", ["git lane", "gitlanes", "", "  ", "git lanes --json"])
def test_a_command_prefix_that_does_not_start_git_lanes_is_refused(repo, cli, prefix):
    """`install --command 'git lane'` (a typo) wrote hooks git answers with "not a git command", exit 1, which
    every CLI reads as "hook failed, run the tool": the wall failed open, doctor said no hooks were installed,
    and uninstall, not recognising them, left them all in place."""
    result = run_cli("install", cli, "--command", prefix, "--json", cwd=repo)
    assert result.code == 1 and result.json["error"] == "invalid_command", result.err
    assert not settings_file(repo, cli).exists() and not (repo / ".mcp.json").exists()
    for accepted in ("git lanes", "/opt/my tools/git-lanes", "'/opt/my tools/git-lanes'", "python3 -m git_lanes"):
        assert run_cli("install", cli, "--command", accepted, cwd=repo).code == 0, accepted
        assert run_cli("uninstall", cli, cwd=repo).code == 0
        assert not settings_file(repo, cli).exists(), accepted


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_a_settings_file_that_is_a_symbolic_link_is_written_through_and_stays_a_link(repo, hermetic, cli):
    """A settings file kept in a dotfiles repository and linked into place (GNU stow, chezmoi) was replaced by a
    plain file: the link was gone and the dotfiles copy never saw the hooks, nor their removal. git writes
    through a linked config file; so do install and uninstall, on the file and on the MCP servers' file."""
    dotfiles = hermetic / "dotfiles"
    dotfiles.mkdir()
    links = {settings_file(hermetic, cli): dotfiles / "settings.json"}
    if cli == "codex":
        links[hermetic / ".codex" / "config.toml"] = dotfiles / "config.toml"
    for link, target in links.items():
        target.write_text("" if target.suffix == ".toml" else '{"model": "x"}\n')
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(target)
    originals = {target: target.read_text() for target in links.values()}
    assert run_cli("install", cli, "--scope", "user", cwd=repo).code == 0
    for link, target in links.items():
        assert link.is_symlink() and link.resolve() == target
    assert "hook " + cli in (dotfiles / "settings.json").read_text()
    assert run_cli("uninstall", cli, "--scope", "user", cwd=repo).code == 0
    for link, target in links.items():
        assert link.is_symlink() and link.resolve() == target
    assert json.loads((dotfiles / "settings.json").read_text()) == {"model": "x"}
    if cli == "codex":
        assert "lanes" not in (dotfiles / "config.toml").read_text()


def test_doctor_reports_missing_and_broken_hooks(repo):
    report = run_cli("doctor", "--json", cwd=repo)
    assert report.code == 0, report.err
    statuses = {c["check"]: c["status"] for c in report.json["checks"]}
    assert statuses["hooks.claude"] == "warn" and statuses["hooks.policy"] == "ok"
    run_cli("install", "claude", cwd=repo)
    assert {c["check"]: c["status"] for c in run_cli("doctor", "--json", cwd=repo).json["checks"]}[
        "hooks.claude"] == "ok"
    path = settings_file(repo, "claude")
    data = json.loads(path.read_text())
    del data["hooks"]["PreToolUse"]
    path.write_text(json.dumps(data))
    broken = run_cli("doctor", "--json", cwd=repo)
    assert broken.code == 1
    found = [c for c in broken.json["checks"] if c["check"] == "hooks.claude"][0]
    assert found["status"] == "fail" and "PreToolUse" in found["message"]
    run_cli("install", "claude", "--command", "/nonexistent/git-lanes", cwd=repo)
    gone = run_cli("doctor", "--check", "hooks.claude", "--json", cwd=repo)
    assert gone.code == 1 and "not there" in gone.json["checks"][0]["message"]


def test_the_claude_plugin_wires_the_same_hooks_as_install():
    from pathlib import Path

    from git_lanes.domain import hook_settings

    plugin = Path(__file__).resolve().parent.parent / "contrib" / "claude-plugin"
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    # Claude Code loads hooks/hooks.json by itself; `hooks` in the manifest is for further files only, and
    # naming the standard one there fails the load ("Duplicate hooks file detected"): no hook would run.
    assert manifest["name"] == "git-lanes" and "hooks" not in manifest
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]
    assert {event: groups[0]["hooks"][0] for event, groups in hooks.items()} == \
        hook_settings.handlers("claude", "git lanes")


def test_every_shipped_manifest_names_the_package_version():
    """The plugin manifest, the package metadata and the man page each state a version of their own; a
    release that bumps one and not the others tells `claude plugin` users they run an older build."""
    import re
    from pathlib import Path

    import git_lanes

    root = Path(__file__).resolve().parent.parent
    manifest = json.loads((root / "contrib" / "claude-plugin" / ".claude-plugin" / "plugin.json").read_text())
    project = re.search(r'^version = "([^"]+)"$', (root / "pyproject.toml").read_text(), re.MULTILINE)
    man = re.search(r'^\.TH .*"git-lanes ([^"]+)"', (root / "man" / "git-lanes.1").read_text(), re.MULTILINE)
    assert project and man
    assert {manifest["version"], project.group(1), man.group(1)} == {git_lanes.__version__}


def test_doctor_fails_a_hook_that_is_there_but_does_not_hold(repo):
    """A handler that runs another event than the one it sits under, a matcher that lets some tools past,
    and hooks switched off are each a wall with a hole, not an installed hook."""
    from git_lanes.domain import hook_settings
    from git_lanes.hooks import gemini

    assert hook_settings.GEMINI_ALIASES == gemini.ALIASES
    assert run_cli("install", "claude", "--no-mcp", cwd=repo).code == 0
    path = settings_file(repo, "claude")
    installed = json.loads(path.read_text())

    def inspected(change) -> dict:
        data = json.loads(json.dumps(installed))
        change(data)
        path.write_text(json.dumps(data))
        return hook_settings.inspect(path, "claude")

    def retarget(data):
        handler = data["hooks"]["PreToolUse"][0]["hooks"][0]
        handler["command"] = handler["command"].replace("PreToolUse", "PostToolUse")

    report = inspected(retarget)
    assert report["misplaced"] == ["PreToolUse runs `hook claude PostToolUse`"] and "PreToolUse" in report["missing"]
    assert inspected(lambda d: d["hooks"]["PreToolUse"][0].update(matcher="Bash"))["narrowed"] == \
        ["PreToolUse (matcher 'Bash')"]
    assert inspected(lambda d: d.update(disableAllHooks=True))["disabled"] == "disableAllHooks is true"
    inspected(retarget)
    doctor = run_cli("doctor", "--check", "hooks.claude", "--json", cwd=repo)
    assert doctor.code == 1 and "misplaced" in doctor.json["checks"][0]["message"]
    assert run_cli("install", "claude", "--no-mcp", cwd=repo).code == 0  # install puts it right
    assert run_cli("doctor", "--check", "hooks.claude", "--json", cwd=repo).code == 0
