"""Command advice in each face's own words. The lower layers name a command a hint advises with
`errors.command` (a command path and its arguments), written as the CLI spells it, in backticks; a face with
controls of its own (the MCP server's tools, the REST routes) reads each such reference back here and names
its own equivalent instead, or keeps the CLI's words, labelled as such, where it has none; an option of the
command the hint answers (`errors.option`: `--force`) becomes the face's parameter of that name (`force=true`).
`hint` stays a plain string in every face's output."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from git_lanes.errors import COMMAND_PREFIX

REFERENCE = re.compile(rf"`{re.escape(COMMAND_PREFIX)} ([^`]*)`")
# An option of the command a hint answers, as `errors.option` writes it (`--force`, `--branch NAME`).
OPTION = re.compile(r"`(--[a-z][a-z0-9-]*)(?: ([^`]+))?`")
# What a face without an equivalent adds to the CLI's words, so a reader with no shell knows what they are.
CLI_LABEL = " (CLI)"


@dataclass(frozen=True)
class Equivalent:
    """What a face offers for one CLI command: `name` (a tool, a route), the names its parameters take for
    the CLI's positional `arguments` (in order) and for the CLI's valued `options` and boolean `flags`
    (`{"--into": "into"}`; `{"--no-setup": "!setup"}` sets `setup` false, and `""` names a flag the face
    needs no parameter for). A reference using anything not listed here has no equivalent."""

    name: str
    arguments: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    flags: Mapping[str, str] = field(default_factory=dict)


Call = tuple[Equivalent, dict[str, Any]]  # an equivalent and the values of its parameters, in order given


def references(text: str) -> list[tuple[re.Match[str], tuple[str, ...]]]:
    """Each command reference in `text`, with its words after `git lanes` (a reference that does not split as
    a shell would split it is left out: a face keeps its words)."""
    found = []
    for match in REFERENCE.finditer(text):
        try:
            found.append((match, tuple(shlex.split(match.group(1)))))
        except ValueError:
            continue
    return found


def options(text: str) -> list[tuple[re.Match[str], str, Any]]:
    """Each option reference in `text`, with the name of the parameter it sets in every face and its value
    (`--no-setup` sets `setup` false)."""
    found: list[tuple[re.Match[str], str, Any]] = []
    for match in OPTION.finditer(text):
        name = match.group(1)[2:].replace("-", "_")
        if match.group(2) is None:
            found.append((match, *((name[3:], False) if name.startswith("no_") else (name, True))))
            continue
        try:
            words = shlex.split(match.group(2))
        except ValueError:
            continue
        if len(words) == 1:
            found.append((match, name, words[0]))
    return found


def call_of(words: tuple[str, ...], table: Mapping[str, Equivalent]) -> Call | None:
    """The equivalent in `table` (keyed by CLI command path) of the command `words`, with its parameters'
    values; None when the face has none, or not for every argument and option given."""
    path = max((key for key in table if tuple(key.split()) == words[:len(key.split())]),
               key=lambda key: len(key.split()), default=None)
    if path is None:
        return None
    equivalent = table[path]
    rest = list(words[len(path.split()):])
    values: dict[str, Any] = {}
    positional = iter(equivalent.arguments)
    while rest:
        word = rest.pop(0)
        if word in equivalent.flags:
            flag = equivalent.flags[word]
            if flag:
                values[flag.lstrip("!")] = not flag.startswith("!")
        elif word in equivalent.options and rest:
            values[equivalent.options[word]] = rest.pop(0)
        elif word.startswith("-") and word != "-":
            return None
        else:
            name = next(positional, None)
            if name is None:
                return None
            values[name] = word
    return equivalent, values


def is_placeholder(word: str) -> bool:
    """Whether a command's word stands for what the reader fills in (`ID`, `LANE`, `...`)."""
    return word in ("...", "…") or (word.replace("_", "").isalpha() and word.isupper())


def value_text(value: Any) -> str:
    """A parameter's value as JSON writes it, a placeholder as it is."""
    return value if isinstance(value, str) and is_placeholder(value) else json.dumps(value)


def translated(text: str, render: Callable[[tuple[str, ...]], str | None],
               parameter: Callable[[str, Any], str]) -> str:
    """`text` with each command reference that `render` gives words for (the face's equivalent, in
    backticks) replaced by them, and each other labelled as the CLI's; and each option of the command it
    answers replaced by the face's `parameter` of that name set to its value (in backticks)."""
    spans = []
    for match, words in references(text):
        rendered = render(words)
        spans.append((match.start(), match.end(), rendered if rendered is not None else match.group(0) + CLI_LABEL))
    spans += [(match.start(), match.end(), parameter(name, value)) for match, name, value in options(text)]
    out, at = [], 0
    for start, end, replacement in sorted(spans):
        out += [text[at:start], replacement]
        at = end
    return "".join(out) + text[at:] if out else text


def advised(data: Any, advise: Callable[[str], str]) -> Any:
    """`data` (JSON-shaped) with every `hint` field's text passed through `advise`: a hint is advice
    wherever a record carries one (an error, a problem inside a result, a blocked path of a sync)."""
    if isinstance(data, dict):
        return {key: advise(value) if key == "hint" and isinstance(value, str) else advised(value, advise)
                for key, value in data.items()}
    if isinstance(data, list):
        return [advised(value, advise) for value in data]
    return data
