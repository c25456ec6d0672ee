"""Files and directories a command writes, for the shell-line analysis (`domain/shell.py`, through `writes`):
what the file tools write (`cp`, `mv`, `ln`, `rm`, `touch`, `tee`, `sed -i`, `dd of=`, `apply_patch`, and
git's commands by `shell_git`), and what archivers, downloaders, copiers and patchers write: `tar -x -C DIR`,
`unzip -d DIR`, `zip A`, `gzip F`, `rsync SRC DEST`, `scp`, `patch -d DIR`, `find … -delete`, `sort -o F`,
`uniq IN OUT`, `split IN PREFIX`, `rename`, `wget -O F`, `curl -o F`, `pip install -t DIR`. A command that
writes into where it runs (an extraction or a download with no target named) writes `.`, so the write-gate
places it in every directory the line may be in. Pure functions over a command's words (`(text, dynamic)`
pairs)."""

from __future__ import annotations

import posixpath

from git_lanes.domain import shell_git, shell_lanes

TYPE_CHECKING = False  # names for annotations only: the hook path loads nothing for them
if TYPE_CHECKING:
    from collections.abc import Callable

    Word = tuple[str, bool]


def option_values(args: list[Word], valued: frozenset[str]) -> tuple[dict[str, list[Word]], list[str]]:
    """Every value each option was given (`-o a -o b`), and the operands, for a GNU-style command whose
    options may follow its operands (`rm y -rf`); short options may be grouped (`-sSLo F`), long ones take
    `=VALUE`."""
    from git_lanes.domain.shell_words import options

    found: dict[str, list[Word]] = {}
    operands: list[str] = []
    index = 0
    while index < len(args):
        text = args[index][0]
        if text == "--":
            operands += [t for t, _ in args[index + 1:]]
            break
        if text.startswith("-") and text != "-":
            # this option word, and the next word only when it is this word's value: a wider window let an
            # option word read the next option's value (`cp -v -t DIR f` lost DIR, the file's destination)
            more, used = options(args[index:index + (2 if _takes_next(text, valued) else 1)], valued)
            for name, value in more.items():
                found.setdefault(name, []).append(value)
            index += max(used, 1)
            continue
        operands.append(text)
        index += 1
    return found, operands


def permuted(args: list[Word], valued: frozenset[str]) -> tuple[dict[str, Word], list[str]]:
    """Options (the last value of each) and operands of a GNU-style command, whose options may follow its
    operands (`rm y -rf`)."""
    found, operands = option_values(args, valued)
    return {name: values[-1] for name, values in found.items()}, operands


def _takes_next(text: str, valued: frozenset[str]) -> bool:
    """Whether option word `text` ends in an option whose value is the next word (`-o`, `-vo`, `--output`)."""
    if text.startswith("--"):
        return "=" not in text and text in valued
    for position, letter in enumerate(text[1:], 1):
        if "-" + letter in valued:
            return position == len(text) - 1
    return False


def _given(found: dict[str, list[Word]], *names: str) -> list[str]:
    return [text for name in names for text, _ in found.get(name, ()) if text and text != "-"]


def _valued(text: str) -> frozenset[str]:
    return frozenset(text.split())


TAR_VALUED = _valued("-f --file -C --directory -T --files-from -X --exclude-from -b --blocking-factor -K "
                     "--starting-file -N --newer --after-date -g --listed-incremental -V --label -L --tape-length "
                     "-F --info-script --new-volume-script -H --format -I --use-compress-program --to-command "
                     "--owner --group --mode --mtime --transform --xform --exclude --suffix")
TAR_READS = {"-t", "--list", "-d", "--diff", "--compare", "--test-label"}
TAR_ARCHIVES = {"-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate", "--delete"}


