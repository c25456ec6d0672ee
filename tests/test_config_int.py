"""Integer config values are read as git reads them (git_parse_signed: strtoimax in base 0, a k/m/g unit,
a range check), by the one parser the light paths share (`gitfiles.config_int`): the ref-lock timeout of
`ref_files.take_lock` and the loose-object compression level of `loose_write`."""

from __future__ import annotations

import os
import subprocess

from conftest import git

from git_lanes.store import loose_ref, ref_files
from git_lanes.store.gitfiles import INT_MAX, config_int, read_config

INT64_MAX = 2 ** 63 - 1
VALUES = ["100", "0", "-1", "+5", "1k", "1K", "2m", "1g", "0k", "-3k", " 12", "\t7", "0x10", "0X1fk", "0x1b",
          "010", "0", "00", "08", "0x", "0xg", "1_0", "1.5", "1e3", "0o7", "", "junk", "k", "1kb", "1k ", "- 5",
          "--1", "+-1", "٣", "9223372036854775807", "9223372036854775808", "-9223372036854775807",
          "-9223372036854775808", "8589934591g", "8589934592g", "-8589934592g", "8796093022207k"]


def gits_reading(repo, value: str) -> int | None:
    """`git config --type=int` on `value` as git stored it: its number, or None where git refuses it."""
    proc = subprocess.run(["git", "config", "--type=int", "test.number"], cwd=repo, capture_output=True, text=True)
    if proc.returncode:
        assert "bad numeric config value" in proc.stderr, (value, proc.stderr)
        return None
    return int(proc.stdout)


def test_every_value_reads_as_git_config_type_int_reads_it(repo):
    refused = 0
    for value in VALUES:
        git("config", "test.number", value, cwd=repo)
        stored = read_config(repo / ".git")["test.number"]  # as the light paths read the file git wrote
        expected = gits_reading(repo, value)
        refused += expected is None
        assert config_int(stored, maximum=INT64_MAX) == expected, repr(value)
    assert 0 < refused < len(VALUES)  # the precondition: git takes some of these and refuses others


def test_the_default_range_is_that_of_the_settings_git_reads_as_an_int(repo):
    """git reads core.filesRefLockTimeout with git_config_int: a C int, ±(2^31 - 1), and dies beyond it."""
    head = git("rev-parse", "HEAD", cwd=repo).strip()
    for value in ["2147483647", "-2147483647", "2147483648", "-2147483648", "1g", "2g", "-2g", "2097151k"]:
        proc = subprocess.run(["git", "-c", f"core.filesRefLockTimeout={value}", "update-ref", "refs/heads/x",
                               head], cwd=repo, capture_output=True, text=True)
        assert (proc.returncode == 0) == (config_int(value) is not None), value
        assert config_int(value) is None or abs(config_int(value) or 0) <= INT_MAX


def test_the_ref_lock_timeout_is_read_as_git_reads_it(repo, monkeypatch):
    """Octal, hex and git's refusals: `010` is 8 ms to git (the old reading took 10), `0x10` 16 (the old one
    fell back to 100), `1_0` a value git refuses (the old one took 10), so the default."""
    waits: list[int] = []

    class Recorded(loose_ref.Backoff):
        def __init__(self, timeout_ms: int) -> None:
            waits.append(timeout_ms)
            super().__init__(0)  # no wait: the lock left behind is cleared at once

    monkeypatch.setattr(loose_ref, "Backoff", Recorded)
    lock = repo / ".git" / "test.lock"
    for value in ["010", "0x10", "1_0", "1k"]:
        git("config", "core.filesRefLockTimeout", value, cwd=repo)
        lock.write_text("")  # left by a killed process: taken, then found stale
        os.close(ref_files.take_lock(str(lock), str(repo / ".git")))
        lock.unlink()
    assert waits == [8, 16, loose_ref.REF_LOCK_TIMEOUT_MS, 1024]


def test_string_values_read_as_git_config_get_reads_them(repo):
    """White space at the end of a value is dropped outside quotes only: git writes `x ` as `"x "`, which
    the light paths read as `x` before."""
    for value in ["x ", " x", "x  y", "end\t", "a#b", "a;b", '"q"', "back\\slash", "1k "]:
        git("config", "test.text", value, cwd=repo)
        assert read_config(repo / ".git")["test.text"] == git("config", "--get", "test.text", cwd=repo)[:-1] == value


def test_a_config_file_rewritten_within_one_tick_of_the_clock_is_read_again(tmp_path):
    """git rewrites a config file by renaming a new one into place; two rewrites in the same tick of the file
    system's clock (a few ms) leave the same mtime, and a reader keyed on it kept the first one's values."""
    import os

    from git_lanes.store.gitfiles import read_config

    config = tmp_path / "config"
    config.write_text("[core]\n\tcompression = 1\n")
    first = config.stat()
    assert read_config(tmp_path)["core.compression"] == "1"
    rewritten = tmp_path / "config.lock"
    rewritten.write_text("[core]\n\tcompression = 9\n")  # the same size
    os.utime(rewritten, ns=(first.st_atime_ns, first.st_mtime_ns))  # the same tick
    os.replace(rewritten, config)
    assert read_config(tmp_path)["core.compression"] == "9"
