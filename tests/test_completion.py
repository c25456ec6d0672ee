"""Shell completion in contrib/completion/: generated from click (and up to date), and the bash script
completes both `git-lanes …` and, through git's own completion, `git lanes …`."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMPLETION = ROOT / "contrib" / "completion"
GIT_COMPLETION = Path("/usr/share/bash-completion/completions/git")


def generator():
    spec = importlib.util.spec_from_file_location("completion_generate", COMPLETION / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scripts_are_up_to_date():
    for name, text in generator().scripts().items():
        assert (COMPLETION / name).read_text() == text, \
            f"regenerate: .venv/bin/python contrib/completion/generate.py ({name})"


def bash(script: str) -> str:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-c", f"source {COMPLETION / 'git-lanes.bash'}\n{script}"], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def complete(words: list[str], function: str) -> list[str]:
    quoted = " ".join(f"'{w}'" for w in words)
    return bash(f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; COMPREPLY=(); {function} git-lanes; "
                "printf '%s\\n' \"${COMPREPLY[@]}\"").split()


def test_bash_script_sources_and_defines_its_functions():
    out = bash("type -t _git_lanes_completion; type -t _git_lanes; complete -p git-lanes")
    assert out.split("\n")[:2] == ["function", "function"]
    assert "_git_lanes_completion" in out


def test_bash_completes_commands_subcommands_and_options():
    assert complete(["git-lanes", "la"], "_git_lanes_completion") == ["lane"]
    assert complete(["git-lanes", "lane", "cr"], "_git_lanes_completion") == ["create"]
    assert "--auto-accept" in complete(["git-lanes", "commit", "--auto"], "_git_lanes_completion")


def test_git_lanes_hook_completes_after_git_options():
    assert complete(["git", "lanes", "lane", "de"], "_git_lanes") == ["delete"]
    assert complete(["git", "-C", "/tmp", "lanes", "histo"], "_git_lanes") == ["history"]


@pytest.mark.skipif(not GIT_COMPLETION.exists(), reason="git's bash completion is not installed")
def test_gits_own_completion_finds_the_hook():
    out = bash(f"source {GIT_COMPLETION}\nCOMP_LINE='git lanes his'; COMP_POINT=${{#COMP_LINE}}; "
               "COMP_WORDS=(git lanes his); COMP_CWORD=2; COMPREPLY=(); __git_wrap__git_main git lanes; "
               "printf '%s\\n' \"${COMPREPLY[@]}\"")
    assert out.split() == ["history"]
