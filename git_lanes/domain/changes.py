"""What a ref move means in the domain's words: a lane moved, a proposal appeared or was decided, the
ledger appended ops, a run logged events, transition records changed. Pure: it reads only the names."""

from __future__ import annotations

from git_lanes.model import refs

KINDS = ("lane", "proposal", "rejected", "ledger", "run", "notes", "ref")


def classify(ref: str, trunk: str) -> dict:
    """The kind of change a move of `ref` is, with the name it concerns."""
    if ref == f"refs/heads/{trunk}":
        return {"kind": "lane", "lane": trunk}
    for prefix, kind, key in ((refs.LANE_HEADS, "lane", "lane"), (refs.PROPOSALS, "proposal", "id"),
                              (refs.REJECTED, "rejected", "id"), (refs.RUNS, "run", "run")):
        if ref.startswith(prefix):
            return {"kind": kind, key: ref[len(prefix):]}
    if ref == refs.LEDGER:
        return {"kind": "ledger"}
    if ref == refs.NOTES:
        return {"kind": "notes"}
    return {"kind": "ref"}
