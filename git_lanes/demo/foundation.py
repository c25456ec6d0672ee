"""Scene 1: three agents work in their own lanes at once, recording intent and cost; one attempt is rejected
and kept as signal; history adds it all up."""

from __future__ import annotations

from git_lanes.demo.session import DemoSession

AGENTS = [
    ("coder-auth", "feature/auth", "auth.py", "def login(user, password):\n    return check(user, password)\n",
     "Add a login function", 1800, 950, 0.031),
    ("coder-api", "feature/api", "api.py", "ROUTES = ['/login', '/logout']\n",
     "Declare the API routes", 1200, 400, 0.017),
    ("coder-docs", "docs/guide", "docs/guide.md", "# Guide\n\nRun `make` to build.\n",
     "Write the getting-started guide", 900, 700, 0.012),
]


def play(s: DemoSession) -> None:
    s.heading("A repository for parallel agents")
    s.write(s.root / "README.md", "# demo service\n")
    s.show("init", "--trunk", "main")

    s.heading("Three agents get their own lanes, each a real git worktree")
    for _agent, lane, *_ in AGENTS:
        s.lanes("lane", "create", lane)
    s.show("lane", "list")

    s.heading("They work and commit at the same time, each in its own process")
    procs = []
    for agent, lane, path, text, prompt, tokens_in, tokens_out, cost in AGENTS:
        workspace = s.root / ".lanes" / "workspaces" / lane
        s.write(workspace / path, text)
        procs.append(s.start("commit", "-m", prompt, "--tag", lane.split("/")[0], "--tokens-in",
                             str(tokens_in), "--tokens-out", str(tokens_out), "--api-calls", "3",
                             "--wall-time", "41.5", "--cost-usd", str(cost), "--model", "demo-model",
                             "--auto-accept", cwd=workspace, agent=agent))
    for proc in procs:
        record = s.finish(proc)
        s.say(f"  {record['intent']['agent_id']:11} -> {record['lane']:13} {record['status']} "
              f"{record['id'][:8]}: {record['intent']['prompt']}")

    s.heading("An attempt that goes wrong is rejected, and kept as signal")
    workspace = s.root / ".lanes" / "workspaces" / "feature/auth"
    s.write(workspace / "auth.py", "def login(user, password):\n    return True  # TODO\n")
    attempt = s.lanes("propose", "-m", "Make login always succeed", "--tokens-in", "600", "--tokens-out",
                      "200", "--cost-usd", "0.008", cwd=workspace, agent="coder-auth")
    s.show("reject", attempt["id"][:8], "--reason", "login must check the password")
    s.lanes("restore", "feature/auth", "-w", "feature/auth", "--force")

    s.heading("History: every transition with its intent and cost, and the totals")
    s.show("history")
    s.say("$ git log --oneline refs/lanes/heads/feature/auth")
    for line in s.git("log", "--oneline", "refs/lanes/heads/feature/auth").splitlines():
        s.say(f"  {line}")
    s.results["foundation"] = s.lanes("history")["totals"]
