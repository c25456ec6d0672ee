"""Scene: agents coordinate through the ledger — a ticket of dependent tasks, two agents racing for one task
(one wins, the other moves on at once), an overlap warning, a question and its answer on the board, and a
wake-up when the task an agent waits on becomes ready. Plain git shows the whole story."""

from __future__ import annotations

from git_lanes.demo.session import DemoSession

AGENTS = [("coder-store", "demo/session-store"), ("coder-login", "demo/login")]


def play(s: DemoSession) -> None:
    s.heading("Coordination: a ticket of dependent tasks in the ledger (refs/lanes/ledger)")
    for agent, lane in AGENTS:
        s.lanes("lane", "create", lane)
        s.lanes("agent", "register", agent, "--kind", "demo", "--lane", lane)
    ticket = s.lanes("ticket", "open", "Login flow", "--agent", "lead")["ticket"]
    store = s.lanes("task", "create", "Session store", "--ticket", ticket, "--files", "session/**",
                    "--agent", "lead")["task"]
    login = s.lanes("task", "create", "Login endpoint", "--ticket", ticket, "--depends", store, "--files",
                    "login.py", "--agent", "lead")["task"]
    s.show("task", "list")

    s.heading("Both agents claim the ready task at the same moment: exactly one wins")
    racers = [s.start("task", "claim", store[:8], "--agent", agent, "--version", "1") for agent, _ in AGENTS]
    outcomes = [s.finish(proc, allowed=(0, 3)) for proc in racers]
    winner = next(o["owner"] for o in outcomes if "owner" in o)
    loser = next(agent for agent, _ in AGENTS if agent != winner)
    s.say(f"  {winner} won; {loser} got exit 3 at once and takes the next task instead")
    s.show("task", "claim", login[:8], "--agent", loser)

    s.heading("Claims warn, never block: the loser steps into the winner's files")
    s.show("claim", "add", "session/store.py", "--agent", loser)

    s.heading("A question and its answer on the board")
    question = s.lanes("board", "post", "Will the store expose get_session(token)?", "--kind", "question",
                       "--to", winner, "--agent", loser)["post"]
    s.show("board", "read", "--agent", winner, "--unread")
    s.lanes("board", "post", "Yes: get_session(token) -> Session | None", "--to", loser, "--agent", winner)
    s.lanes("board", "resolve", str(question), "--agent", winner)
    s.show("board", "read", "--agent", loser, "--unread")

    s.heading(f"{loser} waits; finishing the session store wakes it")
    waiter = s.start("wait", "--agent", loser, "--timeout", "60", agent=loser)
    s.show("task", "done", store[:8], "--agent", winner)
    woke = s.finish(waiter)
    s.say(f"  {loser}'s wait returned after {woke['waited']:.2f}s: {woke['reason']} "
          f"(task {woke['wakes'][0]['task'][:8]} is ready)")
    s.lanes("task", "done", login[:8], "--agent", loser)
    s.show("ticket", "list")

    s.heading("Plain git tells the story")
    s.say("$ git log --oneline refs/lanes/ledger | head -8")
    for line in s.git("log", "--oneline", "refs/lanes/ledger").splitlines()[:8]:
        s.say(f"  {line}")
    s.results["coordination"] = {"winner": winner, "woke": woke["reason"],
                                 "ticket": s.lanes("ticket", "show", ticket[:8])["status"]}
