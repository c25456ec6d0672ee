"""The dashboard in a real headless Chromium (Debian's, through Playwright) against the real server: lanes
appear, a CLI commit shows up without a reload, accepting from the page moves the lane, and agent-written
markup renders as text and runs nothing. Screenshots land in test-artifacts/ (GIT_LANES_ARTIFACTS)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import git, run_cli, workspace
from git_lanes.api import Lanes
from dashboard_seed import seed
from http_helpers import Server

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="Debian's chromium is not installed (apt-get install -y chromium)")
ARTIFACTS = Path(os.environ.get("GIT_LANES_ARTIFACTS", Path(__file__).resolve().parent.parent / "test-artifacts"))
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync"]
# Generous bounds for a busy 2-core machine: they stop a broken test, they do not measure speed.
WAIT_MS = 30_000
HOSTILE = '<script>window.__pwned = "script"</script><img src=x onerror="window.__pwned = \'img\'">'


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    opened.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    opened.problems = problems
    yield opened
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    opened.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()


@pytest.fixture
def server(repo):
    with Server(repo) as running:
        yield running


def lane_head_on_page(page, lane: str) -> str:
    return page.locator(f'tr[data-lane="{lane}"] td:nth-child(2) code').inner_text()


def test_lanes_appear_with_their_overlaps_and_proposals(api, repo, page):
    seeded = seed(api, repo)
    with Server(repo) as server:
        page.goto(server.url + "/")
        for lane in ("main", "feature/auth", "feature/cache", "docs"):
            page.wait_for_selector(f'tr[data-lane="{lane}"]', timeout=WAIT_MS)
        assert lane_head_on_page(page, "docs") == api.lane_show("docs")["head"][:8]
        proposal = page.locator(f'[data-proposal="{seeded["pending"]["id"]}"]')
        assert "Check the user on login" in proposal.inner_text()
        assert page.locator('[data-pair="feature/auth|feature/cache"]').count() == 1
        assert page.locator('[data-agent="coder-2"] .chip.needs').inner_text() == "needs input"
        assert page.locator('[data-task]').count() == 4
        assert page.locator('[data-post="2"].open').count() == 1
        assert page.locator(f'tr.rejected[data-transition="{seeded["rejected"]["id"]}"]').count() == 1
        # read-only without the token: the buttons say so rather than fail
        assert proposal.locator("button.accept").is_disabled()
    assert page.problems == []


def test_a_cli_commit_shows_up_without_a_reload(api, repo, server, page):
    api.lane_create("feat")
    page.goto(server.url + "/")
    page.wait_for_selector('tr[data-lane="feat"]', timeout=WAIT_MS)
    page.wait_for_selector("#live.on", timeout=WAIT_MS)
    page.evaluate("window.__sameDocument = true")
    before = lane_head_on_page(page, "feat")
    ws = workspace(repo, "feat")
    (ws / "new.txt").write_text("new\n")
    result = run_cli("commit", "-m", "Add new", "--agent-id", "coder-1", "--auto-accept", "--json", cwd=ws)
    assert result.code == 0, result.err
    moved = result.json["to"][:8]
    assert moved != before
    page.wait_for_function(f"""() => document.querySelector('tr[data-lane="feat"] td:nth-child(2) code')
                                   ?.textContent === "{moved}" """, timeout=WAIT_MS)
    assert page.evaluate("window.__sameDocument") is True  # the same page, not a reload
    assert page.problems == []


def test_accepting_a_proposal_from_the_page_moves_the_lane(api, repo, server, page):
    api.lane_create("feat")
    (workspace(repo, "feat") / "f.txt").write_text("f\n")
    proposal = api.commit("Add f", "coder-1", lane="feat")
    page.goto(server.url + f"/?token={server.token}")
    assert page.url == server.url + "/"  # the token left the address bar
    button = page.locator(f'[data-proposal="{proposal["id"]}"] button.accept')
    button.wait_for(timeout=WAIT_MS)
    page.wait_for_selector("#auth.pass", timeout=WAIT_MS)
    assert not button.is_disabled()
    button.click()
    page.wait_for_selector(f'[data-proposal="{proposal["id"]}"]', state="detached", timeout=WAIT_MS)
    assert git("rev-parse", "refs/lanes/heads/feat", cwd=repo).strip() == proposal["to"]
    page.wait_for_function(f"""() => document.querySelector('tr[data-lane="feat"] td:nth-child(2) code')
                                   ?.textContent === "{proposal['to'][:8]}" """, timeout=WAIT_MS)
    assert page.problems == []


def test_answering_a_question_from_the_page(api, repo, server, page):
    asked = api.board_post("Size or age?", "coder-2", kind="question")
    page.goto(server.url + f"/?token={server.token}")
    box = page.locator(f'[data-post="{asked["post"]}"] textarea')
    box.wait_for(timeout=WAIT_MS)
    page.wait_for_selector("#auth.pass", timeout=WAIT_MS)
    # the board holds the question: it is not "empty"
    page.wait_for_function("() => document.querySelector('#board').innerText.includes('No other posts.')",
                           timeout=WAIT_MS)
    box.fill("By size, 10k entries")
    page.locator(f'[data-post="{asked["post"]}"] button.accept').click()
    page.wait_for_selector(f'[data-post="{asked["post"]}"].open', state="detached", timeout=WAIT_MS)
    unread = api.board_read("coder-2", unread_only=True)["posts"]
    assert [p["text"] for p in unread] == ["By size, 10k entries"]
    assert page.problems == []


def test_a_question_with_a_hundred_posts_after_it_still_waits_for_an_answer(api, repo, server, page):
    """The page read the last 100 posts and picked the questions out of them: one with 100 posts after it
    vanished, and the board said "No unanswered questions"."""
    api.agent_register("coder-2")
    asked = api.board_post("Size or age?", "coder-2", kind="question")
    for n in range(105):
        api.board_post(f"note {n}", "coder-1")
    page.goto(server.url + "/")
    page.locator(f'[data-post="{asked["post"]}"].open').wait_for(timeout=WAIT_MS)
    assert "No unanswered questions" not in page.locator("#board").inner_text()
    assert page.locator('[data-agent="coder-2"] .chip.needs').inner_text() == "needs input"
    assert page.problems == []


def test_agent_written_markup_is_text_and_runs_nothing(api, repo, server, page):
    api.lane_create("feat")
    (workspace(repo, "feat") / "f.txt").write_text("f\n")
    api.commit(f"Fix {HOSTILE}\nmore {HOSTILE}", "coder-1", lane="feat")
    api.board_post(f"Question {HOSTILE}", "coder-1", kind="question")
    api.task_create(f"Task {HOSTILE}"[:200])
    (workspace(repo, "feat") / "<img src=x onerror=alert(1)>.txt").write_text("x\n")
    page.goto(server.url + "/")
    page.wait_for_selector('tr[data-lane="feat"] .proposal', timeout=WAIT_MS)
    page.wait_for_selector('[data-task]', timeout=WAIT_MS)
    assert HOSTILE in page.locator('tr[data-lane="feat"] .proposal .prompt').inner_text()
    assert HOSTILE in page.locator('#board .post.open .text').inner_text()
    assert "<img src=x onerror=alert(1)>.txt" in page.locator('tr[data-lane="feat"] ul.paths').text_content()
    assert page.locator("main img, main script").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.problems == []


def test_bidirectional_overrides_an_agent_wrote_are_shown_as_escapes_not_obeyed(api, repo, server, page):
    """U+202E in a title or a post made the page draw what follows it reversed ("exe.txt" read "txt.exe"):
    text nodes kept it as any other character. The page shows it as the CLI does, "\\u202e"."""
    rlo = "\u202e"
    api.board_post(f"Question {rlo}gnp.exe", "coder-1", kind="question")
    task = api.task_create(f"Task {rlo}txt.exe").task
    page.goto(server.url + "/")
    page.wait_for_selector(f'[data-task="{task}"]', timeout=WAIT_MS)
    assert page.locator('#board .post.open .text').inner_text().startswith("Question \\u202egnp.exe")
    assert "Task \\u202etxt.exe" in page.locator(f'[data-task="{task}"]').text_content()
    assert rlo not in page.locator("body").inner_text()
    assert page.problems == []


def test_a_broken_workspace_is_shown_as_such_and_every_other_lane_as_usual(api, repo, server, page):
    l6, l7 = (Path(api.lane_create(lane)["workspace"]) for lane in ("l6", "l7"))
    shutil.rmtree(l6)
    l6.symlink_to(l7)  # l6's path now leads into l7's workspace
    page.goto(server.url + "/")
    page.wait_for_selector('tr[data-lane="l7"]', timeout=WAIT_MS)
    broken = page.locator('tr[data-lane="l6"] .chip.warn')
    assert broken.inner_text() == "workspace broken" and "symbolic link" in broken.get_attribute("title")
    assert page.locator('tr[data-lane="l7"] td.edits').inner_text().strip() == "clean"
    assert page.problems == []


def test_two_dashboards_in_one_browser_both_keep_their_sign_in(api, repo, tmp_path, browser):
    """A browser sends a host's cookies to every port of it: with one cookie name for every server, opening a
    second repository's token link signed the first dashboard out of acting. Each server's cookie is its own."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("a\n")
    other_api = Lanes.init(other, "main")[0]
    proposals = {}
    for lanes, root in ((api, repo), (other_api, other)):
        lanes.lane_create("feat")
        (workspace(root, "feat") / "f.txt").write_text("f\n")
        proposals[root] = lanes.commit("Add f", "coder-1", lane="feat")
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    try:
        with Server(repo) as first, Server(other) as second:
            assert first.url.split(":")[:2] == second.url.split(":")[:2] and first.url != second.url
            tabs = {}
            for server, root in ((first, repo), (second, other)):
                tabs[root] = context.new_page()
                tabs[root].goto(server.url + f"/?token={server.token}")
                tabs[root].wait_for_selector("#auth.pass", timeout=WAIT_MS)
            for root, tab in tabs.items():
                tab.reload()  # the first tab asks again after the second link was opened
                tab.wait_for_selector("#auth.chip:is(.pass, .gone)", timeout=WAIT_MS)
                assert tab.locator("#auth").inner_text() == "can act", root
                button = tab.locator(f'[data-proposal="{proposals[root]["id"]}"] button.accept')
                button.wait_for(timeout=WAIT_MS)
                button.click()
                tab.wait_for_selector(f'[data-proposal="{proposals[root]["id"]}"]', state="detached",
                                      timeout=WAIT_MS)
                assert git("rev-parse", "refs/lanes/heads/feat", cwd=root).strip() == proposals[root]["to"]
            assert len({cookie["name"] for cookie in context.cookies()}) == 2
    finally:
        context.close()


