"""Command patterns of the policy (`[commands] allow` and `deny` in `.lanes.toml`) against a command's words.

A pattern is a glob over the command's words joined by single spaces, its program named by basename
(`/bin/rm -rf x` is `rm -rf x`); a pattern ending in ` *` also matches the bare command (`git diff *` matches
`git diff`). A deny pattern also matches however the options are spelled, since the shell does not care:
`rm -rf *` denies `rm -fr x`, `rm -r -f x`, `rm -Rf x`, `rm --recursive --force x` and `rm x -rf`, and
`git push --force *` denies `git push -f`, `git push origin +main`, `--force-with-lease`, `--mirror` and
`git -C . push --force`; a long option may be cut short, as GNU tools and git allow (`rm --rec --forc x`).
An allow pattern matches only as written: loosening must be explicit."""

from __future__ import annotations

import posixpath
from git_lanes.domain.shell_git import VALUED as GIT_VALUED
from git_lanes.model.globs import wildcard_match

GLOB = set("*?[")
# Spellings of one option, mapped to one of them (for deny patterns only: matching more is the safe side).
SAME_OPTION = {"--recursive": "-r", "-R": "-r", "--force": "-f", "--force-with-lease": "-f",
               "--force-if-includes": "-f"}
LONG_OPTIONS = frozenset(option for option in SAME_OPTION if option.startswith("--"))
# `git push --mirror` force-updates (and deletes) every remote ref, as `--force` would.
PUSH_FORCING = frozenset({"--mirror"})


def text_of(argv: tuple[str, ...] | list[str]) -> str:
    return " ".join((posixpath.basename(argv[0]), *argv[1:])) if argv else ""


def matches(pattern: str, argv: tuple[str, ...] | list[str]) -> bool:
    """`pattern` matches the command's words as written."""
    text = text_of(argv)
    return wildcard_match(text, pattern) or (pattern.endswith(" *") and text == pattern[:-2])


def denies(pattern: str, argv: tuple[str, ...] | list[str]) -> bool:
    """`pattern` matches the command as written, or its options in any order, grouping or spelling."""
    if matches(pattern, argv):
        return True
    words = pattern.split()
    wanted = _canonical(words)
    if wanted is None or not argv:
        return False
    program, flags, operands = wanted
    have = _canonical(list(argv), LONG_OPTIONS | {w.split("=", 1)[0] for w in words if w.startswith("--")})
    if have is None or not wildcard_match(have[0], program) or not flags <= have[1]:
        return False
    pattern_operands, command_operands = " ".join(operands), " ".join(have[2])
    return wildcard_match(command_operands, pattern_operands) or (
        pattern_operands.endswith("*") and wildcard_match(command_operands, pattern_operands.rstrip("* ")))


def _canonical(words: list[str], longs: frozenset[str] | None = None) -> tuple[str, frozenset[str], list[str]] | None:
    """(program, its options each spelled one way, its other words); None when options hold a glob, which
    only the literal match can honour. A command's words come with `longs`, the long options the pattern
    knows: one cut short (`--forc`, `--rec`) counts as each of them it begins, as GNU getopt and git take a
    unique abbreviation for the whole option, and `git push --mirror` forces."""
    if not words:
        return None
    program, rest = posixpath.basename(words[0]), words[1:]
    if program == "git":
        rest = _without_git_globals(rest)
    flags: set[str] = set()
    operands: list[str] = []
    ended = False
    for word in rest:
        if ended or word == "-" or not word.startswith("-") or word[1:2].isdigit():
            if program == "git" and operands[:1] == ["push"] and word.startswith("+") and len(word) > 1:
                flags.add("-f")  # git push origin +main forces, as --force does
            operands.append(word)
        elif word == "--":
            ended = True
        elif GLOB & set(word):
            return None
        elif word.startswith("--"):
            name = word.split("=", 1)[0]
            pushing = longs is not None and program == "git" and operands[:1] == ["push"]
            for long in _spelled(name, longs | PUSH_FORCING if pushing else longs):
                flags.add("-f" if pushing and long in PUSH_FORCING else SAME_OPTION.get(long, long))
        else:
            flags.update(SAME_OPTION.get("-" + letter, "-" + letter) for letter in word[1:])
    return program, frozenset(flags), operands


def _spelled(name: str, longs: frozenset[str] | None) -> list[str]:
    """The long options `name` may stand for: itself, or each of `longs` it abbreviates."""
    if longs is None or name in longs or len(name) < 3:
        return [name]
    return [long for long in longs if long.startswith(name)] or [name]


def _without_git_globals(words: list[str]) -> list[str]:
    """git's words from its subcommand on (`git -C dir -c k=v push` is `git push`)."""
    index = 0
    while index < len(words) and words[index].startswith("-"):
        name = words[index].split("=", 1)[0]
        index += 2 if name in GIT_VALUED and "=" not in words[index] else 1
    return words[index:]
