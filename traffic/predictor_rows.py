"""The predictor's connection rows: each connection's links under its route, as one row of
link indices (padded with a dummy link of infinite capacity), and the rows as routes change.

Pure code (numpy). A route is a spine's name or a switch path (Fabric.switch_paths); under
per-packet spraying a row holds every link of the leaf pair's live shortest paths, with
weights.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from testbed.fabric import Fabric, build_fabric
from traffic.collectives import JobPlan, unique_connections
from traffic.connections import RowIndex, conn_table
from traffic.prediction import PredictorError


UNROUTED = -1   # link index of a connection that crosses leaves but has no spine (yet)


def path_width(fabric: Fabric) -> int:
    """Link slots per connection row: the longest host-to-host path's links (shorter paths
    are padded with a dummy link of infinite capacity), and with NVLink two more (a PXN
    relay's hop into and out of its server's NVLink switch, just before the last slot)."""
    return fabric.max_path_links + (2 if fabric.spec.has_nvlink else 0)


def _nvlink(fabric: Fabric, table: np.ndarray, conns: list, pad: int,
            ends: tuple[np.ndarray, np.ndarray] | None = None,
            via: np.ndarray | None = None) -> np.ndarray:
    """Put each row's NVLink hops in `table` (rows in `conns` order): a transfer between two
    GPUs of one server crosses only NVLink (its GPU's link in and the peer's link out), a
    PXN relay adds the sending GPU's hop to the relaying one. `ends`: each row's source and
    destination as indices in fabric.hosts, and `via` each row's PXN relay source (-1: none),
    when the caller has them. Returns the
    intra-server rows (no route: they never reach the fabric)."""
    n = len(table)
    if not fabric.nvlink_ends:
        return np.zeros(n, dtype=bool)
    server, up, down, index = _nvlink_arrays(fabric)
    conns = conns[:n]
    if ends is None:
        ends = (np.array([index[c.src] for c in conns], np.int64).reshape(n),
                np.array([index[c.dst] for c in conns], np.int64).reshape(n))
    src, dst = ends
    if via is None:
        get = index.get
        via = np.array([get(c.nvlink_from, -1) for c in conns], np.int64).reshape(n)
    intra = (server[src] == server[dst]) & (src != dst)
    table[intra] = pad
    table[intra, 0], table[intra, -1] = up[src[intra]], down[dst[intra]]
    relayed = ~intra & (via >= 0)
    table[relayed, -3], table[relayed, -2] = up[via[relayed]], down[src[relayed]]
    return intra


def _nvlink_arrays(fabric: Fabric) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Per host (fabric.hosts order): its server, its NVLink link in and out; host -> index."""
    key = ("nvlink-arrays",)
    cache = fabric._path_cache
    if key not in cache:
        index = {h: i for i, h in enumerate(fabric.hosts)}
        ends = fabric.nvlink_ends
        cache[key] = (np.array([fabric.server_of[h] for h in fabric.hosts], np.int64),
                      np.array([ends[h][0] for h in fabric.hosts], np.int64),
                      np.array([ends[h][1] for h in fabric.hosts], np.int64), index)
    return cache[key]