def test_a_repository_removed_under_the_server_is_said_on_the_page(api, repo, server, page, tmp_path):
    """The page stayed "live" on what it last read while every request behind it failed."""
    page.goto(server.url + "/")
    page.wait_for_selector("#live.on", timeout=WAIT_MS)
    page.wait_for_selector('tr[data-lane="main"]', timeout=WAIT_MS)
    repo.rename(tmp_path / "moved")
    page.wait_for_function("() => document.querySelector('#live').textContent === 'repository gone'",
                           timeout=WAIT_MS)
    assert page.locator("#live").get_attribute("title") == \
        f"the repository {repo} is gone: it was removed or moved after it was opened"
    assert "a server holding it open must be restarted there" in page.locator("#toast").inner_text()
    page.reload()  # a page opened afterwards says so too
    page.wait_for_function("() => document.querySelector('#live').textContent === 'repository gone'",
                           timeout=WAIT_MS)
    assert page.problems == []


def test_a_task_sent_back_for_review_has_a_colour_and_a_key_of_its_own(api, repo, server, page):
    """needs_review is the status a person most needs to see (an integration collided or failed a gate), and
    the graph drew it as no status at all: no colour on its node, no entry in the legend."""
    from git_lanes.errors import Conflict

    tasks = []
    for agent, lane in (("coder-1", "feature/one"), ("coder-2", "feature/two")):
        task = api.task_create(f"Work of {agent}", actor="lead")["task"]
        api.lane_create(lane)
        api.task_claim(task, agent, lane=lane)
        (workspace(repo, lane) / "shared.txt").write_text(f"{agent}\n")
        api.commit(f"Edit as {agent}", agent, lane=lane, auto_accept=True)
        tasks.append(task)
    api.task_done(tasks[0], "coder-1")
    with pytest.raises(Conflict):
        api.task_done(tasks[1], "coder-2")  # collides with the first on shared.txt: back for review
    assert api.task_show(tasks[1])["status"] == "needs_review"
    page.goto(server.url + "/")
    sent_back = page.locator(f'[data-task="{tasks[1]}"]')
    sent_back.wait_for(timeout=WAIT_MS)
    # One look at a node the page has not redrawn since (a redraw replaces it; a detached one has no style).
    styles = "el => el.isConnected && ['.band', 'rect'].map((s) => getComputedStyle(el.querySelector(s)).fill)"
    page.wait_for_function("() => document.styleSheets.length > 0", timeout=WAIT_MS)
    looks = (sent_back.evaluate(styles) for _ in range(100))  # a redraw is rare: a few tries are plenty
    band, card = next(found for found in looks if found)
    assert band != card  # the band was drawn in the card's own white: no colour at all
    assert "needs review" in page.locator("#tasks .legend").inner_text()
    assert page.problems == []


