"""Ports reserved per lane in the ledger (`ports/<lane>.json`, the name flattened as in deletion markers), so
no two live lanes share one: a reservation picks the lowest ports of the range that no other lane holds, decided
inside the ledger's append, so two lanes created at once get disjoint ports. Deleting a lane releases them; a
reservation also drops the records of lanes the caller found gone (deleted elsewhere, or by a killed process)."""

from __future__ import annotations

from git_lanes.domain.agents import Reader
from git_lanes.errors import Conflict, MalformedRecord, UserError
from git_lanes.ledger import Op, Tx
from git_lanes.ledger.state import MALFORMED_HINT
from git_lanes.model.lane_setup import MAX_PORTS, PortsHeld
from git_lanes.model.names import validate_lane_name
from git_lanes.model.refs import flat_name

DIRECTORY = "ports"


def ports_path(lane: str) -> str:
    return f"{DIRECTORY}/{flat_name(lane)}.json"


def held(state: Reader, besides: str | None = None) -> dict[str, tuple[int, ...]]:
    """Every lane's ports (but lane `besides`'s). A record a peer wrote in another shape is a MalformedRecord
    naming it: which ports it holds is unknown, so no reservation is decided around it."""
    found = {}
    for name in state.names(DIRECTORY):
        path = f"{DIRECTORY}/{name}"
        if besides is not None and path == ports_path(besides):
            continue
        reservation = _read(state, path)
        if reservation is not None:
            found[reservation.lane] = reservation.ports
    return found


def ports_of(state: Reader, lane: str) -> tuple[int, ...]:
    reservation = _read(state, ports_path(lane))
    return () if reservation is None else reservation.ports


def reserved(state: Reader, lane: str) -> bool:
    """Whether the ledger holds a record of `lane`'s ports, whatever its shape (to release it, or replace it)."""
    return ports_path(lane)[len(DIRECTORY) + 1:] in state.names(DIRECTORY)


def _own(tx: Tx, lane: str) -> tuple[int, ...]:
    """The ports of the lane being reserved for or released: a record of its own in another shape is
    replaced or removed, as a reservation or a release would do to a good one."""
    try:
        return ports_of(tx, lane)
    except MalformedRecord:
        return ()


def _read(state: Reader, path: str) -> PortsHeld | None:
    record = state.get(path)
    return None if record is None else PortsHeld.decode(record, f"ledger record {path}", MALFORMED_HINT)


def reserve(tx: Tx, op: Op) -> dict:
    """args: lane, count, range [low, high], gone (lanes whose reservations lapse now)."""
    lane = validate_lane_name(op.args.get("lane"))
    count = op.args.get("count")
    low, high = _range(op.args.get("range"))
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_PORTS:
        raise UserError(f"a lane reserves 0 to {MAX_PORTS} ports", code="invalid_ports")
    lapsed = []
    for other in op.args.get("gone") or []:
        if other != lane and reserved(tx, other):
            tx.delete(ports_path(other))
            lapsed.append(other)
    mine = [p for p in _own(tx, lane) if low <= p <= high][:count]
    taken = {p for other, ports in held(tx, besides=lane).items() if other != lane for p in ports}
    free = (p for p in range(low, high + 1) if p not in taken and p not in mine)
    while len(mine) < count:
        port = next(free, None)
        if port is None:
            raise Conflict(f"no {count} free ports left in {low}-{high} for lane {lane!r}", code="ports_exhausted",
                           hint="delete lanes you no longer need, or widen [setup] port_range on the trunk")
        mine.append(port)
    if mine:
        tx.put(ports_path(lane), {"lane": lane, "ports": mine, "time": op.time, "actor": op.actor})
    elif reserved(tx, lane):
        tx.delete(ports_path(lane))
    return {"lane": lane, "ports": mine, "lapsed": lapsed}


def release(tx: Tx, op: Op) -> dict:
    lane = validate_lane_name(op.args.get("lane"))
    ports = list(_own(tx, lane))
    if reserved(tx, lane):
        tx.delete(ports_path(lane))
    return {"lane": lane, "released": ports}


def _range(value: object) -> tuple[int, int]:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                           for v in value) and 0 < value[0] <= value[1] <= 65535:
        return value[0], value[1]
    raise UserError(f"invalid port range {value!r}", code="invalid_ports")