def conn_links(fabric: Fabric, plans: list[JobPlan], spine_of: dict[int, str | None] | None,
               nonblocking: bool, allow_unrouted: bool = False
               ) -> tuple[np.ndarray, Mapping[int, int]]:
    """(C, path_width) link indices per connection (pad = len(fabric.links)) and conn_id -> row.
    allow_unrouted: an inter-leaf connection without a route gets UNROUTED instead of an error
    (a router gives it one when its job starts). Each row is `conn_row`'s, built from the
    connections' columns (traffic/connections.py) per distinct (leaf pair, route) rather than
    per connection, routes read only for the rows that cross leaves; the first bad connection
    in row order raises `conn_row`'s error."""
    width, pad = path_width(fabric), len(fabric.links)
    conns = unique_connections(plans)
    if fabric.planes > 1:
        return _plane_links(fabric, conns, spine_of or {}, nonblocking, allow_unrouted)
    _, per_host = fabric.host_ends
    routes = spine_of or {}
    cols = conn_table(fabric, plans, conns)
    row_of = RowIndex(cols.ids)
    n = dup = len(cols)
    if not row_of.dense and len(row_of._dict) < n:   # the first id seen before: its row
        seen: set[int] = set()
        dup = next(r for r, i in enumerate(cols.ids.tolist()) if i in seen or seen.add(i))
        row_of = RowIndex(cols.ids[:dup])
    ends = (cols.src[:dup], cols.dst[:dup])          # host index of src, dst (-1: unknown)
    hosts = np.array(per_host + [(-1, 0, 0)], dtype=np.int64).reshape(-1, 3)  # [-1]: unknown
    src, dst = hosts[ends[0]], hosts[ends[1]]
    table = np.full((dup, width), pad, dtype=np.int64)
    table[:, 0], table[:, -1] = src[:, 1], dst[:, 2]
    bad = (ends[0] < 0) | (ends[1] < 0)
    intra = (_nvlink(fabric, table, conns, pad, ends, cols.via[:dup]) if not bad.any()
             else np.zeros(dup, bool))
    cross = ~bad & (src[:, 0] != dst[:, 0]) & (not nonblocking) & ~intra
    if cross.any():
        route_of: dict = {None: 0}                   # each row's route as route_of's index
        code = np.zeros(dup, np.int64)
        rows = np.flatnonzero(cross)
        if routes:
            code[rows] = [route_of.setdefault(routes.get(i), len(route_of))
                          for i in cols.ids[rows].tolist()]
        bad |= _route_middles(fabric, table, cross, src[:, 0], dst[:, 0], code,
                              list(route_of), allow_unrouted)
    if bad.any():
        r = int(np.argmax(bad))
        conn_row(fabric, conns[r], routes.get(conns[r].conn_id), width, nonblocking,
                  allow_unrouted)
        raise AssertionError(f"row {r} is bad but conn_row built it")  # pragma: no cover
    if dup < n:
        raise PredictorError(f"connection id {conns[dup].conn_id} appears twice")
    return table, row_of


def _plane_links(fabric: Fabric, conns: list, routes: dict, nonblocking: bool,
                 allow_unrouted: bool) -> tuple[np.ndarray, dict[int, int]]:
    """conn_links on several planes: row by row (each route's first switch names its plane,
    and with it the host ports the row starts and ends on)."""
    width = path_width(fabric)
    row_of: dict[int, int] = {}
    rows = []
    for r, c in enumerate(conns):
        if c.conn_id in row_of:
            raise PredictorError(f"connection id {c.conn_id} appears twice")
        row_of[c.conn_id] = r
        rows.append(conn_row(fabric, c, routes.get(c.conn_id), width, nonblocking,
                             allow_unrouted))
    return np.array(rows, dtype=np.int64).reshape(len(rows), width), row_of


