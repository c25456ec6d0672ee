"""File claims (where an agent means to work) and dirty sets (what it actually changed, computed from git).
Both warn and never block: overlaps with other agents are returned and wake those agents.

Globs are repository-relative, '/'-separated: `*`, `?` and `[…]` match within one path segment, `**` matches
any number of segments, and a glob without wildcards claims that path and everything beneath it."""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache

from git_lanes.domain import stored
from git_lanes.domain.agents import Reader, add_wake, touch, validate_agent_id
from git_lanes.errors import UserError, command
from git_lanes.ledger import Op, Tx
from git_lanes.model.globs import MAGIC, glob_matches, segments
from git_lanes.model.names import normalize_repo_path

MAX_GLOBS = 200
MAX_DIRTY = 10_000
# Longer than any path a file system takes (PATH_MAX): such a glob can match nothing, yet it would be
# stored and carried by every read of the claims.
MAX_GLOB_CHARS = 4096


def claims_path(agent: str) -> str:
    return f"claims/{agent}.json"


def dirty_path(agent: str) -> str:
    return f"dirty/{agent}.json"


def validate_glob(glob: object) -> str:
    if not isinstance(glob, str):
        raise UserError(f"a file glob is a string, not {type(glob).__name__} {str(glob)[:100]}", code="invalid_glob")
    if not glob.strip():
        raise UserError("empty file glob", code="invalid_glob")
    if len(glob) > MAX_GLOB_CHARS:
        raise UserError(f"a file glob is {len(glob)} characters; the limit is {MAX_GLOB_CHARS}", code="invalid_glob")
    normal = normalize_repo_path(glob.strip())
    if not normal:
        return "**"
    if normal.split("/")[0] == ".git":
        raise UserError(f"glob {glob!r} points into .git", code="invalid_glob")
    return normal


def validate_globs(globs: object) -> list[str]:
    if not isinstance(globs, list) or len(globs) > MAX_GLOBS:
        raise UserError(f"give between 1 and {MAX_GLOBS} globs", code="invalid_glob")
    return list(dict.fromkeys(validate_glob(g) for g in globs))


def _seg_overlap(x: str, y: str) -> bool:
    """Could one segment match both patterns? Exact with a literal side; conservative between two patterns
    (compatible literal prefixes and suffixes), since a claim overlap is a warning, not a refusal."""
    if not MAGIC & set(x):
        return fnmatchcase(x, y)
    if not MAGIC & set(y):
        return fnmatchcase(y, x)
    px, py = _literal_prefix(x), _literal_prefix(y)
    sx, sy = _literal_prefix(x[::-1]), _literal_prefix(y[::-1])
    return (px.startswith(py) or py.startswith(px)) and (sx.startswith(sy) or sy.startswith(sx))


def _literal_prefix(pattern: str) -> str:
    for i, char in enumerate(pattern):
        if char in MAGIC or char == "]":
            return pattern[:i]
    return pattern


@lru_cache(maxsize=4096)
def globs_overlap(a: str, b: str) -> bool:
    """True when some path could match both globs."""
    sa, sb = segments(a), segments(b)

    @lru_cache(maxsize=None)
    def walk(i: int, j: int) -> bool:
        if i == len(sa) and j == len(sb):
            return True
        if i < len(sa) and sa[i] == "**":
            return walk(i + 1, j) or (j < len(sb) and walk(i, j + 1))
        if j < len(sb) and sb[j] == "**":
            return walk(i, j + 1) or (i < len(sa) and walk(i + 1, j))
        if i == len(sa) or j == len(sb):
            return False
        return _seg_overlap(sa[i], sb[j]) and walk(i + 1, j + 1)

    return walk(0, 0)


def claimed_globs(state: Reader, agent: str, set_aside: stored.SetAside | None = None) -> list[str]:
    """`agent`'s claims. A record that cannot be read is an error (an op must not write over it half read),
    or, given `set_aside`, noted there and read as no claims."""
    record = stored.read_or_set_aside(state, claims_path(agent), set_aside)
    return [c["glob"] for c in (record or {}).get("globs", [])]