def test_the_page_fits_a_narrow_window_with_its_controls_in_reach(api, repo, server, browser):
    """At a phone's width the top bar did not wrap: who the page acts as, and whether it is live, were off
    the right edge, and each wide table (a 64-character agent id did it even at 1440 pixels) widened the
    whole page. A wide table now scrolls inside its own card."""
    seed(api, repo)
    api.agent_register("a" * 64, lane="docs")
    for width in (400, 1440):
        context = browser.new_context(viewport={"width": width, "height": 900})
        try:
            narrow = context.new_page()
            narrow.goto(server.url + "/")
            narrow.wait_for_selector(f'[data-agent="{"a" * 64}"]', timeout=WAIT_MS)
            narrow.wait_for_selector("#live.on", timeout=WAIT_MS)
            overflow = narrow.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, (width, overflow)
            for control in ("#actor", "#live", "#auth"):
                box = narrow.locator(control).bounding_box()
                assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (width, control, box)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            narrow.screenshot(path=str(ARTIFACTS / f"narrow-{width}.png"), full_page=True)
        finally:
            context.close()


def test_a_redraw_keeps_the_keyboard_on_the_button_it_was_on(api, repo, server, page):
    """Every change redraws the page, and the Accept button a keyboard user had tabbed to was replaced by a
    new one: the focus fell back to the top of the page, so the next Tab started over."""
    api.lane_create("feat")
    (workspace(repo, "feat") / "f.txt").write_text("f\n")
    proposal = api.commit("Add f", "coder-1", lane="feat")
    page.goto(server.url + f"/?token={server.token}")
    page.wait_for_selector("#auth.pass", timeout=WAIT_MS)
    page.wait_for_selector("#live.on", timeout=WAIT_MS)
    button = page.locator(f'[data-proposal="{proposal["id"]}"] button.accept')
    button.wait_for(timeout=WAIT_MS)
    button.focus()
    drawn = int(page.evaluate("document.body.dataset.rendered"))
    result = run_cli("board", "post", "from another process", "--agent-id", "coder-2", "--json", cwd=repo)
    assert result.code == 0, result.err
    page.wait_for_function("() => document.querySelector('#board').innerText.includes('from another process')",
                           timeout=WAIT_MS)
    assert int(page.evaluate("document.body.dataset.rendered")) > drawn  # the page was redrawn meanwhile
    assert page.evaluate("document.activeElement.matches('button.accept')") is True
    assert page.evaluate("document.activeElement.closest('[data-proposal]').dataset.proposal") == proposal["id"]
    page.keyboard.press("Enter")  # and the keyboard still acts on it
    page.wait_for_selector(f'[data-proposal="{proposal["id"]}"]', state="detached", timeout=WAIT_MS)
    assert git("rev-parse", "refs/lanes/heads/feat", cwd=repo).strip() == proposal["to"]
    assert page.problems == []