def tar(args: list[Word]) -> list[str]:
    if args and not args[0][0].startswith("-"):  # the old style: `tar xzf a.tar`
        args = [("-" + args[0][0], args[0][1]), *args[1:]]
    found, _ = option_values(args, TAR_VALUED)
    if TAR_READS & found.keys():
        return []
    if TAR_ARCHIVES & found.keys():
        return _given(found, "-f", "--file")
    if {"-x", "--extract", "--get"} & found.keys():
        if {"-O", "--to-stdout", "--to-command"} & found.keys():
            return []  # extracted to standard output, or to a command the line check judges
        return _given(found, "-C", "--directory") or ["."]
    return []


def unzip(args: list[Word]) -> list[str]:
    found, _ = option_values(args, _valued("-d"))
    if {"-l", "-t", "-v", "-Z", "-p", "-c", "-z"} & found.keys():
        return []  # lists, tests or prints to standard output
    return _given(found, "-d") or ["."]


RSYNC_VALUED = _valued("-e --rsh -f --filter -T --temp-dir -B --block-size -M --remote-option --exclude --include "
                       "--files-from --exclude-from --include-from --log-file --partial-dir --backup-dir --suffix "
                       "--chmod --chown --timeout --bwlimit --port --password-file --compare-dest --copy-dest "
                       "--link-dest --max-size --min-size --info --debug --out-format --rsync-path --usermap "
                       "--groupmap --max-delete --write-batch --only-write-batch --read-batch")


def rsync(args: list[Word]) -> list[str]:
    found, operands = option_values(args, RSYNC_VALUED)
    if len(operands) < 2:
        return _given(found, "--log-file")
    moved = operands[:-1] if "--remove-source-files" in found else []
    return [path for path in (operands[-1], *moved) if _local(path)] + \
        _given(found, "--log-file", "--write-batch", "--only-write-batch")


def scp(args: list[Word]) -> list[str]:
    _, operands = option_values(args, _valued("-c -F -i -J -l -o -P -S -D -X"))
    return [path for path in operands[-1:] if _local(path)] if len(operands) > 1 else []


def _local(path: str) -> bool:
    """Not another machine's (`host:path`, `user@host:path`, `rsync://…`): a colon before any slash."""
    return ":" not in path.partition("/")[0]


def patch(args: list[Word]) -> list[str]:
    found, operands = option_values(args, _valued("-d --directory -o --output -D --ifdef -F --fuzz -i --input -r "
                                                  "--reject-file -B --prefix -Y --basename-prefix -z --suffix -V "
                                                  "--version-control -g --get --quoting-style"))
    if {"--dry-run", "-C", "--check"} & found.keys():
        return []
    return [*(_given(found, "-d", "--directory") or ["."]), *operands[:1], *_given(found, "-o", "--output"),
            *_given(found, "-r", "--reject-file")]


FIND_FILE_ACTIONS = {"-fprint": 1, "-fprint0": 1, "-fprintf": 1, "-fls": 1}


def find_starts(args: list[Word]) -> tuple[list[str], int]:
    """(the start points of `find args…`, "." when none is given; where its expression begins)."""
    starts: list[str] = []
    index = 0
    while index < len(args) and args[index][0] in ("-H", "-L", "-P", "-D") or \
            index < len(args) and args[index][0].startswith("-O"):  # find's own options come first
        index += 2 if args[index][0] == "-D" else 1
    while index < len(args) and not args[index][0].startswith(("-", "(", ")", "!", ",")):
        starts.append(args[index][0])
        index += 1
    return starts or ["."], index


def find(args: list[Word]) -> list[str]:
    starts, index = find_starts(args)
    texts = [t for t, _ in args[index:]]
    written = [texts[i + 1] for i, t in enumerate(texts[:-1]) if t in FIND_FILE_ACTIONS]
    return (starts if "-delete" in texts else []) + written


def sort(args: list[Word]) -> list[str]:
    found, _ = option_values(args, _valued("-o --output -k --key -t --field-separator -S --buffer-size -T "
                                           "--temporary-directory --parallel --files0-from --batch-size"))
    return _given(found, "-o", "--output")