def dirty_files(state: Reader, agent: str, set_aside: stored.SetAside | None = None) -> list[str]:
    """`agent`'s dirty files, read as `claimed_globs` reads claims."""
    return list((stored.read_or_set_aside(state, dirty_path(agent), set_aside) or {}).get("files", []))


def _others(state: Reader, directory: str, agent: str) -> list[str]:
    return [n[:-5] for n in state.names(directory) if n.endswith(".json") and n[:-5] != agent]


def add_globs(tx: Tx, op: Op, agent: str, globs: list[str], task: str | None) -> dict:
    """Add `globs` to `agent`'s claims; wake the agents whose claims or dirty files the new ones overlap."""
    record = stored.read(tx, claims_path(agent)) or {"agent": agent, "globs": []}
    held = {c["glob"] for c in record["globs"]}
    added = [g for g in globs if g not in held]
    record["globs"] = record["globs"] + [{"glob": g, "time": op.time, "task": task} for g in added]
    tx.put(claims_path(agent), record)
    overlaps = claim_overlaps(tx, agent, globs)
    _wake_overlapping(tx, op, agent, [o for o in overlaps if o["glob"] in added])
    return {"agent": agent, "claims": [c["glob"] for c in record["globs"]], "added": added,
            "overlaps": overlaps}


def claim_overlaps(state: Reader, agent: str, globs: list[str]) -> list[dict]:
    found = []
    unjudged: stored.SetAside = []  # another agent's record that cannot be read warns of nothing
    for other in _others(state, "claims", agent):
        for theirs in claimed_globs(state, other, unjudged):
            found += [{"agent": other, "glob": g, "claim": theirs} for g in globs if globs_overlap(g, theirs)]
    for other in _others(state, "dirty", agent):
        for path in dirty_files(state, other, unjudged):
            found += [{"agent": other, "glob": g, "file": path} for g in globs if glob_matches(g, path)]
    return found


def _wake_overlapping(tx: Tx, op: Op, agent: str, overlaps: list[dict]) -> None:
    by_agent: dict[str, list[dict]] = {}
    for overlap in overlaps:
        by_agent.setdefault(overlap["agent"], []).append({k: v for k, v in overlap.items() if k != "agent"})
    for other, found in sorted(by_agent.items()):
        add_wake(tx, other, op, "overlap", {"agent": agent, "overlaps": found[:20]})


def claim_add(tx: Tx, op: Op) -> dict:
    agent = validate_agent_id(op.args.get("agent"))
    globs = validate_globs(op.args.get("globs"))
    if not globs:
        raise UserError("give at least one glob", code="invalid_glob")
    touch(tx, agent, op.time)
    return add_globs(tx, op, agent, globs, op.args.get("task"))


def claim_release(tx: Tx, op: Op) -> dict:
    agent = validate_agent_id(op.args.get("agent"))
    wanted = op.args.get("globs")
    record = stored.read(tx, claims_path(agent)) or {"agent": agent, "globs": []}
    if wanted:
        globs = set(validate_globs(wanted))
        unknown = sorted(globs - {c["glob"] for c in record["globs"]})
        if unknown:
            raise UserError(f"{agent} holds no claim on {', '.join(unknown)}", code="unknown_claim",
                            hint=f"release a glob as claimed: see {command('claim list', agent=agent)}")
    else:
        globs = {c["glob"] for c in record["globs"]}
    record["globs"] = [c for c in record["globs"] if c["glob"] not in globs]
    if record["globs"]:
        tx.put(claims_path(agent), record)
    elif tx.get(claims_path(agent)) is not None:
        tx.delete(claims_path(agent))
    return {"agent": agent, "released": sorted(globs), "claims": [c["glob"] for c in record["globs"]]}


