"""An adversarial agent against the wall: each way of hiding a denied command in a shell line, of writing
outside the lane from a shell line, or of hiding a path in an apply_patch envelope, sent as the agent CLI
sends it (the payload as the CLI's documentation shows it, answered by the hook face's entry function; the
first call of each test in a real `git lanes hook` process), is denied; the lines developers type every day
still pass. One workspace per test, many calls in it: a repository costs more than a call."""

from __future__ import annotations

import pytest
from conftest import run_cli
from hook_helpers import bash, decision, hook, hook_in_process, lane, set_policy

# A wall that denies only by command: no read-only phase, a budget no test here can spend.
POLICY = '[budget]\nphases = { work = 100000 }\n[phases]\nread_only = []\n[commands]\ndeny = ["rm -rf *", ' \
         '"git push --force *", "curl *"]\n'

HIDDEN = [  # (technique, shell line, what the deny reason names)
    ("quotes inside the program name", "'cu'\"rl\" http://x", "`curl http://x`"),
    ("a backslash inside the program name", "c\\url http://x", "`curl http://x`"),
    ("$'…' hex escapes", "$'\\x63\\x75rl' http://x", "`curl http://x`"),
    ("$'…' octal escapes", "$'\\143url' http://x", "`curl http://x`"),
    ("brace expansion", "c{u,}rl http://x", "`curl crl http://x`"),
    ("a glob the file system resolves", "/usr/bin/c?rl http://x", "computed at run time"),
    ("sudo with grouped options", "sudo -iu root curl http://x", "`curl http://x`"),
    ("flock running a command", "flock /tmp/lock curl http://x", "`curl http://x`"),
    ("flock -c", "flock /tmp/lock -c 'curl http://x'", "`curl http://x`"),
    ("watch", "watch -n 1 'curl http://x'", "`curl http://x`"),
    ("env -S", "env -S 'curl http://x'", "`curl http://x`"),
    ("su -c after the user", "su root -c 'curl http://x'", "`curl http://x`"),
    ("a here-document fed to a shell", "bash <<'EOS'\ncurl http://x\nEOS", "`curl http://x`"),
    ("a here-string fed to a shell", "sh <<< 'curl http://x'", "`curl http://x`"),
    ("a here-string fed to sudo's shell", "sudo -s <<< 'curl http://x'", "`curl http://x`"),
    ("a here-string fed to su", "su root <<< 'curl http://x'", "`curl http://x`"),
    ("a shell reading /dev/stdin", "bash /dev/stdin <<< 'curl http://x'", "`curl http://x`"),
    ("a shell reading `-`", "bash - <<< 'curl http://x'", "`curl http://x`"),
    ("a script piped to a shell", "echo 'curl http://x' | bash", "from a pipe"),
    ("a script file made by a substitution", "bash <(echo curl http://x)", "computed at run time"),
    ("bash -c --", "bash -c -- 'curl http://x'", "`curl http://x`"),
    ("an option after -c", "bash -c -x 'curl http://x'", "`curl http://x`"),
    ("-eo pipefail before -c", "bash -eo pipefail -c 'curl http://x'", "`curl http://x`"),
    ("a script computed at run time", 'bash -c "$SCRIPT"', "computed at run time"),
    ("alias", "alias fetch='curl http://x'", "`curl http://x`"),
    ("eval of a quoted line", 'eval "curl http://x"', "`curl http://x`"),
    ("trap", "trap 'curl http://x' EXIT", "`curl http://x`"),
    ("source of a here-string", "source /dev/stdin <<< 'curl http://x'", "`curl http://x`"),
    ("xargs running a shell", "echo a | xargs sh -c 'curl http://x'", "`curl http://x`"),
    ("find -exec running a shell", "find . -exec sh -c 'curl http://x' \\;", "`curl http://x`"),
    ("rm with its flags apart", "rm -r -f build", "'rm -rf *'"),
    ("rm with its flags swapped", "rm -fr build", "'rm -rf *'"),
    ("rm with its flags last", "rm build -rf", "'rm -rf *'"),
    ("rm with long flags", "rm --recursive --force build", "'rm -rf *'"),
    ("git push -f", "git push -f origin main", "'git push --force *'"),
    ("git push +refspec", "git push origin +main", "'git push --force *'"),
    ("git -C before push", "git -C . push --force origin main", "'git push --force *'"),
    ("a git alias running a shell command", "git -c alias.x='!curl http://x' x", "`curl http://x`"),
    ("a git alias for a denied subcommand", "git -c alias.p='push --force' p origin main", "'git push --force *'"),
    ("a command-valued git key", "git -c core.fsmonitor='curl http://x' status", "`curl http://x`"),
    ("git hooks from elsewhere", "git -c core.hooksPath=/tmp/h commit -qm x", "hooks"),
    ("an alias stored in the user's git config", "git config --global alias.x '!curl http://x'", "`curl http://x`"),
    ("GIT_SSH_COMMAND before git", "GIT_SSH_COMMAND='curl http://x' git fetch", "`curl http://x`"),
    ("GIT_SSH_COMMAND through env", "env GIT_SSH_COMMAND='curl http://x' git fetch", "`curl http://x`"),
    ("an exported pager", "export GIT_PAGER='curl http://x'; git log", "`curl http://x`"),
    ("git rebase -x", "git rebase -x 'curl http://x' main", "`curl http://x`"),
    ("git bisect run", "git bisect run curl http://x", "`curl http://x`"),
    ("git submodule foreach", "git submodule foreach 'curl http://x'", "`curl http://x`"),
    ("git fetch --upload-pack", "git fetch --upload-pack='curl http://x' origin", "`curl http://x`"),
    ("a file bash sources first", "BASH_ENV=/tmp/x bash -c ls", "`BASH_ENV` is set"),
    ("chronic", "chronic curl http://x", "`curl http://x`"),
    ("valgrind", "valgrind --quiet curl http://x", "`curl http://x`"),
    ("rlwrap", "rlwrap curl http://x", "`curl http://x`"),
    ("entr", "ls *.py | entr curl http://x", "`curl http://x`"),
    ("gdb --args", "gdb -batch -ex run --args curl http://x", "`curl http://x`"),
    ("xterm -e", "xterm -e curl http://x", "`curl http://x`"),
    ("fd -x", "fd -e py -x curl http://x", "`curl http://x`"),
    ("screen", "screen -dmS job curl http://x", "`curl http://x`"),
    ("tmux new", "tmux new -d -s job 'curl http://x'", "`curl http://x`"),
    ("tmux run -d", "tmux run -d 5 'curl http://x'", "`curl http://x`"),
    ("tmux send-keys", "tmux send-keys -t job 'curl http://x' Enter", "types into a terminal"),
    ("at", "at now <<< 'curl http://x'", "`curl http://x`"),
    ("crontab", "crontab - <<< '* * * * * curl http://x'", "installs a crontab"),
]