def uniq(args: list[Word]) -> list[str]:
    _, operands = option_values(args, _valued("-f --skip-fields -s --skip-chars -w --check-chars"))
    return operands[1:2]


def wget(args: list[Word]) -> list[str]:
    found, _ = option_values(args, _valued("-O --output-document -o --output-file -a --append-output -P "
                                           "--directory-prefix -e --execute -i --input-file -t --tries -T --timeout "
                                           "-w --wait -U --user-agent --header --user --password -Q --quota "
                                           "-l --level -A --accept -R --reject -D --domains --post-data "
                                           "--post-file -B --base"))
    logs = _given(found, "-o", "--output-file", "-a", "--append-output")
    if "--spider" in found or ("-", False) in found.get("-O", []) + found.get("--output-document", []):
        return logs
    return (_given(found, "-O", "--output-document") or _given(found, "-P", "--directory-prefix") or ["."]) + logs


CURL_VALUED = _valued("-o --output -D --dump-header -c --cookie-jar --trace --trace-ascii --stderr --output-dir "
                      "-H --header -d --data --data-raw --data-binary --data-urlencode -X --request -u --user "
                      "-A --user-agent -e --referer -b --cookie -F --form -T --upload-file -x --proxy -E --cert "
                      "-K --config -w --write-out -m --max-time -r --range -z --time-cond -C --continue-at "
                      "-Q --quote -U --proxy-user --url --connect-timeout --retry --resolve --cacert --key")


def curl(args: list[Word]) -> list[str]:
    found, _ = option_values(args, CURL_VALUED)
    files = _given(found, "-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace",
                   "--trace-ascii", "--stderr")
    if {"-O", "--remote-name", "--remote-name-all", "-J", "--remote-header-name"} & found.keys():
        files += _given(found, "--output-dir") or ["."]
    return files


def split(args: list[Word]) -> list[str]:
    _, operands = option_values(args, _valued("-a --suffix-length --additional-suffix -b --bytes -C --line-bytes "
                                              "-l --lines -n --number -t --separator --filter"))
    return operands[1:2] or ["."]  # PREFIXaa, PREFIXab… beside PREFIX, or xaa… where it runs


def csplit(args: list[Word]) -> list[str]:
    found, _ = option_values(args, _valued("-b --suffix-format -f --prefix -n --digits"))
    return _given(found, "-f", "--prefix") or ["."]


def zip_(args: list[Word]) -> list[str]:
    found, operands = option_values(args, _valued("-b -n -t -tt -x -i -P -Z -O --out"))
    return _given(found, "-O", "--out") + operands[:1]  # the archive it creates or changes


def compress(args: list[Word]) -> list[str]:
    """gzip, bzip2, xz, zstd and their un-/cat forms: each file is replaced by its (de)compressed form."""
    found, operands = option_values(args, _valued("-S --suffix -o --output"))
    if {"-c", "--stdout", "--to-stdout", "-t", "--test", "-l", "--list"} & found.keys():
        return _given(found, "-o", "--output")
    return operands + _given(found, "-o", "--output")


def rename(args: list[Word]) -> list[str]:
    """`rename EXPR FILES…` (perl) or `rename FROM TO FILES…` (util-linux): the files it renames."""
    _, operands = option_values(args, frozenset())
    return operands[1:]


def installer(args: list[Word]) -> list[str]:
    """pip's and npm's explicit install targets (their default one is outside the project, or a cache)."""
    found, _ = option_values(args, _valued("-t --target --prefix --root --src -r --requirement -c --constraint "
                                           "-e --editable -i --index-url --extra-index-url -f --find-links"))
    return _given(found, "-t", "--target", "--prefix", "--root", "--src")


def compiler(args: list[Word]) -> list[str]:
    """A compiler's or linker's output file (`-o F`, `-oF`)."""
    found, _ = option_values(args, _valued("-o -I -L -l -D -U -x -include -isystem -MF -MT -MQ"))
    return _given(found, "-o")


