"""Text people and agents type (titles, prompts, posts, tags): one rule for every face.

Text is stored in JSON records and in commit messages. libgit2 cuts a commit message at a NUL, and a lone
surrogate (what Python makes of bytes that are not UTF-8 in argv) is no character at all: strict JSON readers
reject it. So text is valid Unicode with no control characters but tab (and line breaks where several lines
are allowed)."""

from __future__ import annotations

from git_lanes.errors import UserError

# C0 and C1 controls and DEL; tab, line feed and carriage return are judged separately. Compiled by `re` on
# first use: most text is printable (no control, no surrogate, no line break) and needs neither, so `re`
# itself is loaded only then (with the `enum` it loads, ~3 ms of a light sync's start).
_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
_SURROGATE = r"[\ud800-\udfff]"
MAX_REASON = 16_384


def _found(pattern: str, value: str) -> bool:
    import re

    return re.search(pattern, value) is not None


def text_problem(value: object, *, multiline: bool = False) -> str | None:
    """Why `value` is not acceptable text, or None when it is."""
    if not isinstance(value, str):
        return f"is not text but {type(value).__name__}"
    if value.isprintable():
        return None
    if _found(_SURROGATE, value):
        return "is not valid UTF-8"
    if _found(_CONTROL, value):
        return "contains a control character"
    if not multiline and ("\n" in value or "\r" in value):
        return "must be a single line"
    return None


def check_text(value: object, what: str, *, code: str, multiline: bool = False, max_chars: int | None = None,
               max_bytes: int | None = None, hint: str | None = None, name: bool = False) -> str:
    """Return `value` when it is acceptable text for `what` (a name's characters alone if `name`: see
    `name_problem`), else raise UserError(`code`)."""
    problem = text_problem(value, multiline=multiline)
    if problem is None and name and isinstance(value, str):
        problem = name_problem(value)
    if problem is not None:
        raise UserError(f"{what} {problem}", code=code, hint=hint)
    assert isinstance(value, str)
    if max_chars is not None and len(value) > max_chars:
        raise UserError(f"{what} is {len(value)} characters; the limit is {max_chars}", code=code, hint=hint)
    if max_bytes is not None and len(value.encode()) > max_bytes:
        raise UserError(f"{what} is {len(value.encode())} bytes; the limit is {max_bytes}", code=code, hint=hint)
    return value


def check_reason(value: object, what: str = "the reason") -> str | None:
    """A reason, goal or note someone gives (several lines allowed), or None when none is given."""
    return None if value is None else check_text(value, what, code="invalid_reason", multiline=True,
                                                 max_chars=MAX_REASON)


def as_reason(value: str) -> str:
    """`value`, text from anywhere (an exception's message: terminal colours, a whole traceback, bytes that are
    not UTF-8), made a reason `check_reason` accepts, for a face that writes the reason itself rather than
    passing on one a person gave: each control character (but tab and line breaks) and each lone surrogate
    is written as its escape (`\\x1b`), and what is past MAX_REASON characters is cut, saying so."""
    import re

    text = re.sub(f"{_CONTROL}|{_SURROGATE}", lambda found: ascii(found.group())[1:-1], value)
    if len(text) <= MAX_REASON:
        return text
    cut = f"… (cut: {len(text)} characters)"
    return text[:MAX_REASON - len(cut)] + cut