ORDINARY = [
    "npm test",
    "git status && pytest -q",
    "cd sub && make",
    "python -m pytest -q tests/ 2>&1 | tail -5",
    "make > build.log 2>&1",
    "cd src && echo x > notes.txt",
    "cd /tmp && echo x > scratch.txt",
    "git diff HEAD~1 -- src",
    "git add -A && git commit -qm wip",
    "bash -eo pipefail -c 'npm run build'",
    "for f in *.py; do python -m py_compile \"$f\"; done",
    "cat <<'EOF' > notes.md\nhello\nEOF",
    "ls -la | grep -v '^d' | wc -l",
    "git config user.name",
    "git checkout -b fix && git stash list",
    "EDITOR=true git commit -qm wip",
    "ENV=test npm start",
    "trap '' INT; make",
    "git push -u origin HEAD",
    "git log --oneline | head -5",
    "crontab -l",
    "tmux ls",
    "tar -xzf dist.tgz && tar -tf dist.tgz", "unzip -o pkg.zip -d vendor", "rsync -a src/ build/",
    "rsync -a build/ deploy@host:/srv/app/", "scp build.tgz host:/srv/", "find . -name '*.pyc' -delete",
    "sort -o words.txt words.txt", "wget -q https://example.com/f.tgz", "patch -p1 < fix.patch",
    "gcc -O2 -o build/app main.c", "go build -o bin/app ./cmd/app", "gzip -k dist/app.js", "gzip -dc a.gz | head",
    "pip install -r requirements.txt", "zip -r dist.zip src",
    "env -C src make", "install -d build/bin", "awk '{print $1}' README.md", "gawk -i inplace '{print}' notes.txt",
]