def test_the_page_asks_with_the_current_spellings_not_the_deprecated_ones(api, repo, server, page):
    """The page asked for `/board?unanswered=true`, a spelling the API documents as deprecated, so it would
    break the day the former names go: everything the page sends uses the names the MCP tools use."""
    from urllib.parse import parse_qsl, urlsplit

    from git_lanes.http.routes import ROUTES, RUN_ROUTES

    deprecated = {alias for route in ROUTES + RUN_ROUTES for p in route.query + route.body for alias in p.aliases}
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    api.board_post("Size or age?", "coder-2", kind="question")
    page.goto(server.url + "/")
    page.wait_for_selector('#board .post.open', timeout=WAIT_MS)
    used = {name for url in asked for name, _ in parse_qsl(urlsplit(url).query)}
    assert "unanswered_only" in used
    assert used & deprecated == set()
    assert page.problems == []


def test_off_loopback_without_the_token_the_page_says_so_rather_than_show_an_empty_project(api, repo, page):
    """Off loopback every read needs the token. Opened without it, the page drew "No lanes yet", "No
    unanswered questions" and $0 spent: a quiet, empty project, where every request had been refused."""
    api.board_post("Size or age?", "coder-2", kind="question")
    with Server(repo, "--host", "0.0.0.0") as server:
        assert server.info["loopback"] is False
        here = f"http://127.0.0.1:{server.info['port']}"
        page.goto(here + "/")
        page.wait_for_selector("#lanes .refused", timeout=WAIT_MS)
        assert "this needs the token" in page.locator("#lanes .refused").inner_text()
        assert page.locator("#live").inner_text() == "token needed"
        shown = page.locator("main").inner_text()
        assert "No lanes yet" not in shown and "No unanswered questions" not in shown
        assert page.locator("#tiles").inner_text().strip() == ""
        page.goto(here + f"/?token={server.token}")  # with the token, the project itself
        page.wait_for_selector('tr[data-lane="main"]', timeout=WAIT_MS)
        page.wait_for_selector("#board .post.open", timeout=WAIT_MS)
        assert page.locator("#lanes .refused").count() == 0
    assert page.problems == []


