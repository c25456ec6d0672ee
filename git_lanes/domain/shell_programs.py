"""What well-known programs do with their arguments, for the shell-line analysis (`domain/shell.py`): which
command a wrapper runs (`sudo -iu root CMD`, `env -S 'CMD'`, `flock F CMD`, `watch CMD`…), which script a
shell, `su -c` or `eval` runs, and where `cd` goes; which files a command writes is `shell_writes.py`. Pure
functions over a command's words; nothing here runs anything.

A word is a `(text, dynamic)` pair: `dynamic` when the shell computes it at run time (an expansion, a
substitution, or xargs' and find's `{}`), so that text is not what will run."""

from __future__ import annotations

from git_lanes.domain import shell_git, shell_writes
from git_lanes.domain.shell_words import options

Word = tuple[str, bool]

SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh", "rbash"}
# Options of a shell that take a value, so the value is not taken for the script's file.
SHELL_VALUED = {"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}
# Variables whose value a program runs as a shell command; variables that change what every later program
# runs in ways a line does not show; variables that send git to another repository or worktree.
COMMAND_VARIABLES = {"GIT_SSH_COMMAND", "GIT_SSH", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER",
                     "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND", "EDITOR", "VISUAL",
                     "PAGER", "MANPAGER", "PROMPT_COMMAND", "LESSOPEN", "LESSCLOSE"}
OPAQUE_VARIABLES = {"BASH_ENV", "LD_PRELOAD", "LD_AUDIT", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR",
                    "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
                    "GIT_CONFIG"}
GIT_PLACE_VARIABLES = {"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"}
# Files that name a process's own standard input: a shell or `source` given one reads what is fed to it.
STDIN_FILES = {"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"}


class Spec:
    """How a wrapper finds the command it runs: options taking a value (`valued`), positional words before
    the command (`skip`: a duration, a lock file, a new root), options whose value is a shell script
    (`script`), and whether the command is the rest of its words (`command`; `su` runs one only by -c)."""

    __slots__ = ("valued", "skip", "script", "command", "privileged")

    def __init__(self, valued: str = "", skip: int = 0, script: str = "", command: bool = True,
                 privileged: bool = False) -> None:
        self.valued, self.skip = frozenset(valued.split()), skip
        self.script, self.command, self.privileged = frozenset(script.split()), command, privileged


WRAPPERS = {
    "env": Spec("-u --unset -C --chdir -S --split-string"),
    "sudo": Spec("-u -g -p -C -h -U -r -t -D -R -T --user --group --prompt --close-from --host --other-user "
                 "--role --type --chdir --chroot --command-timeout", privileged=True),
    "doas": Spec("-u -C", privileged=True),
    "pkexec": Spec("--user", privileged=True),
    "su": Spec("-c --command -s --shell -g --group -G --supp-group -w --whitelist-environment", script="-c --command",
               command=False, privileged=True),
    "runuser": Spec("-u --user -g --group -G --supp-group -c --command -s --shell -w", script="-c --command",
                    privileged=True),
    "sg": Spec("-c", skip=1, script="-c"),
    "command": Spec(), "builtin": Spec(), "exec": Spec("-a"), "nohup": Spec(), "setsid": Spec(),
    "unbuffer": Spec(), "busybox": Spec(), "caffeinate": Spec(), "dbus-run-session": Spec(), "torsocks": Spec(),
    "catchsegv": Spec(), "firejail": Spec(), "coproc": Spec(),
    "time": Spec("-f -o --format --output"),
    "nice": Spec("-n --adjustment"),
    "timeout": Spec("-s --signal -k --kill-after", skip=1),
    "stdbuf": Spec("-i -o -e --input --output --error"),
    "ionice": Spec("-c -n -p -P -u --class --classdata --pid --pgid --uid"),
    # chrt and taskset take a priority or a CPU mask before the command
    "chrt": Spec("-T --sched-runtime -P --sched-period -D --sched-deadline", skip=1), "taskset": Spec(skip=1),
    "prlimit": Spec("-p --pid -o --output"), "cpulimit": Spec("-l --limit -p --pid -e --exe -c --cpu"),
    "numactl": Spec("-C -N -m -p -i --physcpubind --cpunodebind --membind --preferred --interleave"),
    "xargs": Spec("-I -n -L -P -s -d -E -a --max-args --max-procs --delimiter --arg-file --replace --max-lines "
                  "--eof --max-chars --process-slot-var"),
    "flock": Spec("-w --timeout -E --conflict-exit-code -c --command", skip=1, script="-c --command"),
    "chroot": Spec("--userspec --groups", skip=1),
    "strace": Spec("-o -e -p -s -u -a -b -E -I -O -P -S -X"),
    "ltrace": Spec("-o -e -p -s -u -a -n -x -L -A -D -F"),
    "unshare": Spec("--map-user --map-group -S --setuid -G --setgid -R --root -w --wd --propagation"),
    "nsenter": Spec("-t --target -S --setuid -G --setgid -r --root -w --wd"),
    "systemd-run": Spec("-p --property -u --unit -E --setenv --uid --gid --description --slice -M -H"),
    "proxychains": Spec("-f"), "proxychains4": Spec("-f"),
    "script": Spec("-c --command -E --echo -T --log-timing -I -O -B -m --logging-format", script="-c --command",
                   command=False),
    "watch": Spec("-n --interval -d --differences -q --equexit"),
    "parallel": Spec("-j --jobs -S -a --arg-file -d --delimiter -I -n -N -L --joblog --results --tmpdir"),
    "chronic": Spec(), "entr": Spec(), "valgrind": Spec(), "rlwrap": Spec("-a -b -f -H -l -P -S -t -z"),
    "screen": Spec("-S -c -e -h -L -Logfile -p -T -t"),
}
# Programs that run the command after one of these options (`xterm -e CMD`, `gdb --args CMD`, `fd -x CMD`).
RUNS_AFTER = {"xterm": ("-e",), "gdb": ("--args",), "fd": ("-x", "--exec", "-X", "--exec-batch"),
              "fdfind": ("-x", "--exec", "-X", "--exec-batch")}
# tmux subcommands that start a shell command (their last operand), and those that type into a shell.
TMUX_RUNS = {"new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane", "respawnp",
             "respawn-window", "respawnw", "run-shell", "run", "if-shell", "if", "pipe-pane", "pipep",
             "display-popup", "popup"}
TMUX_TYPES = {"send-keys", "send", "paste-buffer", "pasteb", "set-buffer", "setb", "load-buffer", "loadb"}
# Project tools that run a command in the environment they manage (`uv run CMD`, `poetry run CMD`, `npm exec --
# CMD`, `npx CMD`, `direnv exec DIR CMD`, `nix-shell --run SCRIPT`): the subcommand that runs it (None: the tool
# always does) and how its words read. What they run meets the deny list and the write gate; the allow list
# judges the whole line, as it did before they were followed (see `Runs.vouched`).
_RUN_OPTIONS = ("--with --with-editable --with-requirements -p --python --project --directory --env-file --extra "
                "--group --only-group --no-group --package --index --default-index -i --index-url "
                "--extra-index-url -f --find-links --config-file --cache-dir --python-preference --exclude-newer "
                "--from")
RUNNERS: dict[str, tuple[frozenset[str] | None, Spec]] = {
    "uv": (frozenset({"run"}), Spec(_RUN_OPTIONS)), "uvx": (None, Spec(_RUN_OPTIONS)),
    "poetry": (frozenset({"run"}), Spec()), "pipenv": (frozenset({"run"}), Spec()),
    "pdm": (frozenset({"run"}), Spec("-p --project")), "hatch": (frozenset({"run"}), Spec()),
    "rye": (frozenset({"run"}), Spec()), "pixi": (frozenset({"run", "exec"}), Spec("-e --environment --manifest-path")),
    "conda": (frozenset({"run"}), Spec("-n --name -p --prefix --cwd")),
    "mamba": (frozenset({"run"}), Spec("-n --name -p --prefix --cwd")),
    "micromamba": (frozenset({"run"}), Spec("-n --name -p --prefix --cwd")),
    "bundle": (frozenset({"exec"}), Spec()),
    "npm": (frozenset({"exec", "x"}), Spec("-c --call -w --workspace --package", script="-c --call")),
    "npx": (None, Spec("-p --package -c --call", script="-c --call")),
    "pnpm": (frozenset({"exec", "dlx"}), Spec("-C --dir --filter")), "pnpx": (None, Spec("-p --package")),
    "yarn": (frozenset({"exec", "dlx"}), Spec("-p --package")), "bunx": (None, Spec("-p --package")),
    "direnv": (frozenset({"exec"}), Spec(skip=1)),
    "nix-shell": (None, Spec("-p --packages -I --arg --argstr -A --attr --run --command", script="--run --command",
                             command=False)),
    # Tools that load variables or secrets and run a command with them, as env does (`cross-env X=1 CMD`,
    # `dotenv -e .env -- CMD`, `op run -- CMD`, `aws-vault exec PROFILE -- CMD`).
    "cross-env": (None, Spec()), "cross-env-shell": (None, Spec()),
    "dotenv": (None, Spec("-e -v -p -c -f --file")),
    "env-cmd": (None, Spec("-f --file -e --environments -r --rc-file")),
    "op": (frozenset({"run"}), Spec("--env-file --account --config --session --encoding --cache")),
    "doppler": (frozenset({"run"}), Spec("-p --project -c --config --command --token --mount --mount-format "
                                         "--mount-template --fallback --name-transformer --api-host --scope "
                                         "--configuration --only-secrets", script="--command")),
    "aws-vault": (frozenset({"exec"}), Spec("-d --duration -t --mfa-token -r --region --prompt --backend "
                                            "--keychain --config", skip=1)),
    "dotenvx": (frozenset({"run"}), Spec("-f --env-file -e --env -fv --env-vault-file --convention")),
    "infisical": (frozenset({"run"}), Spec("--env -e --path --projectId --token --tags --domain --command",
                                           script="--command")),
    "envchain": (None, Spec(skip=1)), "envdir": (None, Spec(skip=1)),
}
# Environment tools that set NAME=value words before the command, and those that hand their command to a shell.
ASSIGNING = {"cross-env", "cross-env-shell"}
TRANSPARENT = frozenset(name for name, spec in WRAPPERS.items() if not spec.privileged)
PRIVILEGED = frozenset(name for name, spec in WRAPPERS.items() if spec.privileged)


class Runs:
    """What a command runs besides itself: a command (its words) and scripts (each a word, parsed as a line),
    or why that cannot be known before it runs (`opaque`)."""

    __slots__ = ("command", "scripts", "opaque", "vouched")

    def __init__(self, command: list[Word] | None = None, scripts: list[Word] | None = None,
                 opaque: str | None = None, vouched: bool = False) -> None:
        self.command, self.scripts, self.opaque = command, scripts or [], opaque
        # what a project tool runs (RUNNERS): the allow list has judged the whole line already
        self.vouched = vouched


def runs(name: str, words: list[Word], stdin: Word | str | None) -> Runs | None:
    """What `name words…` runs in turn, or None for a program that runs nothing we can see. `stdin`: the
    script text a here-document or here-string feeds it, "pipe" when a pipe or a substitution does."""
    args = words[1:]
    if name in WRAPPERS:
        return _wrapper(name, args, stdin)
    if name in RUNNERS:
        return _runner(name, args)
    if name in SHELLS:
        return _shell(name, args, stdin)
    if name == "eval":
        return Runs(scripts=[(" ".join(t for t, _ in args), any(d for _, d in args))]) if args else None
    if name in ("source", "."):
        if args and args[0][0] in STDIN_FILES and not args[0][1] and isinstance(stdin, tuple):
            return Runs(scripts=[stdin])
        if args and (args[0][1] or args[0][0] in STDIN_FILES):
            return Runs(opaque="reads a script produced at run time, which cannot be checked")
        return None
    if name == "trap":  # trap [--] 'CMD' SIGNAL…: CMD runs when the signal comes (or the shell exits)
        operands = args[1:] if args[:1] == [("--", False)] else args
        if len(operands) > 1 and operands[0][0] != "-" and not operands[0][0].startswith("-"):
            return Runs(scripts=[operands[0]])
        return None
    if name == "alias":
        return Runs(scripts=[(t.partition("=")[2], d) for t, d in args if "=" in t])
    if name in RUNS_AFTER:
        start = next((i for i, (t, _) in enumerate(args) if t in RUNS_AFTER[name]), None)
        if start is None or start + 1 >= len(args):
            return None
        return Runs(command=[(t, d or "{" in t) for t, d in args[start + 1:]])
    if name in ("at", "batch"):  # they run what their standard input says, later
        return _stdin_script(stdin)
    if name == "crontab" and not {"-l", "-r", "-e"} & {t for t, _ in args}:
        return Runs(opaque="installs a crontab whose commands run later and cannot be checked here")
    if name == "tmux":
        return _tmux(args)
    if name == "find":
        return _find(args)
    if name == "git":
        line = shell_git.analyse(args)
        if line.command or line.scripts or line.opaque:
            return Runs(command=line.command, scripts=line.scripts, opaque=line.opaque)
    if _python(name):
        rest = _module_run(args, "git_lanes")
        return Runs(command=[("git-lanes", False), *rest]) if rest is not None else None
    return None


def _python(name: str) -> bool:
    """`python`, `python3`, `python3.12`."""
    return name.startswith("python") and name[6:].replace(".", "").isdigit() or name == "python"


# Python's options that take a value (`-X dev`, `-W error`, `--check-hash-based-pycs always`).
PYTHON_VALUED = frozenset("XW")


def _module_run(args: list[Word], module: str) -> list[Word] | None:
    """The arguments after `-m MODULE` of a Python command line (`python -I -m git_lanes undo`: `undo`), or None
    when it runs another module, a script or code. `python -m git_lanes` is a documented spelling of `git lanes`,
    so it meets the same wall."""
    index = 0
    while index < len(args):
        text, _ = args[index]
        if text == "--check-hash-based-pycs":
            index += 2
            continue
        if not text.startswith("-") or text in ("-", "--") or text.startswith("--"):
            return None  # a script, standard input, or an option we do not read
        for at, flag in enumerate(text[1:], start=1):
            if flag == "c":
                return None
            if flag == "m":
                given = text[at + 1:] or (args[index + 1][0] if index + 1 < len(args) else "")
                after = index + 1 if text[at + 1:] else index + 2
                return args[after:] if given in (module, f"{module}.__main__") else None
            if flag in PYTHON_VALUED:
                index += 0 if text[at + 1:] else 1  # its value is the next word
                break
        index += 1
    return None


def variable_runs(name: str, value: Word) -> Runs | None:
    """What setting `name` to `value` makes a later program run: its value as a command (GIT_SSH_COMMAND,
    EDITOR, PAGER…), or something that cannot be checked (a file bash sources first, git config from the
    environment, a library preloaded into every program)."""
    if name in COMMAND_VARIABLES and value[0].strip():
        return Runs(scripts=[value])
    if name in OPAQUE_VARIABLES or name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")):
        return Runs(opaque="is set, which changes what later commands run in ways that cannot be checked")
    return None


def moved_to(name: str, words: list[Word]) -> str:
    """Where `cd`/`pushd` moves: its operand, home without one. `cd -` (the previous directory, which an
    earlier call may have left anywhere) and pushd's stack moves (`pushd`, `pushd +1`) are `$OLDPWD`: a place
    that cannot be known before the line runs."""
    targets = [w for w in words[1:] if not w[0].startswith("-") or w[0] == "-" or w[0][1:].isdigit()]
    if not targets:
        return "$OLDPWD" if name == "pushd" else "~"
    target = targets[0][0]
    return "$OLDPWD" if target == "-" or (name == "pushd" and target[:1] in "+-" and target[1:].isdigit()) \
        else target


# The option of a wrapper that runs its command in another directory.
CHDIR_OPTIONS = {"env": ("-C", "--chdir"), "sudo": ("-D", "--chdir"), "unshare": ("-w", "--wd"),
                 "nsenter": ("-w", "--wd")}


def wrapped_directory(name: str, words: list[Word]) -> str | None:
    """The directory `env -C DIR cmd` (sudo -D, unshare/nsenter -w) runs its command in, or None."""
    names = CHDIR_OPTIONS.get(name)
    if names is None:
        return None
    found, _ = options(words[1:], WRAPPERS[name].valued)
    value = next((found[option] for option in names if option in found), None)
    if value is None:
        return None
    return "$OLDPWD" if value[1] else value[0]


def variable_writes(name: str, value: Word) -> list[str]:
    """GIT_DIR=…, GIT_WORK_TREE=…: git then writes there, wherever the line runs it."""
    return [value[0] if not value[1] else "$" + name] if name in GIT_PLACE_VARIABLES and value[0] else []


def _wrapper(name: str, args: list[Word], stdin: Word | str | None) -> Runs | None:
    spec = WRAPPERS[name]
    found, index = options(args, spec.valued)
    if spec.script:  # `su root -c CMD`, `flock FILE -c CMD`: options may follow the positional words
        found = {**shell_writes.permuted(args, spec.valued)[0], **found}
    scripts = [value for option, value in found.items() if option in spec.script]
    rest = args[index:]
    if name == "command" and ("-v" in found or "-V" in found):
        return None  # only says what the name would run
    if name == "env":
        split = found.get("-S") or found.get("--split-string")
        if split is not None:
            if split[1]:
                return Runs(opaque="runs a command computed at run time, which cannot be checked")
            import shlex

            try:
                rest = [(word, False) for word in shlex.split(split[0])] + rest
            except ValueError:
                return Runs(opaque="has a -S string whose words cannot be read")
        while rest and "=" in rest[0][0] and not rest[0][0].startswith("="):
            rest = rest[1:]  # NAME=value assignments before the command
    if name == "coproc" and len(rest) > 1 and rest[1][0] == "{":
        rest = rest[2:]  # coproc NAME { command; }
    elif name == "coproc" and rest and rest[0][0] == "{":
        rest = rest[1:]
    if name == "xargs":
        replace = found.get("-I") or (("{}", False) if "-i" in found or "--replace" in found else None)
        marker = replace[0] if replace else None
        rest = [(t, d or (marker is not None and marker in t)) for t, d in rest]
    if name in ("watch", "parallel"):
        return _joined(name, rest, scripts)
    if not spec.command or len(rest) <= spec.skip:
        if scripts:
            return Runs(scripts=scripts)
        # `sudo -s`, `su`, `doas -s` with no command run a shell, which reads what is fed to it
        return _stdin_script(stdin) if spec.privileged else None
    return Runs(command=rest[spec.skip:], scripts=scripts)


def _runner(name: str, args: list[Word]) -> Runs | None:
    """What a project tool runs (RUNNERS): the words after its running subcommand and options, and the scripts
    its options hand a shell. Options before the subcommand are passed over; one that takes a value the spec
    does not know hides the subcommand, and the line is judged as before: whole."""
    subcommands, spec = RUNNERS[name]
    if subcommands is not None:
        _, index = options(args, spec.valued)
        if index == len(args) or args[index][1] or args[index][0] not in subcommands:
            return None
        args = args[index + 1:]
    found, index = options(args, spec.valued)
    scripts = [value for option, value in found.items() if option in spec.script]
    rest = args[index:] if spec.command else []
    if name == "dotenv" and rest and rest[0] == ("run", False):
        rest = rest[1:]  # python-dotenv: `dotenv -f .env run CMD`
    if rest and spec.skip:  # `aws-vault exec PROFILE --duration=1h -- CMD`: options may follow the positional
        more, index = options(rest[spec.skip:], spec.valued)
        scripts += [value for option, value in more.items() if option in spec.script]
        rest = rest[spec.skip + index:]
    elif name in ASSIGNING:
        while rest and "=" in rest[0][0] and not rest[0][0].startswith("="):
            rest = rest[1:]  # NAME=value assignments before the command
    if name == "cross-env-shell" or (name == "env-cmd" and "--use-shell" in found):
        # the command's words are joined into a line a shell runs
        return Runs(scripts=scripts + [(" ".join(t for t, _ in rest), any(d for _, d in rest))], vouched=True) \
            if rest else None
    if not rest:
        return Runs(scripts=scripts, vouched=True) if scripts else None
    return Runs(command=rest, scripts=scripts, vouched=True)


def _tmux(args: list[Word]) -> Runs | None:
    """`tmux new -d 'CMD'` runs CMD in a shell; `tmux send-keys 'CMD' Enter` types it into one."""
    _, index = options(args, frozenset("-L -S -f -T".split()))
    words = args[index:]
    if not words:
        return None
    subcommand = words[0][0]
    if subcommand in TMUX_TYPES:
        return Runs(opaque="types into a terminal what cannot be checked as a command")
    if subcommand not in TMUX_RUNS:
        return None
    # Which options take a value differs by subcommand (`new -d`, `run -d 5`): every word that is not an
    # option is judged as the command, so a value taken for one only adds a harmless command.
    operands = [w for w in words[1:] if not w[0].startswith("-")]
    return Runs(scripts=operands) if operands else None


def _joined(name: str, rest: list[Word], scripts: list[Word]) -> Runs | None:
    """`watch CMD…` and `parallel CMD ::: ARGS` run their words joined, through a shell."""
    if name == "parallel":
        cut = next((i for i, (t, _) in enumerate(rest) if t in (":::", "::::", ":::+", "::::+")), len(rest))
        command, arguments = rest[:cut], rest[cut + 1:]
        if not command:  # no command: each argument is one
            return Runs(scripts=scripts + arguments)
        rest = [(t, d or "{" in t) for t, d in command]
    if not rest:
        return Runs(scripts=scripts) if scripts else None
    return Runs(scripts=scripts + [(" ".join(t for t, _ in rest), any(d for _, d in rest))])


def _shell(name: str, args: list[Word], stdin: Word | str | None) -> Runs | None:
    """A shell runs the script of -c, or the file named first, or what its standard input says. As bash
    reads its options: they may be grouped (`-eo pipefail`, `-xc`), -c only marks the first operand as the
    script (`bash -c -x 'CMD'`, `bash -c -- 'CMD'`), and `-` or `--` ends them."""
    index, script_flag, stdin_flag = 0, False, False
    while index < len(args):
        text, dynamic = args[index]
        if text in ("-", "--"):
            index += 1
            break
        if dynamic or not text.startswith(("-", "+")) or text == "+":
            break
        index += 1
        if text in SHELL_VALUED:
            index += 1
        elif not text.startswith("--"):
            letters = text[1:]
            script_flag = script_flag or "c" in letters
            stdin_flag = stdin_flag or "s" in letters
            index += sum(letters.count(v) for v in "oO")  # each -o/-O in a group takes the next word
    operand = args[index] if index < len(args) else None
    if script_flag:
        if operand is None:
            return Runs(opaque="has -c without a script: it would come from elsewhere at run time")
        return Runs(scripts=[operand])
    if operand is not None and not stdin_flag:
        if operand[1]:
            return Runs(opaque="runs a script file computed at run time, which cannot be checked")
        if operand[0] not in STDIN_FILES:
            return None  # runs a script file: judged as the shell command itself
    return _stdin_script(stdin)


def _stdin_script(stdin: Word | str | None) -> Runs | None:
    """What a shell reading its standard input runs: a here-document's or here-string's text."""
    if stdin is None:
        return None
    if stdin == "pipe":
        return Runs(opaque="reads its script from a pipe or a substitution, which cannot be checked before it "
                           "runs; pass the script with -c instead")
    return Runs(scripts=[stdin])  # type: ignore[list-item]


def _find(args: list[Word]) -> Runs | None:
    commands = []
    starts, _ = shell_writes.find_starts(args)
    for index, (word, _) in enumerate(args):
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((i for i in range(index + 1, len(args)) if args[i][0] in (";", "\\;", "+")), len(args))
            words = args[index + 1:end]
            # `{}` is each file found, beneath the start points: a write to it is a write there. A word holding
            # it stays computed at run time (a file's name in a script or as the program is not known now).
            commands.append([(t, d or "{}" in t) for t, d in words[:1]] +
                            [(t.replace("{}", start), d or "{}" in t) for t, d in words[1:]
                             for start in (starts if "{}" in t else [t])])
    if not commands:
        return None
    first, *others = commands
    result = Runs(command=first)
    result.scripts = [(" ".join(t for t, _ in c), any(d for _, d in c)) for c in others]
    return result