@pytest.fixture
def ws(repo):
    set_policy(repo, POLICY)
    return lane(repo)


def not_denied(ws, lines, tag: str) -> list[tuple]:
    """Each of `lines` ((line, words the deny reason must hold), extra fields first) the pre-tool hook did not
    deny with those words; the first line through a real hook process, the rest in process."""
    missed = []
    for number, (*extra, line, named) in enumerate(lines):
        send = hook if number == 0 else hook_in_process
        verdict, reason = decision(send("claude", "PreToolUse", bash(ws, line, f"toolu_{tag}{number}")))
        if verdict != "deny" or named not in (reason or ""):
            missed.append((*extra, line, verdict, reason))
    return missed


def test_a_denied_command_hidden_by_each_technique_is_denied(ws):
    assert not_denied(ws, HIDDEN, "h") == []


def test_ordinary_developer_lines_pass(ws):
    refused = []
    for number, line in enumerate(ORDINARY):
        send = hook if number == 0 else hook_in_process
        verdict, reason = decision(send("claude", "PreToolUse", bash(ws, line, f"toolu_o{number}")))
        if verdict != "allow":
            refused.append((line, reason))
    assert refused == []


def test_a_write_outside_the_lane_from_a_shell_line_is_denied(repo, ws):
    """A relative write after `cd` counts wherever the line may be; git's writes into what every lane shares
    (refs, config, worktrees) and into another worktree count as writes there."""
    lines = [
        (f"cd {repo} && echo x > f", "main worktree"),
        (f"cd {repo}; touch f", "main worktree"),
        (f"pushd {repo} && cp a b", "main worktree"),
        (f"cd / && cd {str(repo)[1:]} && echo x > f", "main worktree"),
        (f"(cd {repo} && echo x >> README.md)", "main worktree"),
        (f"bash -c 'cd {repo} && echo x > f'", "main worktree"),
        ("cd .. && echo x > f", "another lane's workspace"),
        (f"cd {repo} && git checkout -- .", "main worktree"),
        ("cd $ELSEWHERE && echo x > f", "cannot tell where"),
        (f"CDPATH={repo}; cd .lanes && echo x > f", "cannot tell where"),
        (f"PWD={repo}; echo x > $PWD/f", "cannot tell where"),
        (f"ln {repo}/README.md r && echo x >> r", "main worktree"),
        (f"ln -t . {repo}/README.md", "main worktree"),
        (f"cp -al {repo}/README.md r", "main worktree"),
        ("cd - && echo x > f", "cannot tell where"),  # the previous directory: an earlier call's, anywhere
        ("pushd +1 && echo x > f", "cannot tell where"),
        (f"env -C {repo} touch f", "main worktree"),
        (f"sudo -D {repo} touch f", "main worktree"),
        (f"install -d {repo}/build", "main worktree"),
        (f"awk -i inplace '{{print}}' {repo}/README.md", "main worktree"),
    ]
    shared = "git's own files"
    lines += [(f"git {args}", shared) for args in (
        "update-ref refs/heads/main HEAD", "branch -f main HEAD", "checkout -B main", "push . HEAD:main",
        "fetch . HEAD:main", "config alias.st status", "worktree remove --force ../other", "tag -d v1",
        "notes --ref lanes add -m forged HEAD", "symbolic-ref HEAD refs/heads/main", "reflog expire --all")]
    lines += [(f"GIT_DIR={repo}/.git git update-ref refs/heads/main HEAD", shared),
              (f"GIT_WORK_TREE={repo} git checkout -- .", "main worktree"),
              (f"git --work-tree={repo} checkout -- .", "main worktree"),
              (f"git push {repo} HEAD:main", "main worktree"),
              (f"git archive -o {repo}/x.tar HEAD", "main worktree"),
              (f"git clone /tmp/x {repo}/copy", "main worktree")]
    assert not_denied(ws, lines, "w") == []
    assert not (repo / "f").exists()