def _route_middles(fabric: Fabric, table: np.ndarray, cross: np.ndarray, a: np.ndarray,
                   b: np.ndarray, code: np.ndarray, route: list, allow_unrouted: bool
                   ) -> np.ndarray:
    """Fill the switch links of the rows `cross` (leaves a != b; route[code] a spine's name, a
    switch path or None) into table; return the rows whose route is failed, unknown or
    missing (missing: only unless allow_unrouted)."""
    width, pad = fabric.max_path_links, len(fabric.links)
    leaves, n_leaves, n_routes = fabric.leaves, len(fabric.leaves), len(route)
    rows = np.flatnonzero(cross)
    uniq, inv = np.unique((a[rows] * n_leaves + b[rows]) * n_routes + code[rows],
                          return_inverse=True)
    middle = np.full((len(uniq), width - 2), pad, dtype=np.int64)
    ok = np.ones(len(uniq), dtype=bool)
    for k, key in enumerate(uniq.tolist()):
        pair, ic = divmod(key, n_routes)
        s, la, lb = route[ic], leaves[pair // n_leaves], leaves[pair % n_leaves]
        if s is None:
            middle[k], ok[k] = UNROUTED, allow_unrouted
            continue
        path = (la, s, lb) if isinstance(s, str) else tuple(s)
        ids = fabric.route_links(path) if path[0] == la and path[-1] == lb else None
        if ids is None:
            ok[k] = False
        else:
            middle[k, :len(ids)] = ids
    table[rows, 1:width - 1] = middle[inv.reshape(-1)]
    bad = np.zeros(len(table), dtype=bool)
    bad[rows] = ~ok[inv.reshape(-1)]
    return bad


def conn_row(fabric: Fabric, c, s: str | tuple | None, width: int, nonblocking: bool,
             allow_unrouted: bool) -> list[int]:
    """Connection c's link indices when routed via s (a spine's name, a switch path, or
    None): conn_links's row."""
    if not fabric.nvlink_ends:
        return _fabric_row(fabric, c, s, width, nonblocking, allow_unrouted)
    pad = len(fabric.links)
    row = np.full((1, width), pad, dtype=np.int64)
    if not fabric.same_server(c.src, c.dst):
        base = _fabric_row(fabric, c, s, width - 2, nonblocking, allow_unrouted)
        row[0, :-3], row[0, -1] = base[:-1], base[-1]
    _nvlink(fabric, row, [c], pad)
    return row[0].tolist()


def _fabric_row(fabric: Fabric, c, s: str | tuple | None, width: int, nonblocking: bool,
                allow_unrouted: bool) -> list[int]:
    """conn_row's links in the fabric: host link, switch path, host link."""
    li = fabric.link_index
    try:
        a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
    except KeyError as e:
        raise PredictorError(f"jobs.{c.job}: host {e} is not in the fabric") from None
    if fabric.planes > 1 and s and not isinstance(s, str) and s[0] in fabric.graph:
        plane = fabric.plane_of(s[0])        # the route's plane: its host ports
        a, b = fabric.leaf_at(c.src, plane), fabric.leaf_at(c.dst, plane)
    ends, pad = (li[(c.src, a)], li[(b, c.dst)]), len(fabric.links)
    if nonblocking or a == b:
        return [ends[0], *[pad] * (width - 2), ends[1]]
    if s is None:
        if allow_unrouted:
            return [ends[0], *[UNROUTED] * (width - 2), ends[1]]
        raise PredictorError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}) crosses "
                             f"{a}->{b} but has no route")
    path = (a, s, b) if isinstance(s, str) else tuple(s)
    ids = fabric.route_links(path) if path[0] == a and path[-1] == b else None
    if ids is None:
        raise PredictorError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}) is routed "
                             f"via {'/'.join(path[1:-1]) or s}, which is failed or unknown "
                             f"between {a} and {b}")
    return [ends[0], *ids, *[pad] * (width - 2 - len(ids)), ends[1]]


def spray_links(fabric: Fabric, plans: list[JobPlan], width: int, fabric_paths: bool = True
                ) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """Per-packet spraying: each connection's host links (weight 1) and every link of its leaf
    pair's live shortest paths, weighted by the share of those paths crossing it
    (Fabric.spray_shares); (C, width) link indices, their weights, conn_id -> row."""
    pad = len(fabric.links)
    conns = unique_connections(plans)
    table = np.full((len(conns), width), pad, dtype=np.int64)
    weights = np.ones((len(conns), width))
    li = fabric.link_index
    row_of: dict[int, int] = {}
    if fabric.planes > 1:
        return _spray_planes(fabric, conns, table, weights, fabric_paths)
    for r, c in enumerate(conns):
        row_of[c.conn_id] = r
        a, b = fabric.leaf_of(c.src), fabric.leaf_of(c.dst)
        table[r, 0], table[r, width - 1] = li[(c.src, a)], li[(b, c.dst)]
        if a == b or fabric.same_server(c.src, c.dst):
            continue
        shares = fabric.spray_shares(a, b)
        if not shares:
            raise PredictorError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}): no live "
                                 f"path between {a} and {b} to spray over")
        for k, (i, w) in enumerate(shares):
            table[r, 1 + k], weights[r, 1 + k] = i, w
    _nvlink(fabric, table, conns, pad)
    return table, weights, row_of


def _spray_planes(fabric: Fabric, conns: list, table: np.ndarray, weights: np.ndarray,
                  fabric_paths: bool) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """spray_links on P planes: packets spread evenly over the NIC's ports, so each row has
    every plane's host links and spray shares, each at 1/P (plane 1's host links in the first
    and last slots). fabric_paths False: the host links alone (the ideal: only NICs limit)."""
    li, P, pad = fabric.link_index, fabric.planes, len(fabric.links)
    row_of: dict[int, int] = {}
    for r, c in enumerate(conns):
        row_of[c.conn_id] = r
        slots: list[tuple[int, float]] = []
        for p in range(1, P + 1):
            a, b = fabric.leaf_at(c.src, p), fabric.leaf_at(c.dst, p)
            if p == 1:
                table[r, 0], table[r, -1] = li[(c.src, a)], li[(b, c.dst)]
                weights[r, 0] = weights[r, -1] = 1 / P
            else:
                slots += [(li[(c.src, a)], 1 / P), (li[(b, c.dst)], 1 / P)]
            if fabric_paths and a != b and not fabric.same_server(c.src, c.dst):
                shares = fabric.spray_shares(a, b)
                if not shares:
                    raise PredictorError(f"flow {c.job}:{c.src}->{c.dst} (conn {c.conn_id}): "
                                         f"no live path between {a} and {b} to spray over")
                slots += [(i, w / P) for i, w in shares]
        for k, (i, w) in enumerate(slots):
            table[r, 1 + k], weights[r, 1 + k] = i, w
    intra = _nvlink(fabric, table, conns, pad)
    weights[intra] = 1.0
    return table, weights, row_of


