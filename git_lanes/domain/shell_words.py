"""Words of a parsed shell line as the shell would pass them to a program: quotes removed, backslashes and
`$'…'` escapes decoded, unquoted `{a,b}` and `{1..3}` brace-expanded, and each marked `dynamic` when the
shell computes it at run time (a parameter expansion, a command, process or arithmetic substitution), so
its text as written is not what will run. A program name with an unquoted glob (`/bin/c?rl`) is dynamic
too: the file system decides what it names."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # names for annotations only: the hook path loads nothing for them
if TYPE_CHECKING:
    from collections.abc import Sequence

Word = tuple[str, bool]

EXPANSIONS = {"simple_expansion", "expansion", "command_substitution", "process_substitution",
              "arithmetic_expansion"}
MAX_WORDS = 256  # what one word may brace-expand to before it is refused as too much to check
ANSI_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
SEQUENCE = re.compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")

# A word in the making: its characters, each with whether it is "active" (unquoted, so braces and globs in
# it mean something to the shell), and whether an expansion went into it.
Chars = list[tuple[str, bool]]


def word_of(node) -> Word:
    """One word, as written when it holds an expansion; braces are not expanded (see `words_of`)."""
    chars: Chars = []
    dynamic = _collect(node, chars)
    return "".join(c for c, _ in chars), dynamic


def words_of(nodes: list, program: bool = False) -> list[Word] | None:
    """The words `nodes` become after brace expansion (None when that is more than MAX_WORDS); with
    `program`, the first word names the program and a glob in it makes it dynamic."""
    out: list[Word] = []
    for index, node in enumerate(nodes):
        chars: Chars = []
        dynamic = _collect(node, chars)
        expanded = _braces(chars, [0])
        if expanded is None:
            return None
        for text, active in expanded:
            globbed = index == 0 and program and _has_glob(text, active)
            out.append((text, dynamic or globbed))
    return out


def _collect(node, chars: Chars, quoted: bool = False) -> bool:
    kind = node.type
    text = node.text.decode("utf-8", "surrogateescape")
    if kind == "command_name":
        return any([_collect(c, chars, quoted) for c in node.children]) if node.children else _plain(text, chars)
    if kind == "raw_string":
        chars.extend((c, False) for c in text[1:-1])
        return False
    if kind == "ansi_c_string":
        chars.extend((c, False) for c in _ansi_c(text[2:-1]))
        return False
    if kind in ("string", "translated_string"):
        # The grammar leaves some of a string's text (newlines, for one) between its children: the gaps
        # are content too.
        dynamic, position = False, node.start_byte
        raw = node.text
        for child in node.children:
            gap = raw[position - node.start_byte:child.start_byte - node.start_byte]
            chars.extend((c, False) for c in _unescape_quoted(gap.decode("utf-8", "surrogateescape")))
            position = child.end_byte
            if child.type in ('"', "$"):
                continue
            dynamic = _collect(child, chars, True) or dynamic
        return dynamic
    if kind == "string_content":
        chars.extend((c, False) for c in _unescape_quoted(text))
        return False
    if kind == "concatenation":
        return any([_collect(c, chars, quoted) for c in node.children])
    if kind == "word":
        return _plain(text, chars) if not quoted else (chars.extend((c, False) for c in text) or False)
    if kind in EXPANSIONS:
        chars.extend((c, False) for c in text)
        return True
    chars.extend((c, not quoted) for c in text)
    return False


def _plain(text: str, chars: Chars) -> bool:
    """An unquoted word: a backslash quotes the next character."""
    index = 0
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text):
            index += 1
            if text[index] != "\n":  # a backslash-newline joins lines
                chars.append((text[index], False))
        else:
            chars.append((text[index], True))
        index += 1
    return False


def _unescape_quoted(text: str) -> str:
    """Inside double quotes a backslash quotes only $ ` " \\ and a newline."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _ansi_c(text: str) -> str:
    """The value of a `$'…'` word (bash's escapes: \\n, \\xHH, \\uHHHH, \\NNN octal, \\cX…)."""
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code in ANSI_ESCAPES:
            out.append(ANSI_ESCAPES[code])
            index += 2
        elif code in "xuU":
            digits = re.match(r"[0-9A-Fa-f]{1,%d}" % {"x": 2, "u": 4, "U": 8}[code], text[index + 2:])
            if digits:
                out.append(chr(int(digits.group(0), 16)))
                index += 2 + len(digits.group(0))
            else:
                out.append("\\" + code)
                index += 2
        elif code in "01234567":
            digits = re.match(r"[0-7]{1,3}", text[index + 1:])
            assert digits is not None
            out.append(chr(int(digits.group(0), 8) & 0xFF))
            index += 1 + len(digits.group(0))
        elif code == "c" and index + 2 < len(text):
            out.append(chr(ord(text[index + 2]) & 0x1F))
            index += 3
        else:
            out.append("\\" + code)
            index += 2
    return "".join(out)


def _has_glob(text: str, active: list[bool]) -> bool:
    if any(a and c in "*?" for c, a in zip(text, active)):
        return True
    opened = next((i for i, (c, a) in enumerate(zip(text, active)) if a and c == "["), None)
    return opened is not None and len(text) > 1 and any(a and c == "]" for c, a in zip(text[opened + 1:],
                                                                                        active[opened + 1:]))


def _braces(chars: Chars, budget: list[int]) -> list[tuple[str, list[bool]]] | None:
    """Bash's brace expansion of one word: `{a,b}` lists (nested) and `{x..y[..step]}` sequences, only
    where the braces and commas are unquoted. None when the word expands to more than MAX_WORDS."""
    for start, (char, active) in enumerate(chars):
        if char != "{" or not active or (start and chars[start - 1] == ("$", True)):
            continue
        depth, commas, end = 0, [], None
        for index in range(start, len(chars)):
            c, a = chars[index]
            if not a:
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    end = index
                    break
            elif c == "," and depth == 1:
                commas.append(index)
        if end is None:
            continue
        head, tail = chars[:start], chars[end + 1:]
        if commas:
            parts, begin = [], start + 1
            for cut in [*commas, end]:
                parts.append(chars[begin:cut])
                begin = cut + 1
        else:
            inner = chars[start + 1:end]
            items = _sequence("".join(c for c, _ in inner)) if all(a for _, a in inner) else None
            if items is None:
                continue
            parts = [[(c, False) for c in item] for item in items]
        out = []
        for part in parts:
            budget[0] += 1
            if budget[0] > MAX_WORDS:
                return None
            expanded = _braces(head + part + tail, budget)
            if expanded is None:
                return None
            out += expanded
        return out
    return [("".join(c for c, _ in chars), [a for _, a in chars])]


def _sequence(text: str) -> list[str] | None:
    match = SEQUENCE.match(text)
    if match is None:
        return None
    first, last, step = match.group(1), match.group(2), abs(int(match.group(3) or 1)) or 1
    if first.lstrip("-").isdigit() and last.lstrip("-").isdigit():
        low, high = int(first), int(last)
        if abs(high - low) // step > MAX_WORDS:
            return [first] * (MAX_WORDS + 1)
        values = range(low, high + (1 if high >= low else -1), step if high >= low else -step)
        return [str(v) for v in values]
    if first.isalpha() and last.isalpha():
        low, high = ord(first), ord(last)
        return [chr(v) for v in range(low, high + (1 if high >= low else -1), step if high >= low else -step)]
    return None


def options(words: Sequence[Word], valued: frozenset[str]) -> tuple[dict[str, Word], int]:
    """The options at the start of `words` (a command's arguments) and the index of the first word after
    them. Short options may be grouped (`-iu root`, `-uroot`), long ones carry `=value` or take the next
    word; `--` ends them."""
    found: dict[str, Word] = {}
    index = 0
    while index < len(words):
        text, dynamic = words[index]
        if text == "--":
            return found, index + 1
        if not text.startswith("-") or text == "-" or dynamic:
            break
        if text.startswith("--"):
            name, equals, value = text.partition("=")
            if equals:
                found[name] = (value, dynamic)
            elif name in valued and index + 1 < len(words):
                index += 1
                found[name] = words[index]
            else:
                found[name] = ("", False)
        else:
            for position, letter in enumerate(text[1:], 1):
                name = "-" + letter
                if name in valued:
                    rest = text[position + 1:]
                    if rest:
                        found[name] = (rest, dynamic)
                    elif index + 1 < len(words):
                        index += 1
                        found[name] = words[index]
                    break
                found[name] = ("", False)
        index += 1
    return found, index