def codex_call(ws, tool: str, tool_input: dict, call_id: str) -> dict:
    return {"session_id": "thread-1", "turn_id": "turn-1", "transcript_path": None, "cwd": str(ws),
            "hook_event_name": "PreToolUse", "model": "gpt-5-codex", "permission_mode": "default",
            "tool_name": tool, "tool_use_id": call_id, "tool_input": tool_input}


def test_an_indented_apply_patch_header_is_seen(ws):
    """Codex trims each hunk header before reading it, so an indented header still writes its file."""
    patch = ("*** Begin Patch\n*** Add File: src/ok.py\n+x = 1\n  *** Update File: ../../../README.md\n@@\n-a\n+b\n"
             "*** End Patch")
    verdict, reason = decision(hook("codex", "PreToolUse", codex_call(ws, "apply_patch", {"command": patch}, "c1")))
    assert verdict == "deny" and "main worktree" in reason
    tabbed = "*** Begin Patch\n\t*** Delete File: ../other/x.py\n*** End Patch"
    verdict, reason = decision(hook("codex", "PreToolUse", codex_call(ws, "apply_patch", {"command": tabbed}, "c2")))
    assert verdict == "deny" and "another lane's workspace" in reason
    # the same envelope run through the shell tool as a here-document
    shell = f"apply_patch <<'EOF'\n{patch}\nEOF"
    verdict, reason = decision(hook("codex", "PreToolUse", codex_call(ws, "Bash", {"command": shell}, "c3")))
    assert verdict == "deny" and "main worktree" in reason
    inside = "*** Begin Patch\n  *** Add File: src/new.py\n+x = 1\n*** End Patch"
    assert decision(hook("codex", "PreToolUse", codex_call(ws, "apply_patch", {"command": inside}, "c4")))[0] \
        == "allow"


def test_archivers_downloaders_and_patchers_writing_outside_the_lane_are_denied(repo, ws):
    """Programs that write where an option or their last operand says (or where they run): an extraction,
    a copy, a download, a patch or a `find -delete` into the main worktree is a write there."""
    lines = [f"tar -xf /tmp/a.tar -C {repo}", f"tar xzf /tmp/a.tgz --directory={repo}/src", f"cd {repo} && tar -xf a.tar",
             f"tar -czf {repo}/x.tgz .", f"unzip -o /tmp/a.zip -d {repo}", f"rsync -a /tmp/a/ {repo}/",
             f"rsync -a --remove-source-files {repo}/src/ /tmp/b/", f"scp host:f {repo}/f", f"patch -p1 -d {repo} < p",
             f"find {repo} -name '*.py' -delete", f"find . -fprint {repo}/list", f"sort -o {repo}/README.md a",
             f"uniq a {repo}/README.md", f"wget -O {repo}/x http://e", f"wget -P {repo} http://e",
             f"cd {repo} && wget http://e", f"cd {repo} && git format-patch -1", f"split -b1 x {repo}/part",
             f"csplit x 1 -f {repo}/part", f"zip {repo}/a.zip x", f"gunzip {repo}/README.md.gz",
             f"rename s/x/y/ {repo}/README.md", f"pip install -t {repo} x", f"npm install --prefix {repo}",
             f"gcc -o {repo}/app x.c", f"go build -o {repo}/app ."]
    assert not_denied(ws, [(line, "main worktree") for line in lines], "a") == []
    for number, line in enumerate([f"cd {repo} && tar -xOf a.tar setup.cfg | head", f"tar -tf {repo}/a.tar",
                                   f"cd {repo} && wget -qO- http://e | head", f"unzip -l {repo}/a.zip"]):
        assert decision(hook_in_process("claude", "PreToolUse", bash(ws, line, f"toolu_r{number}")))[0] == "allow"


