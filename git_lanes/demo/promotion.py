"""Scene: promotion refuses to guess. Two agents fork from the same trunk and both touch auth.py in
different regions; one lands, the other's promotion stops on the collision (where plain git would have
merged silently) and is rerun from the trunk's new head. Then a gate committed on the trunk rejects an
attempt that breaks it."""

from __future__ import annotations

from git_lanes.demo.session import DemoSession

AUTH = """def login(user, password):
    return check(user, password)


def session_timeout():
    return 3600


def max_attempts():
    return 5
"""

GATE = """# Gates judge every candidate tree before it is accepted; a lane cannot change them.
[[gate]]
name = "no-todo"
command = "! grep -rn 'TODO' --include='*.py' ."
"""


def play(s: DemoSession) -> None:
    s.heading("Promotion: the trunk gets auth.py, and two agents fork from it")
    s.show("promote", "feature/auth", "--auto-accept", "-m", "Ship the login function", "--agent", "lead")
    s.write(s.root / ".lanes" / "workspaces" / "feature/auth" / "auth.py", AUTH)
    s.lanes("commit", "-w", "feature/auth", "-m", "Add session and lockout settings", "--auto-accept",
            agent="coder-auth")
    s.lanes("promote", "feature/auth", "--auto-accept", agent="lead")
    for lane in ("auth/timeout", "auth/lockout"):
        s.lanes("lane", "create", lane)

    timeout_ws = s.root / ".lanes" / "workspaces" / "auth/timeout"
    lockout_ws = s.root / ".lanes" / "workspaces" / "auth/lockout"
    s.write(lockout_ws / "auth.py", AUTH.replace("return 5", "return 3"))
    s.lanes("commit", "-m", "Lock out after 3 attempts", "--auto-accept", cwd=lockout_ws, agent="coder-b")
    s.write(timeout_ws / "auth.py", AUTH.replace("return 3600", "return 900"))
    s.lanes("commit", "-m", "Shorter sessions", "--auto-accept", cwd=timeout_ws, agent="coder-a")

    s.heading("The lockout change lands first, as one merge commit")
    s.show("promote", "auth/lockout", "--auto-accept", "--agent", "lead")

    s.heading("The timeout change touched auth.py too, in another region: git would merge it; lanes stops")
    s.show("promote", "auth/timeout", "--auto-accept", "--agent", "lead")
    collision = s.lanes("promote", "auth/timeout", "--dry-run", allowed=(3,))  # a collision found: exit 3

    s.heading("Rerun from the trunk's new head: the attempt is kept as signal, the work redone on top")
    s.show("lane", "reset", "auth/timeout", "--onto", "main", "--reason", "auth.py changed on main")
    s.write(timeout_ws / "auth.py", (timeout_ws / "auth.py").read_text().replace("return 3600", "return 900"))
    s.lanes("commit", "-m", "Shorter sessions, on the new head", "--auto-accept", cwd=timeout_ws,
            agent="coder-a")
    landed = s.lanes("promote", "auth/timeout", "--auto-accept", agent="lead")
    s.say(f"  {landed['status']}: main is now {landed['transition']['to'][:8]}")
    s.say("$ git log --oneline --graph -6 main")
    for line in s.git("log", "--oneline", "--graph", "-6", "main").splitlines():
        s.say(f"  {line}")

    s.heading("A gate on the trunk rejects an attempt that breaks it")
    s.write(s.root / ".lanes.toml", GATE)
    held = s.lanes("commit", "-m", "Gate: no TODOs in Python code", "--auto-accept", agent="lead")
    s.say(f"  .lanes.toml is protected: the change waits for a person ({held['status']}); the lead accepts it")
    s.lanes("accept", held["id"])
    s.write(lockout_ws / "auth.py", (lockout_ws / "auth.py").read_text().replace(
        "return check(user, password)", "return True  # TODO: check the password"))
    s.show("commit", "-w", "auth/lockout", "-m", "Skip the password check for now", "--agent", "coder-b",
           "--auto-accept")
    s.show("history", "--status", "rejected")
    s.results["promotion"] = {"collision": [c["path"] for c in collision["collisions"]],
                              "landed_after_rerun": landed["status"]}