def shown_path(path: str) -> str:
    """`path` as text every JSON writer takes: the bytes of a file name that are not UTF-8 (held as lone
    surrogates, as Python reads them) written as `\\xe9`, as `quoted` shows them, for a record that names a
    path to people (a post, a review) rather than one git reads back."""
    if path.isascii() or not _found(_SURROGATE, path):
        return path
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# The characters that make git quote a path (quote_c_style): control characters, DEL, `"` and `\`, and here
# the lone surrogates that stand for bytes that are not UTF-8. Valid non-ASCII text stays readable, as with
# core.quotePath=false.
_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
              "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def git_quoted(path: str) -> str:
    """A file name as git shows it to people: as it is, or quoted (`"a\\033[2Jb"`) when it holds what a
    terminal would act on (an escape sequence, a line break) or bytes that are not UTF-8."""
    if path.isprintable() and '"' not in path and "\\" not in path:
        return path
    out = []
    for char in path:
        if char in _C_ESCAPES:
            out.append(_C_ESCAPES[char])
        elif "\udc80" <= char <= "\udcff":  # a byte that is not UTF-8, as os.fsdecode keeps it
            out.append(f"\\{ord(char) - 0xdc00:03o}")
        elif not char.isprintable():
            out.append("".join(f"\\{byte:03o}" for byte in char.encode("utf-8", "surrogatepass")))
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def quoted(value: object) -> str:
    """`value` quoted for an error message. Bytes that are not UTF-8 (lone surrogates, as Python reads them
    from argv or a file name) are shown as the bytes they are, '\\xff', never as a surrogate escape. A long
    value is cut at 80 characters, with its length: the message stays one line whatever an agent sent."""
    if isinstance(value, str) and len(value) > 80:
        return f"{quoted(value[:80])}… ({len(value)} characters)"
    if isinstance(value, str) and not value.isascii() and _found(_SURROGATE, value):
        return repr(value.encode("utf-8", "surrogateescape"))[1:]
    return repr(value)


# What a terminal acts on rather than shows, in text the model accepts (old ops included): C0 and C1
# controls but tab and line feed (a carriage return rewrites the line it ends), DEL, the bidirectional
# controls that reorder what follows them (U+202E shows "txt.exe" for "exe.txt"), the line and paragraph
# separators, and lone surrogates. Joiners and other format characters only change how a glyph looks.
_UNSHOWN = (r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
            r"\ud800-\udfff]")


def shown_text(value: str) -> str:
    """`value` as text output shows it to a person: each character in `_UNSHOWN` written as its escape
    (`\\x1b`, `\\u202e`), everything else as it is. Titles, posts, lane names and prompts are whatever an agent
    made them; the model keeps them exactly (and --json prints them so); only what a terminal prints changes."""
    if value.isprintable():
        return value
    import re

    return re.sub(_UNSHOWN, lambda found: _escape(ord(found.group())), value)


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"  # as the dashboard shows it (dom.js)


# What a name (a lane, an actor, a tag) may not hold, as Unicode's identifier rules (UAX #31, UTS #39) leave
# them out: controls, format characters (the bidirectional controls, zero-width spaces, joiners, the BOM),
# spaces but ASCII's own and the line and paragraph separators (categories Cc, Cf, Cs, Zs, Zl, Zp), and the
# default-ignorable characters a terminal draws as nothing (Hangul fillers, variation selectors, tag
# characters). Each lets a name read as another: "main\u00a0" and "main\u200b" look like "main", and
# "feat/\u202elive" like "feat/evil". Listed rather than asked of `unicodedata`, so every machine of a
# repository, whatever its Python's Unicode, refuses the same names; tests/test_names_unseen.py checks the
# list against the running Python's character database.
_NOT_IN_NAMES = (r"[\x00-\x1f\x7f-\xa0\xad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
                 r"\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\u3164"
                 r"\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\ud800-\udfff\U000110bd\U000110cd\U00013430-\U0001343f"
                 r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
# The ones of them `str.isprintable` passes (combining marks and letters that show nothing), so a name all
# of whose characters are printable and none of these needs no regular expression; with the variation
# selectors U+FE00-FE0F and U+E0100-E01EF (ranges, not a set: a set of them costs every start ~50 µs).
_PRINTABLE_UNSEEN = "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0"


def _printable_unseen(value: str) -> bool:
    return any(char in _PRINTABLE_UNSEEN or "\ufe00" <= char <= "\ufe0f" or "\U000e0100" <= char <= "\U000e01ef"
               for char in value)


def name_problem(value: str) -> str | None:
    """Why `value` may not be a name people tell apart by eye (it holds a character of `_NOT_IN_NAMES`), or
    None. Free text (a title, a post, a prompt) keeps such characters; text output shows them escaped."""
    if value.isprintable() and (value.isascii() or not _printable_unseen(value)):
        return None
    import re

    found = re.search(_NOT_IN_NAMES, value)
    if found is None:
        return None
    return f"contains U+{ord(found.group()):04X}, which shows as nothing, as a space or by reordering the " \
           "text around it"


def is_text(value: object) -> bool:
    """Whether `value` is a string git and JSON can carry (valid Unicode, no NUL)."""
    return isinstance(value, str) and "\x00" not in value and (value.isascii() or not _found(_SURROGATE, value))