def test_an_option_before_the_one_naming_the_destination_does_not_hide_it(repo, ws):
    """`cp -v -t DIR f`: a flag just before an option that takes the next word as its value (the target
    directory, the output file) made that option and its value vanish, so the write went unseen."""
    lines = [f"cp -v -t {repo} a.txt", f"cp -a -t {repo} a.txt", f"install -v -t {repo} a.txt",
             f"mv -v -t {repo} a.txt", f"tar -v -C {repo} -xf /tmp/a.tar", f"wget -q -O {repo}/x http://e",
             f"sort -r -o {repo}/s a", f"unzip -q -d {repo} /tmp/a.zip", f"patch -s -d {repo} -p1 < p",
             f"gcc -O2 -g -o {repo}/app x.c"]
    assert not_denied(ws, [(line, "main worktree") for line in lines], "v") == []
    for number, line in enumerate(["cp -v -t src a.txt", "tar -v -C build -xf /tmp/a.tar", "cp -v a b"]):
        assert decision(hook_in_process("claude", "PreToolUse", bash(ws, line, f"toolu_vi{number}")))[0] == "allow"


def test_a_symbolic_link_s_target_is_read_from_the_link_s_directory(repo, ws):
    """`ln -s ../../../.. d/up` makes d/up point at what ../../../.. is from d/ (the main worktree), not from
    where ln runs (outside the repository): judged from here, the link, and the write through it in the same
    line, passed. A link into the workspace that reaches up from a subfolder is no write elsewhere."""
    for number, line in enumerate(["mkdir d && ln -s ../../../.. d/up && echo x > d/up/f",
                                   "ln -s -t d ../../../../README.md", "ln -sf ../../../../README.md d/r"]):
        verdict, reason = decision((hook if number == 0 else hook_in_process)(
            "claude", "PreToolUse", bash(ws, line, f"toolu_l{number}")))
        assert verdict == "deny" and "main worktree" in reason, (line, reason)
    for number, line in enumerate(["ln -s ../README.md src/readme", "ln -sr README.md src/readme"]):
        assert decision(hook_in_process("claude", "PreToolUse", bash(ws, line, f"toolu_li{number}")))[0] \
            == "allow", line
    assert not (repo / "f").exists()


def test_the_path_fields_of_unknown_tools_include_a_move_s_source_and_a_git_server_s_repository(repo, ws):
    from hook_helpers import claude

    calls = [("mcp__filesystem__move_file", {"source": f"{repo}/README.md", "destination": "/tmp/x"}),
             ("mcp__git__git_reset", {"repo_path": str(repo)}),
             ("mcp__git__git_commit", {"repo_path": str(repo), "message": "x"})]
    for number, (tool, data) in enumerate(calls):
        payload = claude("PreToolUse", ws, tool_name=tool, tool_input=data, tool_use_id=f"toolu_p{number}")
        verdict, reason = decision(hook_in_process("claude", "PreToolUse", payload))
        assert verdict == "deny" and "main worktree" in reason, (tool, reason)
    reads = claude("PreToolUse", ws, tool_name="mcp__git__git_status", tool_input={"repo_path": str(repo)},
                   tool_use_id="toolu_pr")
    assert decision(hook_in_process("claude", "PreToolUse", reads))[0] == "allow"


def test_git_lanes_commands_that_rewrite_another_workspace_are_writes_there(repo, ws):
    """`git lanes` itself writes files: `restore` into the workspace it names with -w (else the one it runs
    in), `lane reset` and `lane delete` into their lane's. Every `git lanes` command passed as a read, so an
    agent confined to its lane could overwrite the main worktree (`cd ../../.. && git lanes restore main
    --force`) or another lane's workspace (`git lanes lane reset other --force`)."""
    assert run_cli("lane", "create", "other", cwd=repo).code == 0
    lines = [(f"git -C {repo} lanes restore main --force", "main worktree"),
             ("cd ../../.. && git lanes restore main --force", "main worktree"),
             ("git lanes restore main -w main --force", "lane main"),
             ("git lanes restore main --workspace=other", "lane other"),
             ("git lanes restore -wother main", "lane other"),
             ("git lanes lane reset other --force", "lane other"),
             ("git lanes lane reset --reason x --onto main other", "lane other"),
             # --agent-id (--agent's hidden alias) takes a value too: it named the agent's own lane as the one reset
             ("git lanes lane reset --agent-id feature other --force", "lane other"),
             ("git lanes lane delete other --force", "lane other"),
             ('git lanes lane delete "$LANE"', "lane $LANE"),
             ("/opt/bin/git-lanes restore main -w other --force", "lane other"),
             ("cd .. && git-lanes restore main --force", "another lane's workspace")]
    assert not_denied(ws, lines, "gl") == []
    for number, line in enumerate(["git lanes restore main", "git lanes restore main -w feature --force",
                                   "git lanes lane reset feature --onto main", "git lanes commit -m wip",
                                   "git lanes promote feature", "git lanes task list", "git lanes lane delete feature",
                                   f"git -C {repo} lanes status", "git lanes commit -w main -m x"]):
        assert decision(hook_in_process("claude", "PreToolUse", bash(ws, line, f"toolu_gli{number}")))[0] \
            == "allow", line


