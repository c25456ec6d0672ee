"""Ports reserved per lane in the ledger (`ports/<lane>.json`, the name flattened as in deletion markers), so
no two live lanes share one: a reservation picks the lowest ports of the range that no other lane holds, decided
inside the ledger's append, so two lanes created at once get disjoint ports. Deleting a lane releases them; a
reservation also drops the records of lanes the caller found gone (deleted elsewhere, or by a killed process)."""

from __future__ import annotations

from git_lanes.domain.agents import Reader
from git_lanes.errors import Conflict, UserError
from git_lanes.ledger import Op, Tx
from git_lanes.model.lane_setup import MAX_PORTS
from git_lanes.model.names import validate_lane_name
from git_lanes.model.refs import flat_name

DIRECTORY = "ports"


def ports_path(lane: str) -> str:
    return f"{DIRECTORY}/{flat_name(lane)}.json"


def held(state: Reader) -> dict[str, tuple[int, ...]]:
    """Every lane's ports."""
    found = {}
    for name in state.names(DIRECTORY):
        record = state.get(f"{DIRECTORY}/{name}") or {}
        if isinstance(record.get("lane"), str):
            found[record["lane"]] = tuple(int(p) for p in record.get("ports") or ())
    return found


def ports_of(state: Reader, lane: str) -> tuple[int, ...]:
    record = state.get(ports_path(lane)) or {}
    return tuple(int(p) for p in record.get("ports") or ())


def reserve(tx: Tx, op: Op) -> dict:
    """args: lane, count, range [low, high], gone (lanes whose reservations lapse now)."""
    lane = validate_lane_name(op.args.get("lane"))
    count = op.args.get("count")
    low, high = _range(op.args.get("range"))
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_PORTS:
        raise UserError(f"a lane reserves 0 to {MAX_PORTS} ports", code="invalid_ports")
    lapsed = []
    for other in op.args.get("gone") or []:
        if other != lane and tx.get(ports_path(other)) is not None:
            tx.delete(ports_path(other))
            lapsed.append(other)
    mine = [p for p in ports_of(tx, lane) if low <= p <= high][:count]
    taken = {p for other, ports in held(tx).items() if other != lane for p in ports}
    free = (p for p in range(low, high + 1) if p not in taken and p not in mine)
    while len(mine) < count:
        port = next(free, None)
        if port is None:
            raise Conflict(f"no {count} free ports left in {low}-{high} for lane {lane!r}", code="ports_exhausted",
                           hint="delete lanes you no longer need, or widen [setup] port_range on the trunk")
        mine.append(port)
    if mine:
        tx.put(ports_path(lane), {"lane": lane, "ports": mine, "time": op.time, "actor": op.actor})
    elif tx.get(ports_path(lane)) is not None:
        tx.delete(ports_path(lane))
    return {"lane": lane, "ports": mine, "lapsed": lapsed}


def release(tx: Tx, op: Op) -> dict:
    lane = validate_lane_name(op.args.get("lane"))
    ports = list(ports_of(tx, lane))
    if tx.get(ports_path(lane)) is not None:
        tx.delete(ports_path(lane))
    return {"lane": lane, "released": ports}


def _range(value: object) -> tuple[int, int]:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                           for v in value) and 0 < value[0] <= value[1] <= 65535:
        return value[0], value[1]
    raise UserError(f"invalid port range {value!r}", code="invalid_ports")