def test_long_names_wrap_in_their_cells_and_leave_the_actions_in_sight(api, repo, server, page):
    """A lane name may be 250 bytes and an agent id 64 characters, and each was drawn on one line: one such
    lane widened the lanes table past its card at 1440 pixels, so every lane's pending proposals, with
    their Accept and Reject buttons, and the history's prompts, were scrolled out of sight."""
    seed(api, repo)
    lane = "team/" + "-".join(["very-long-lane-name"] * 12)
    agent = "agent-" + "z" * 58
    api.lane_create(lane)
    api.agent_register(agent, lane=lane)
    (workspace(repo, lane) / "overlap.py").write_text("x\n")
    api.commit("Overlap on the long lane", agent, lane=lane, auto_accept=True)
    (workspace(repo, "feature/auth") / "overlap.py").write_text("y\n")
    api.commit("Overlap on auth", "coder-1", lane="feature/auth", auto_accept=True)
    (workspace(repo, lane) / "more.py").write_text("x\n")
    proposal = api.commit("A proposal from a long-named agent", agent, lane=lane)
    page.goto(server.url + f"/?token={server.token}")
    page.wait_for_selector(f'[data-proposal="{proposal["id"]}"]', timeout=WAIT_MS)
    page.wait_for_selector('[data-pair*="very-long-lane-name"]', timeout=WAIT_MS)
    page.wait_for_selector(f'tr[data-transition="{proposal["id"]}"]', timeout=WAIT_MS)
    wider = page.evaluate("""() => [...document.querySelectorAll('.card')]
        .filter((card) => card.scrollWidth > card.clientWidth).map((card) => [card.id, card.scrollWidth, card.clientWidth,
            [...card.querySelectorAll('thead th')].map((th) => th.textContent + ':' + th.offsetWidth).join(' ')])""")
    assert wider == []
    # every pending proposal's buttons within the card's right edge (one look: a redraw replaces them)
    out_of_sight = page.evaluate("""() => {
        const edge = document.querySelector('#lanes-card').getBoundingClientRect().right;
        const buttons = [...document.querySelectorAll('[data-proposal] button')];
        return [buttons.length, buttons.filter((b) => b.getBoundingClientRect().right > edge).map((b) => b.dataset.key)];
    }""")
    assert out_of_sight == [2 * len(api.history(status="proposed")["transitions"]), []]
    # the names are whole on the page, for anyone to read or copy, and a short one is never broken
    assert page.locator(f'tr[data-lane="{lane}"] td.name').inner_text().startswith(lane)
    cells = "#agents tbody td:nth-child(3), #history tbody td:nth-child(4)"  # each agent's lane, each transition's
    broken = page.evaluate("""(cells) => [...document.querySelectorAll(cells)].flatMap((cell) => {
        const text = cell.textContent.trim();
        if (text.length > 20) return [];
        const range = document.createRange();
        range.selectNodeContents(cell);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        return lines.size > 1 ? [text] : [];
    })""", cells)
    assert broken == []
    assert page.locator(f'[data-proposal="{proposal["id"]}"] .agent').get_attribute("title") == agent
    assert page.problems == []