def test_git_lanes_own_mcp_restore_of_another_lane_is_a_write_there(repo, ws):
    """The MCP server git-lanes installs (`lanes`) restores any lane's workspace it is told to: through it,
    as through `git lanes restore -w`, an agent confined to its lane rewrote the main worktree."""
    from hook_helpers import claude

    assert run_cli("lane", "create", "other", cwd=repo).code == 0
    for number, (tool, lane) in enumerate([("mcp__lanes__restore", "main"), ("mcp__lanes__restore", "other"),
                                           ("mcp__plugin_git-lanes_lanes__restore", "other")]):
        verdict, reason = decision((hook if number == 0 else hook_in_process)("claude", "PreToolUse", claude(
            "PreToolUse", ws, tool_name=tool, tool_input={"state": "main", "lane": lane, "force": True},
            tool_use_id=f"toolu_mr{number}")))
        assert verdict == "deny" and f"lane {lane}" in reason, (tool, reason)
    gemini = {"session_id": "g1", "transcript_path": None, "cwd": str(ws), "hook_event_name": "BeforeTool",
              "timestamp": "2026-01-01T10:30:00Z", "tool_name": "mcp_lanes_restore",
              "tool_input": {"state": "main", "lane": "main"}}
    answer = hook_in_process("gemini", "BeforeTool", gemini)
    assert '"decision": "deny"' in answer.out and "lane main" in answer.out
    for number, tool_input in enumerate([{"state": "main"}, {"state": "main", "lane": "feature"}]):
        assert decision(hook_in_process("claude", "PreToolUse", claude(
            "PreToolUse", ws, tool_name="mcp__lanes__restore", tool_input=tool_input,
            tool_use_id=f"toolu_mri{number}")))[0] == "allow"


def test_git_lanes_own_mcp_undo_and_gc_are_writes_into_what_every_lane_shares(repo, ws):
    """Through the `lanes` MCP server an agent confined to its lane could undo the trunk's last promotion or
    prune shared refs, which `git lanes undo` and `gc` in its shell may not; their dry runs still pass."""
    from hook_helpers import claude

    for number, (tool, tool_input) in enumerate([("mcp__lanes__undo", {}), ("mcp__lanes__undo", {"dry_run": False}),
                                                 ("mcp__lanes__gc", {"older_than": "1d"}),
                                                 ("mcp_lanes_undo", {"operation": "abc"}),
                                                 ("mcp__plugin_git-lanes_lanes__gc", {"dry_run": "yes"})]):
        verdict, reason = decision(hook_in_process("claude", "PreToolUse", claude(
            "PreToolUse", ws, tool_name=tool, tool_input=tool_input, tool_use_id=f"toolu_mu{number}")))
        assert verdict == "deny" and "git's own files" in reason, (tool, tool_input, reason)
    for number, (tool, tool_input) in enumerate([("mcp__lanes__undo", {"dry_run": True}),
                                                 ("mcp__lanes__gc", {"dry_run": True}), ("mcp__lanes__op_log", {})]):
        assert decision(hook_in_process("claude", "PreToolUse", claude(
            "PreToolUse", ws, tool_name=tool, tool_input=tool_input, tool_use_id=f"toolu_mui{number}")))[0] \
            == "allow", (tool, tool_input)