def publish_dirty(tx: Tx, op: Op, agent: str, lane: str | None, files: object) -> dict:
    """Record `agent`'s dirty set (computed from git by the caller); report overlaps with other agents'
    claims and dirty files, and the files outside its own claims. Newly dirty overlapping files wake."""
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise UserError("a dirty set is a list of paths", code="invalid_dirty")
    paths = sorted({normalize_repo_path(f) for f in files})
    truncated = len(paths) > MAX_DIRTY
    paths = paths[:MAX_DIRTY]
    before = set(dirty_files(tx, agent))
    if paths:
        tx.put(dirty_path(agent), {"agent": agent, "lane": lane, "files": paths, "time": op.time,
                                   "truncated": truncated})
    elif before or tx.get(dirty_path(agent)) is not None:
        tx.delete(dirty_path(agent))
    overlaps = dirty_overlaps(tx, agent, paths)
    _wake_overlapping(tx, op, agent, [o for o in overlaps if o["file"] not in before])
    mine = claimed_globs(tx, agent)
    unclaimed = [p for p in paths if not any(glob_matches(g, p) for g in mine)]
    return {"agent": agent, "lane": lane, "files": paths, "truncated": truncated, "overlaps": overlaps,
            "unclaimed": unclaimed}


def dirty_overlaps(state: Reader, agent: str, paths: list[str]) -> list[dict]:
    found = []
    unjudged: stored.SetAside = []  # as in claim_overlaps
    for other in _others(state, "claims", agent):
        for theirs in claimed_globs(state, other, unjudged):
            found += [{"agent": other, "file": p, "claim": theirs} for p in paths if glob_matches(theirs, p)]
    wanted = set(paths)
    for other in _others(state, "dirty", agent):
        found += [{"agent": other, "file": p, "dirty": True} for p in dirty_files(state, other, unjudged)
                  if p in wanted]
    return found


def dirty_publish(tx: Tx, op: Op) -> dict:
    agent = validate_agent_id(op.args.get("agent"))
    record = touch(tx, agent, op.time)
    return publish_dirty(tx, op, agent, op.args.get("lane") or record.get("lane"), op.args.get("files"))


def move(tx: Tx, source: str, target: str, task: str, *, everything: bool) -> dict:
    """Hand `target` the claims `source` made for `task` (a handoff), merging with what `target` holds; with
    `everything` (`source` holds no other task), its unattributed claims and its dirty set too."""
    moved: dict = {"claims": [], "dirty": []}
    claims = stored.read(tx, claims_path(source))
    if claims is not None:
        going = [c for c in claims["globs"] if c.get("task") == task or (everything and c.get("task") is None)]
        staying = [c for c in claims["globs"] if c not in going]
        theirs = stored.read(tx, claims_path(target)) or {"agent": target, "globs": []}
        held = {c["glob"] for c in theirs["globs"]}
        theirs["globs"] = theirs["globs"] + [c for c in going if c["glob"] not in held]
        if going:
            tx.put(claims_path(target), theirs)
            if staying:
                tx.put(claims_path(source), {**claims, "globs": staying})
            else:
                tx.delete(claims_path(source))
        moved["claims"] = [c["glob"] for c in going]
    dirty = stored.read(tx, dirty_path(source)) if everything else None
    if dirty is not None:
        theirs = stored.read(tx, dirty_path(target)) or {**dirty, "agent": target, "files": []}
        theirs["files"] = sorted(set(theirs["files"]) | set(dirty["files"]))
        tx.put(dirty_path(target), theirs)
        tx.delete(dirty_path(source))
        moved["dirty"] = dirty["files"]
    return moved


def list_claims(state: Reader, set_aside: stored.SetAside | None = None) -> list[dict]:
    """Every agent's claims; an agent's record that cannot be read is left out (noted in `set_aside`)."""
    rows = []
    for name in state.names("claims"):
        record = stored.read_or_set_aside(state, f"claims/{name}", [] if set_aside is None else set_aside) or {}
        rows += [{"agent": record.get("agent"), **c} for c in record.get("globs", [])]
    return rows


def list_dirty(state: Reader, set_aside: stored.SetAside | None = None) -> list[dict]:
    """Every dirty set that can be read (the others noted in `set_aside`)."""
    found = (stored.read_or_set_aside(state, f"dirty/{name}", [] if set_aside is None else set_aside)
             for name in state.names("dirty"))
    return [record for record in found if record is not None]