def test_a_long_question_or_reason_is_cut_to_a_few_lines_with_the_whole_in_its_title(api, repo, server, page):
    """A question may be 16 KiB, and the agents table showed it whole under its asker: one long question
    stretched the card thousands of pixels down, pushing every other agent and the runs out of sight; a
    rejection's reason did the same to its row in the history. Each shows its first lines; the board
    holds the question whole, the title the reason."""
    paragraph = "Which eviction policy should the cache use, and how large may it grow? " * 6
    question = "\n".join([paragraph] * 30)
    api.board_post(question, "coder-2", kind="question")
    api.lane_create("feat")
    (workspace(repo, "feat") / "f.txt").write_text("f\n")
    rejected = api.commit("Add f", "coder-1", lane="feat")
    api.reject(rejected["id"], "\n".join([paragraph] * 20))
    page.goto(server.url + "/")
    ask = '[data-agent="coder-2"] .ask'
    reason = f'tr[data-transition="{rejected["id"]}"] .reason'
    page.wait_for_selector(ask, timeout=WAIT_MS)
    page.wait_for_selector(reason, timeout=WAIT_MS)
    # one look at both (a redraw replaces them): each at most a few lines high, whole in its title
    shown = page.evaluate("""(selectors) => selectors.map((selector) => {
        const el = document.querySelector(selector);
        return [el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight), el.title];
    })""", [ask, reason])
    for (lines, title), whole in zip(shown, (question, "\n".join([paragraph] * 20))):
        assert lines <= 4 and title == whole, lines
    assert question in page.locator("#board .post.open .text").inner_text()
    assert page.problems == []


def test_the_tab_names_the_repository_and_counts_who_needs_input(api, repo, server, page):
    """Every dashboard's tab read "git lanes": with two repositories served, or the page in a background tab,
    nothing told them apart, nor that an agent was waiting for an answer until the tab was opened."""
    page.goto(server.url + "/")
    page.wait_for_function(f"() => document.title === '{repo.name} · git lanes'", timeout=WAIT_MS)
    page.wait_for_selector("#live.on", timeout=WAIT_MS)
    asked = run_cli("board", "post", "Size or age?", "--kind", "question", "--agent-id", "coder-2", "--json", cwd=repo)
    assert asked.code == 0, asked.err
    page.wait_for_function(f"() => document.title === '(1) {repo.name} · git lanes'", timeout=WAIT_MS)
    assert page.problems == []


def test_the_filters_say_which_one_is_on_to_assistive_technology(api, repo, server, page):
    """The history filter and the cost unit showed the chosen button only by its colour: read aloud, every
    button was the same, and a keyboard user with a screen reader could not tell which filter was on."""
    page.goto(server.url + "/")
    page.wait_for_selector("#live.on", timeout=WAIT_MS)
    assert page.get_by_role("button", name="all", exact=True, pressed=True).count() == 1
    assert page.get_by_role("button", name="$", exact=True, pressed=True).count() == 1
    page.get_by_role("button", name="rejected", exact=True).focus()
    page.keyboard.press("Enter")
    page.get_by_role("button", name="rejected", exact=True, pressed=True).wait_for(timeout=WAIT_MS)
    assert page.get_by_role("button", name="all", exact=True, pressed=False).count() == 1
    page.get_by_role("button", name="tokens", exact=True).click()
    page.get_by_role("button", name="tokens", exact=True, pressed=True).wait_for(timeout=WAIT_MS)
    assert page.get_by_role("button", name="$", exact=True, pressed=False).count() == 1
    assert page.problems == []


def test_posting_or_answering_nothing_says_so(api, repo, server, page):
    """Post and Answer with an empty box did nothing at all: no post, and no word of why the click was not
    taken, so the person clicked again, or thought the board broken."""
    asked = api.board_post("Size or age?", "coder-2", kind="question")
    page.goto(server.url + f"/?token={server.token}")
    page.wait_for_selector("#auth.pass", timeout=WAIT_MS)
    for box, button in (('[data-key="compose"]', '[data-key="post-button"]'),
                        (f'[data-post="{asked["post"]}"] textarea', f'[data-post="{asked["post"]}"] button.accept')):
        page.locator(box).fill("   ")
        page.evaluate("document.getElementById('toast').hidden = true")
        page.locator(button).click()
        page.wait_for_selector("#toast.error:not([hidden])", timeout=WAIT_MS)
        assert page.locator("#toast").inner_text() == "nothing to send: write the text first"
    assert len(api.board_read(None)["posts"]) == 1
    assert page.problems == []