def test_git_dir_checkout_prefix_init_and_find_s_found_files_count_where_they_write(repo, ws):
    """`git --git-dir=MAIN/.git reset --hard HEAD~1` moved the trunk from inside a lane (its index and HEAD are
    git's own files there), `git checkout-index --prefix=DIR/` and `git init DIR` write DIR, and `{}` in a
    `find ROOT -exec` command is a file under ROOT: all passed as writes in the lane itself."""
    lines = [(f"git --git-dir={repo}/.git reset --hard HEAD~1", "git's own files"),
             (f"git --git-dir {repo}/.git checkout -- .", "git's own files"),
             ("git checkout-index --prefix=../../../ -a", "main worktree"),
             (f"git checkout-index -a --prefix={repo}/", "main worktree"),
             ("git init ../../../newrepo", "main worktree"),
             ("git init -b main --template /tmp/t ../../../newrepo", "main worktree"),
             (f"git init -q --separate-git-dir={repo}/x.git sub", "main worktree"),
             ("find ../../.. -name a.txt -exec sed -i s/a/b/ {} +", "main worktree"),
             (f"find -L {repo} -name '*.txt' -execdir rm {{}} \\;", "main worktree"),
             (f"find . {repo}/src -exec touch {{}}.bak \\;", "main worktree")]
    assert not_denied(ws, lines, "gd") == []
    for number, line in enumerate(["find . -name '*.py' -exec sed -i s/a/b/ {} +", "find src -exec touch {} +",
                                   "git checkout-index -a --prefix=build/", "git init sub", "git --git-dir=.git status",
                                   "find . -name '*.pyc' -exec ls {} \\;"]):
        assert decision(hook_in_process("claude", "PreToolUse", bash(ws, line, f"toolu_gdi{number}")))[0] \
            == "allow", line
    assert not (repo / "newrepo").exists()


def test_a_write_through_a_symbolic_link_and_up_lands_where_the_file_system_puts_it(repo, ws):
    """`echo x > linked/../f`, where `linked` (say, from an archive extracted in the lane) points into the main
    worktree, opens the main worktree's file: the target was normalised as text (`linked/..` is the lane)
    before links were resolved. `cd linked/..` is still the lane: bash's cd goes up as text."""
    (repo / "src").mkdir(exist_ok=True)
    (ws / "linked").symlink_to(repo / "src")
    lines = [("echo x > linked/../f", "main worktree"), ("cp a.txt linked/../g", "main worktree"),
             ("cd linked && echo x > ../f", "outside this run")]
    assert not_denied(ws, lines, "sl") == []
    assert decision(hook_in_process("claude", "PreToolUse", bash(ws, "cd linked/.. && echo x > f", "toolu_sli")))[0] \
        == "allow"


def test_git_lanes_undo_gc_doctor_fix_and_budgets_are_writes_into_what_every_lane_shares(repo, ws):
    """`git lanes undo` run in a lane undid the trunk's last promotion (the trunk moved back, its files left
    the main worktree), gc and doctor --fix prune and repair refs every lane shares, and `budget set|clear`
    let an agent raise the budget a person gave its lane ("a person can raise it"), and `uninstall` run in the
    main worktree took the hooks out of its settings: all passed as reads."""
    lines = [(line, "git's own files") for line in (
        "git lanes undo", "git lanes undo 05fb521d --json", "git lanes gc --older-than 0", "git lanes doctor --fix",
        f"git -C {repo} lanes undo", "git lanes budget set --lane feature --usd 1000",
        "git lanes budget clear --lane feature", "git lanes init")]
    # install and uninstall write the settings of the worktree they run in
    lines += [(f"git -C {repo} lanes uninstall claude", "main worktree"),
              (f"cd {repo} && git lanes install codex --no-mcp", "main worktree")]
    assert not_denied(ws, lines, "un") == []
    for number, line in enumerate(["git lanes undo --dry-run", "git lanes op log", "git lanes doctor",
                                   "git lanes gc --dry-run", "git lanes status", "git lanes budget show",
                                   f"git -C {repo} lanes uninstall claude --dry-run", "git lanes install claude"]):
        assert decision(hook_in_process("claude", "PreToolUse", bash(ws, line, f"toolu_uni{number}")))[0] \
            == "allow", line


