"""The moments people type for `since` (`history --since`, `run stats --since`, REST's `since`): the forms
they use with git's `--since`, read by one small parser that every face shares.

Not git's own approxidate (`git rev-parse --since=…`): besides a process per call, it never refuses anything.
`garbage` reads as now and `3d` as the third of the month (a date in the future), so a typo would quietly
filter everything or nothing; here a text that is none of the forms below is refused, naming them.

The forms (any case; words separated by spaces or dots, as in `2.hours.ago`):
- relative: `N UNIT [ago]`, N a number (`1.5`), `a`/`an` or one to ten, UNIT seconds, minutes, hours, days,
  weeks, months (30 days, as git counts them) or years (365 days), each also singular and as `s`, `sec`,
  `m`, `min`, `h`, `hr`, `d`, `w`, `wk`, `y`, `yr`; glued on (`3d`, `12h`, `30m`, `2w`, `45s`) too; and
  `last UNIT` (one of it ago);
- named: `now`; `yesterday` (24 hours ago, as git reads it); `today` and `midnight` (today's start); `noon`
  (today's, or yesterday's before it);
- absolute: `@SECONDS` since the epoch; ISO 8601 `2026-12-01`, `2026-12-01 13:00`, `2026-12-01T13:00:05`,
  with `Z` or an offset (`+01:00`, `+0100`, `-05`); git log's `Tue Dec 1 13:00:00 2026 +0100` and e-mail's
  `Tue, 1 Dec 2026 13:00:00 +0100`.
A date without a time is its midnight (git would take the current time of day on it: `--since 2026-12-01`
is meant to include all of that day). A date or time of day without an offset is UTC, where git reads local
time: every record keeps UTC seconds, and `run stats` counts UTC days."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from git_lanes.errors import UserError
from git_lanes.model.text import quoted

FORMS = ("write it as git's --since takes it: 2.hours.ago, 3 days ago, 2w, yesterday, today, 2026-12-01, "
         "2026-12-01 13:00 (UTC unless it names an offset: Z, +01:00), @1700000000")

_DAY = 86400
_END = 253402300800.0  # 10000-01-01T00:00Z
_UNITS = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600),
    **dict.fromkeys(("d", "day", "days"), _DAY),
    **dict.fromkeys(("w", "wk", "wks", "week", "weeks"), 7 * _DAY),
    **dict.fromkeys(("month", "months"), 30 * _DAY),
    **dict.fromkeys(("y", "yr", "yrs", "year", "years"), 365 * _DAY),
}
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10}
_NUMBER = r"\d+(?:\.\d+)?"
_GLUED = re.compile(rf"({_NUMBER})([a-z]+)")
# A dot is a word separator unless it is a decimal point (`2.hours.ago`, `1.5h`).
_SEPARATOR = re.compile(r"\s+|(?<!\d)\.|\.(?!\d)")
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:(?:t|\s+)(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,6}))?)?)?"
                  r"\s*(z|utc|[+-]\d{2}(?::?\d{2})?)?")
_MAILED = re.compile(r"(mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s")


def parse_moment(text: str, now: float) -> float:
    """The moment `text` names, in seconds since the epoch, relative forms counted back from `now`. Refused
    (UserError `invalid_date`, naming the forms) when it is none of the module's forms, or before 1970."""
    value = text.strip().lower()
    moment = _relative(value, now) if value else None
    if moment is None:
        moment = _absolute(value) if value else None
    if moment is None:
        # "" is no date: `--since ""` (an unset variable) must not pass as if no --since were given
        raise UserError(f"invalid date {quoted(text)}", code="invalid_date", hint=FORMS)
    if not moment >= 0:  # -inf from a number too long for a float too
        # nothing in a repository predates 1970: such a moment is a typo, and would quietly select everything
        raise UserError(f"invalid date {quoted(text)}: it reaches back before 1970", code="invalid_date", hint=FORMS)
    if not moment < _END:  # nor past what a date can name (inf from `@999…9`)
        raise UserError(f"invalid date {quoted(text)}: it is after the year 9999", code="invalid_date", hint=FORMS)
    return moment


def _relative(value: str, now: float) -> float | None:
    words = [w for w in _SEPARATOR.split(value) if w]
    if words[-1:] == ["ago"]:
        words = words[:-1]
    glued = _GLUED.fullmatch(words[0]) if len(words) == 1 else None
    if glued:
        words = [glued.group(1), glued.group(2)]
    if len(words) != 2 or words[1] not in _UNITS:
        return _named(words, now)
    count, unit = words
    if count == "last":
        number = 1.0
    elif count in _COUNTS:
        number = float(_COUNTS[count])
    elif re.fullmatch(_NUMBER, count):
        number = float(count)
    else:
        return None
    return now - number * _UNITS[unit]


def _named(words: list[str], now: float) -> float | None:
    if len(words) != 1:
        return None
    midnight = now - now % _DAY  # UTC days
    return {"now": now, "yesterday": now - _DAY, "today": midnight, "midnight": midnight,
            "noon": midnight + _DAY / 2 if now >= midnight + _DAY / 2 else midnight - _DAY / 2}.get(words[0])


def _absolute(value: str) -> float | None:
    if value.startswith("@"):
        return float(value[1:]) if value[1:].isdigit() else None
    iso = _ISO.fullmatch(value)
    try:
        if iso:
            year, month, day, hour, minute, second, fraction, zone = iso.groups()
            moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                              int((fraction or "0").ljust(6, "0")), tzinfo=_zone(zone))
            return moment.timestamp()
        if _MAILED.match(value):
            from email.utils import parsedate_tz

            parts = parsedate_tz(value)
            if parts is not None:
                year, month, day, hour, minute, second = parts[:6]
                offset = timezone(timedelta(seconds=parts[9] or 0))
                return datetime(year, month, day, hour, minute, second, tzinfo=offset).timestamp()
    except (ValueError, OverflowError):  # a month 13, an offset of a day or more
        return None
    return None


def _zone(text: str | None) -> timezone:
    if text is None or text in ("z", "utc"):
        return timezone.utc
    digits = text[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + int(digits[2:] or 0)
    return timezone(timedelta(minutes=-minutes if text[0] == "-" else minutes))