def go(args: list[Word]) -> list[str]:
    found, _ = option_values(args[1:], _valued("-o -C -p -tags -ldflags -gcflags -mod -modfile -overlay -pkgdir"))
    return _given(found, "-o") if args[:1] in ([("build", False)], [("test", False)]) else []


AWK_VALUED = _valued("-f --file -v --assign -F --field-separator -i --include -l --load -e --source -E --exec "
                     "-W")


def awk(args: list[Word]) -> list[str]:
    """The files `gawk -i inplace` edits, as `sed -i` does: its file operands (less the program, unless -f or
    -e gives it, and less `var=value` assignments)."""
    found, operands = option_values(args, AWK_VALUED)
    if not {name.removesuffix(".awk") for name in _given(found, "-i", "--include")} & {"inplace"}:
        return []
    if not any(option in found for option in ("-f", "--file", "-e", "--source", "-E", "--exec")):
        operands = operands[1:]
    return [o for o in operands if not o.partition("=")[0].isidentifier() or "=" not in o]


WRITERS: dict[str, Callable[[list[Word]], list[str]]] = {
    "tar": tar, "gtar": tar, "bsdtar": tar, "unzip": unzip, "rsync": rsync, "scp": scp, "patch": patch,
    "find": find, "sort": sort, "uniq": uniq, "wget": wget, "curl": curl, "split": split, "csplit": csplit,
    "zip": zip_, "rename": rename, "prename": rename, "pip": installer, "pip3": installer, "npm": installer,
    "go": go, "awk": awk, "gawk": awk, **{name: compiler for name in ("cc", "gcc", "g++", "c++", "clang", "clang++", "ld", "rustc")},
    **{name: compress for name in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lzma",
                                   "unlzma", "lz4", "compress", "uncompress")}}


# -- every command: the file tools here, the tables above, git's commands by shell_git ------------------------
LAST_OPERAND = {"cp": "-t --target-directory -S --suffix", "install": "-t --target-directory -m --mode -o --owner "
                "-g --group -S --suffix", "ln": "-t --target-directory -S --suffix"}
ALL_OPERANDS = {"rm": "", "rmdir": "", "unlink": "", "touch": "-d --date -r --reference -t", "mkdir": "-m --mode",
                "truncate": "-s --size -r --reference", "shred": "-n --iterations -s --size --random-source",
                "mv": "-t --target-directory -S --suffix", "mkfifo": "-m --mode", "mknod": "-m --mode"}
AFTER_FIRST = {"chmod": "--reference", "chown": "--reference", "chgrp": "--reference", "chattr": "", "setfacl": ""}


UNLINKING = ("rm", "unlink")


def unlinks(name: str, words: list[Word]) -> list[str]:
    """The directory entries `name words…` removes without following them, as written: `rm link` and
    `unlink link` remove a symbolic link itself, never what it points to. Where the removal goes through
    the name (`rm link/`, `rm link/x`, and `rm -r`, kept with what it may walk into) it is a write."""
    if name not in UNLINKING:
        return []
    found, operands = permuted(words[1:], frozenset())
    return [o for o in operands if _unlinked(name, found, o)]


def _unlinked(name: str, found: dict[str, Word], operand: str) -> bool:
    recursive = name == "rm" and any(o in ("-r", "-R") or (len(o) > 2 and "--recursive".startswith(o))
                                     for o in found)
    return not recursive and not operand.endswith("/") and posixpath.basename(operand) not in ("", ".", "..")