def test_python_m_git_lanes_is_held_to_the_same_wall_as_git_lanes(repo, ws):
    """`python -m git_lanes` is a documented spelling of `git lanes`: an agent whose `git lanes budget set`
    was denied raised its own budget, undid the trunk's promotion or rewrote another lane's workspace by
    spelling the same command that way."""
    assert run_cli("lane", "create", "other", cwd=repo).code == 0
    lines = [("python -m git_lanes budget set --lane feature --usd 1000", "git's own files"),
             ("python3 -m git_lanes undo", "git's own files"),
             ("/usr/bin/python3.12 -I -m git_lanes gc", "git's own files"),
             ("python3 -mgit_lanes lane reset other --force", "lane other"),
             ("python -X dev -m git_lanes restore main -w other --force", "lane other"),
             (f"cd {repo} && python -m git_lanes restore main --force", "main worktree")]
    assert not_denied(ws, lines, "pym") == []
    for number, line in enumerate(["python -m git_lanes status", "python3 -m git_lanes budget show",
                                   "python -m pytest -q", "python script.py -m git_lanes undo"]):
        assert decision(hook_in_process("claude", "PreToolUse", bash(ws, line, f"toolu_pyok{number}")))[0] \
            == "allow", line


def test_what_a_project_tool_runs_meets_the_write_gate(repo, ws):
    """`uv run`, `poetry run`, `npx -c`… run a command or a script: through them an agent wrote into the main
    worktree and undid the trunk's promotion."""
    lines = [(f"uv run sh -c 'echo x > {repo}/f'", "main worktree"),
             (f"npx -c 'cp a.txt {repo}/g'", "main worktree"),
             ("poetry run git-lanes undo", "git's own files"),
             ("uv run python -m git_lanes budget set --lane feature --usd 9", "git's own files")]
    assert not_denied(ws, lines, "run") == []
    assert decision(hook_in_process("claude", "PreToolUse", bash(ws, "uv run pytest -q", "toolu_runok")))[0] \
        == "allow"


def test_what_an_environment_tool_runs_meets_the_write_gate(repo, ws):
    """cross-env, dotenv, `op run`, `doppler run`, `aws-vault exec`… set variables and run a command: through
    them an agent raised its own budget and wrote into the main worktree."""
    lines = [("op run -- git lanes budget set --lane feature --usd 9", "git's own files"),
             ("cross-env X=1 git-lanes undo", "git's own files"),
             (f"dotenv -e .env -- sh -c 'echo x > {repo}/f'", "main worktree"),
             (f"env-cmd -f .env cp a.txt {repo}/g", "main worktree"),
             ("doppler run --command 'git lanes undo'", "git's own files"),
             ("aws-vault exec prod -- python -m git_lanes gc", "git's own files")]
    assert not_denied(ws, lines, "envtool") == []
    assert decision(hook_in_process("claude", "PreToolUse", bash(ws, "cross-env CI=1 pytest -q", "toolu_envok")))[0] \
        == "allow"


def test_removing_a_symbolic_link_is_a_write_to_the_link_not_to_what_it_points_at(repo, ws):
    """`rm link` and `unlink link` remove the link itself (neither rm nor unlink(2) follows it), so a link in the
    lane pointing into the main worktree may be removed; a removal that goes through the link (`rm link/x`,
    `rm link/`, `rm -r link` that may walk into it) is still a write there."""
    (ws / "out").symlink_to(repo / "src")
    (ws / "outfile").symlink_to(repo / "src" / "app.py")
    for number, line in enumerate(["rm out", "rm -f outfile", "unlink out", "rm -- ./out outfile", "rm -v out"]):
        verdict, reason = decision(hook_in_process("claude", "PreToolUse", bash(ws, line, f"toolu_rml{number}")))
        assert (line, verdict) == (line, "allow"), reason
    lines = [(line, "main worktree") for line in ("rm out/app.py", "rm out/", "rm -r out", "rm -r out/",
                                                  "rm --rec out", "rm out/app.py/..", "rm out/..", "rm outfile out/x")]
    assert not_denied(ws, lines, "rmo") == []