def spray_width(fabric: Fabric, plans: list[JobPlan]) -> int:
    """Link slots per connection row under per-packet spraying: its two host links and the
    links of every shortest path of its leaf pair with nothing failed (so that repairs fit)."""
    whole = build_fabric(fabric.spec.with_failures((), ()))
    pairs = {(fabric.leaf_of(c.src), fabric.leaf_of(c.dst)) for c in unique_connections(plans)
             if not fabric.same_server(c.src, c.dst)}
    P = fabric.planes          # every plane's host links and shares (testbed/planes.py)
    return (2 * P + P * max((len(whole.spray_shares(a, b)) for a, b in pairs if a != b),
                            default=0) + (2 if fabric.spec.has_nvlink else 0))


class ConnRows:
    """Every connection's row (in `unique_connections` order) under the latest routes and
    fabric: `table` (C, width) link indices, `weights` under spraying (else None), and the
    conn_id <-> row maps. `reroute` follows the router's new routes or fabric."""

    def __init__(self, fabric: Fabric, plans: list[JobPlan],
                 spine_of: dict[int, str | None] | None, nonblocking: bool, spray: bool,
                 routed_later: bool):
        """routed_later: a router gives routes as jobs start (rows may be UNROUTED)."""
        self.fabric, self.plans = fabric, plans
        self.nonblocking, self.spray = nonblocking, spray
        self.links = list(fabric.links)
        self.width = spray_width(fabric, plans) if spray else path_width(fabric)
        self.weights: np.ndarray | None = None        # per-packet spraying's link shares
        if spray:
            self.table, self.weights, row_of = spray_links(fabric, plans, self.width,
                                                           fabric_paths=not nonblocking)
        else:
            self.table, row_of = conn_links(fabric, plans, spine_of, nonblocking,
                                            allow_unrouted=routed_later)
        self.row_of = row_of
        self.conn_of_row = (row_of.ids if isinstance(row_of, RowIndex) else
                            np.array(sorted(row_of, key=row_of.get), dtype=np.int64))
        self.conns = unique_connections(plans)          # by row
        self.unrouted = bool((self.table == UNROUTED).any())   # some row has no route
        self.last_routes: dict | None = None            # the router's latest routes
        self.n_reroutes = 0

    def reroute(self, spines: dict[int, str | None], new_fabric: Fabric) -> bool:
        """The router's new routes on new_fabric; False when nothing moved."""
        self.n_reroutes += 1
        if new_fabric is self.fabric and (spines is self.last_routes
                                          or spines == self.last_routes):
            return False                  # nothing moved (ECMP's one hash: the same object)
        if list(new_fabric.links) != self.links:
            raise PredictorError("a router's fabric must have the same links as the original")
        old, self.last_routes = self.last_routes, spines
        same_fabric, self.fabric = new_fabric is self.fabric, new_fabric
        if self.spray:                     # the live paths of the new fabric, whatever routes
            self.table, self.weights, _ = spray_links(new_fabric, self.plans, self.width)
        elif same_fabric and old is not None:
            self._moved_rows(old, spines)
        else:
            self.table, _ = conn_links(new_fabric, self.plans, spines, self.nonblocking,
                                       allow_unrouted=True)
        self.unrouted = bool((self.table == UNROUTED).any())
        return True

    def _moved_rows(self, old: dict, new: dict) -> None:
        """On the same fabric, only the connections whose route changed get a new row (in
        row order, so that a bad route is named as conn_links would name it)."""
        row_of = self.row_of
        moved = sorted((row_of[c] for c in old.keys() | new.keys()
                        if c in row_of and old.get(c) != new.get(c)))
        for r in moved:
            c = self.conns[r]
            self.table[r] = conn_row(self.fabric, c, new.get(c.conn_id), self.width,
                                     self.nonblocking, True)