def writes(name: str, words: list[Word], stdin: Word | str | None) -> list[str]:
    """Files and directories `name words…` writes, as written (relative to where it runs)."""
    args = words[1:]
    if name in LAST_OPERAND or name in ALL_OPERANDS or name in AFTER_FIRST:
        valued = LAST_OPERAND.get(name) or ALL_OPERANDS.get(name) or AFTER_FIRST.get(name) or ""
        found, operands = permuted(args, frozenset(valued.split()))
        target = found.get("-t") or found.get("--target-directory")
        # A link, hard or symbolic, to a file outside the workspace is a way to write there: it counts too.
        links = name == "ln" or (name == "cp" and bool({"-l", "--link", "-s", "--symbolic-link"} & found.keys()))
        # A symbolic link's target is read from the link's own directory (`ln -s ../../.. d/up` points d/up at
        # what ../../.. is from d/, not from here), unless --relative has ln compute it from here.
        symbolic = name == "ln" and bool({"-s", "--symbolic"} & found.keys()) and \
            not {"-r", "--relative"} & found.keys()
        if target is not None:
            sources = _pointed(operands, [target[0]]) if symbolic else operands
            return [target[0]] + (sources if name == "mv" or links else [])
        if links and operands:
            link = operands[-1] if len(operands) > 1 else posixpath.basename(operands[0])
            sources = operands[:-1]
            if symbolic and len(operands) > 1:
                # LINK may name a directory that exists (the link is made inside it): both places count
                sources = _pointed(sources, [link] if len(operands) > 2 else [posixpath.dirname(link) or ".", link])
            return [link] + sources
        if name in UNLINKING:
            return [o for o in operands if not _unlinked(name, found, o)]
        if name == "install" and ("-d" in found or "--directory" in found):
            return operands  # every operand is a directory it creates
        if name in LAST_OPERAND:
            return operands[-1:] if len(operands) > 1 else []
        return operands[1:] if name in AFTER_FIRST else operands
    if name == "tee":
        return permuted(args, frozenset())[1]
    if name == "dd":
        return [t[3:] for t, _ in args if t.startswith("of=")]
    if name in ("sed", "perl") and any(_in_place_flag(name, t) for t, _ in args):
        return _in_place(name, args)
    if name in ("apply_patch", "applypatch"):
        from git_lanes.model.patches import patch_paths

        text = args[0][0] if args else stdin[0] if isinstance(stdin, tuple) else None
        return list(patch_paths(text)) if text else []
    if name == "git":
        return shell_git.analyse(args).writes
    if name == "git-lanes":  # the subcommand's own program, as `git lanes` runs it
        return shell_git.analyse([("lanes", False), *args]).writes
    writer = WRITERS.get(name)
    return writer(args) if writer is not None else []


def lanes(name: str, words: list[Word]) -> list[str]:
    """Lanes whose workspaces `name words…` rewrites, by name (`git lanes restore -w L`, `lane reset L`)."""
    if name == "git":
        return shell_git.analyse(words[1:]).lanes
    if name == "git-lanes":
        return shell_lanes.rewritten(words[1:])
    return []


def _pointed(targets: list[str], homes: list[str]) -> list[str]:
    """Symbolic link targets as paths from where the command runs, for links made in each of `homes`."""
    return [target if target.startswith(("/", "~", "$")) else posixpath.join(home, target)
            for target in targets for home in homes]


def _in_place_flag(name: str, text: str) -> bool:
    if text.startswith("--in-place"):
        return True
    return text.startswith("-") and not text.startswith("--") and "i" in text[1:] and \
        (name == "perl" or text.startswith("-i"))


def _in_place(name: str, args: list[Word]) -> list[str]:
    """The files `sed -i` or `perl -i` edit: its operands, less the script when no -e/-f gives one."""
    operands, script_given, index = [], False, 0
    while index < len(args):
        text = args[index][0]
        if text in ("-e", "-f", "--expression", "--file") or (name == "perl" and text.startswith("-") and
                                                              text.rstrip("e").endswith("e") and len(text) > 1):
            script_given = True
            index += 2
            continue
        if text.startswith(("--expression=", "--file=")):
            script_given = True
        elif not text.startswith("-") or text == "-":
            operands.append(text)
        index += 1
    return operands if script_given else operands[1:]
