"""Now, as a commit and a reflog line carry it: seconds since the epoch and the offset from UTC in minutes.

git takes the offset from `localtime_r`, whose time zone the C library reads once per process: it does not
look at /etc/localtime again. libgit2's `git_signature_now` instead calls `mktime`, which looks again on
every call: a stat of /etc/localtime per signature, two per ledger append in a held-open process. Here the
offset is `time.localtime`'s, as git's is `localtime_r`'s: the zone read once, and again when the process
changes it the way Python asks for (set `TZ`, then `time.tzset()`). A change of the system's zone file under
a running process is not followed, by git or by Python's own clock either.

The offset is the one in force at that instant (`tm_gmtoff`), as git's `local_tzoffset` computes it; libgit2's
`mktime` of the UTC time as if it were local is an hour off for a few hours around a change to or from
summer time."""

from __future__ import annotations

import time

# The second an offset was last worked out for, that offset, and `time.tzname` then: `time.tzset()` puts a new
# tuple there, so a zone changed within the second is seen too. (`localtime` is ~3,000 instructions, most of
# them decoding the zone's name; an append asks twice, and thousands of appends share a second.)
_last: tuple[int, int, object] = (-1, 0, None)


def now() -> tuple[int, int]:
    """(seconds since the epoch, minutes east of UTC) at this instant."""
    global _last
    seconds = int(time.time())
    second, offset, zone = _last
    if second != seconds or zone is not time.tzname:
        zone = time.tzname
        offset = time.localtime(seconds).tm_gmtoff // 60
        _last = (seconds, offset, zone)
    return seconds, offset
