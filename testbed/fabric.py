"""The fabric model: one directed graph (testbed/graph.py) that routing, prediction and
emulation share.

Pure data: no mininet, no root. Every topology kind (testbed/topologies/, one module each)
builds its graph on a Topo, as Mininet's Topo.build does, from one of two Clos shapes
(testbed/topologies/tiers.py draws both, with their ports):

    two tiers                          three tiers
        spine1 .. spineS                   core1 .. coreC | core(C+1) .. | ...   planes
        leaf1 .. leafL                     agg1 .. aggA   | agg(A+1) ..  | ...   pods
        H hosts per leaf                   leaf1 .. leafP | leaf(P+1) .. | ...
                                           H hosts per leaf

then the layers every kind shares: NIC planes (testbed/planes.py), failures, and the servers'
NVLink switches (testbed/servers.py). Hosts are numbered leaf by leaf (h1..hH on leaf1), or
by rail-optimized server by server (NIC r of server s on the group's r-th leaf).

Names are fixed patterns: hosts h1.., leaves leaf1.. pod by pod, agg1.. pod by pod, core1..
plane by plane, spine1... Every link is two directed edges with their own capacity; a failed
switch or link stays in the graph with `live` False, and routing uses only the live, shortest
up-down (valley-free) paths between two leaves (`switch_paths`). What routing needs from the
structure is a property here, read from the built graph (never from the kind): `choice_points`
(the switches on a path that choose, and how many ways), `max_path_links`, `upper_switches`,
`leaf_groups`, `hosts_on`, `servers`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from itertools import repeat
from operator import and_, eq, ne

from .graph import DiGraph
from .planes import PLANE_KEY, plane_spec, renamed
from .servers import ServerMap
from .topo import MAX_HOSTS, MAX_HOSTS_PER_LEAF, host_ip  # noqa: F401 (theirs)
from .topologies import build_graph
from .fabric_spec import (DPID_PREFIX, TIER, FabricError, FabricSpec,  # noqa: F401 (theirs)
                          link_key)


@dataclass(frozen=True)
class Fabric:
    """A built fabric; `graph` is a DiGraph (testbed/graph.py: networkx's interface,
    `graph.to_networkx()` for its algorithms) with one edge per direction.

    Node attributes: role ('host'|'leaf'|'spine'|'agg'|'core'), index (1-based within the
    role), pod (clos3: leaves, aggs, hosts), plane (aggs, cores), and for hosts leaf, slot, ip.
    Edge attributes: capacity_mbps, port (egress OpenFlow port on the edge's source switch, or
    0 for a host's own NIC), live (False when the element is failed).
    """

    spec: FabricSpec
    graph: DiGraph = field(compare=False, repr=False)

    # -- names -----------------------------------------------------------------------------
    def _role(self, role: str) -> list[str]:
        return [n for n, d in self.graph.nodes(data=True) if d["role"] == role]

    def _plane_1(self, role: str) -> list[str]:
        return [n for n, d in self.graph.nodes(data=True)
                if d["role"] == role and not d.get(PLANE_KEY)]

    @cached_property
    def hosts(self) -> list[str]:
        return [f"h{i}" for i in range(1, self.graph.graph["hosts"] + 1)]

    @cached_property
    def leaves(self) -> list[str]:
        """The leaves (of plane 1), in index order."""
        return self._plane_1("leaf")

    @cached_property
    def spines(self) -> list[str]:
        """The spines of a two-tier fabric (of plane 1; none in a three-tier one)."""
        return self._plane_1("spine")

    @cached_property
    def aggs(self) -> list[str]:
        """The aggs (of plane 1), pod by pod."""
        return self._plane_1("agg")

    @cached_property
    def cores(self) -> list[str]:
        """The cores (of plane 1), core plane by core plane."""
        return self._plane_1("core")

    @cached_property
    def switches(self) -> list[str]:
        """Every switch, tier by tier from the leaves up, then the other planes' leaves and
        spines, then the servers' NVLink switches."""
        return (self.leaves + self.aggs + self.cores + self.spines + self.plane_switches
                + self.nvswitches)

    @cached_property
    def plane_switches(self) -> list[str]:
        """The switches of planes 2.. (testbed/planes.py), plane by plane; `leaves`,
        `spines`, `aggs` and `cores` hold plane 1's, where the hosts' first ports are."""
        return [n for n, p in self.graph.nodes(data=PLANE_KEY) if p]

    # -- planes (testbed/planes.py) ---------------------------------------------------------
    @property
    def planes(self) -> int:
        return self.spec.planes

    def leaf_at(self, host: str, plane: int) -> str:
        """The leaf of `host`'s port on `plane` (1-based)."""
        leaf = self.leaf_of(host)
        return leaf if plane == 1 else renamed(self.spec, leaf, plane)

    def live_planes(self, src_host: str, dst_host: str) -> list[int]:
        """The planes (1-based) with a live path between two hosts' ports, in order (every
        plane for two hosts on one leaf)."""
        return [p for p in range(1, self.planes + 1)
                if self.has_live_path(self.leaf_at(src_host, p), self.leaf_at(dst_host, p))]

    def plane_of(self, switch: str) -> int:
        """The plane (1-based) of a switch; 1 without planes."""
        return self.graph.nodes[switch].get(PLANE_KEY) or 1

    def in_plane(self, path: tuple[str, ...], plane: int) -> tuple[str, ...]:
        """A switch path (named in any plane) as the same path in `plane`."""
        if self.planes == 1:
            return path
        return tuple(renamed(self.spec, s, plane) for s in path)

    def plane_fabric(self, plane: int) -> "Fabric":
        """Plane `plane` alone, as a one-plane fabric named as plane 1 (its own failures):
        what the flows in it are routed on (cached)."""
        key = ("plane", plane)
        cache = self._path_cache
        if key not in cache:
            cache[key] = self if self.planes == 1 else build_fabric(plane_spec(self.spec,
                                                                               plane))
        return cache[key]

    @cached_property
    def nvswitches(self) -> list[str]:
        """The servers' NVLink switches (nvs1.., testbed/servers.py); none without NVLink."""
        return self._role("nvswitch")

    @property
    def tiers(self) -> int:
        """2 (leaves under spines) or 3 (pods under planes of cores), as the kind built it."""
        return self.graph.graph["tiers"]

    @property
    def kind(self) -> str:
        return self.spec.topology

    @cached_property
    def live_spines(self) -> list[str]:
        failed = set(self.spec.failed)
        return [s for s in self.spines if s not in failed]

    def role(self, node: str) -> str:
        return self.graph.nodes[node]["role"]

    def is_switch(self, node: str) -> bool:
        return node in self.graph and self.role(node) != "host"

    def leaf_of(self, host: str) -> str:
        return self._leaf_of[host]

    def leaves_of(self, hosts: Iterable[str]) -> Iterator[str]:
        """leaf_of of each host, lazily (one C-level map: 65,536 hosts in a few ms)."""
        return map(self._leaf_of.__getitem__, hosts)

    @cached_property
    def _leaf_of(self) -> dict[str, str]:
        return {n: leaf for n, leaf in self.graph.nodes(data="leaf") if leaf}

    def pod_of(self, node: str) -> int | None:
        """The pod of a host, leaf or agg (None in leaf-spine and for cores)."""
        return self.graph.nodes[node].get("pod")

    def ip_of(self, host: str) -> str:
        return self.graph.nodes[host]["ip"]

    def index_of(self, node: str) -> int:
        return self.graph.nodes[node]["index"]

    def dpid_of(self, switch: str) -> str:
        """16-hex-digit datapath id: role prefix (leaf 01, spine 02, agg 03, core 04), then the
        switch's index within its role (never derived from names)."""
        return f"{DPID_PREFIX[self.role(switch)]:02x}{self.index_of(switch):014x}"

    def port(self, src: str, dst: str) -> int:
        """OpenFlow port on switch `src` that leads to neighbour `dst`."""
        return self.graph.edges[src, dst]["port"]

    def intf(self, node: str, nbr: str) -> str:
        """Name of `node`'s interface towards `nbr`: <switch>-eth<port>, <host>-eth0."""
        return f"{node}-eth{self.port(node, nbr)}"

    @cached_property
    def switch_ports(self) -> list[tuple[str, str]]:
        """(switch, neighbour) for every switch port, in link order."""
        return [(u, v) for u, v in self.links if self.role(u) != "host"]

    @cached_property
    def switch_interfaces(self) -> list[str]:
        """Every switch port's interface (root namespace), in link order."""
        return [self.intf(u, v) for u, v in self.switch_ports]

    def leaf_prefix(self, leaf: str) -> str:
        """The /24 that holds every host of `leaf` (see host_ip)."""
        i = self.index_of(leaf)
        return f"10.{i >> 8}.{i & 255}.0/24"

    # -- liveness and paths ----------------------------------------------------------------
    def live_links(self, links: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """The live ones of `links` (each one of the fabric's: is_live of each, in one set
        difference)."""
        return set(links) - self._dead

    def is_live(self, u: str, v: str) -> bool:
        if (u, v) in self._dead:
            return False
        self._lid[u][v]          # (a KeyError for a link the fabric does not have)
        return True

    @cached_property
    def _dead(self) -> frozenset[tuple[str, str]]:
        """The failed directed links (a failed switch's included)."""
        return frozenset((u, v) for u, v, live in self.graph.edges(data="live") if not live)

    @cached_property
    def _lid(self) -> dict[str, dict[str, int]]:
        """u -> v -> index of link (u, v) in `links`."""
        out: dict[str, dict[str, int]] = {n: {} for n in self.graph}
        for i, (u, v) in enumerate(self.links):
            out[u][v] = i
        return out

    @cached_property
    def _ups(self) -> dict[str, list[str]]:
        return {n: d.get("up", []) for n, d in self.graph.nodes(data=True)}

    @staticmethod
    def link_key(u: str, v: str) -> tuple[str, str]:
        return link_key(u, v)

    # -- structure: what routing, the predictor and the split need ---------------------------
    @property
    def choice_points(self) -> tuple[tuple[str, int], ...]:
        """(role, ways) of each switch on an inter-leaf path that chooses the next hop, from
        the source leaf up: two tiers (("leaf", spines),); three (("leaf", aggs per pod),
        ("agg", cores per plane)). A path is fixed by one index per choice point."""
        return self.graph.graph["choice_points"]

    @property
    def max_path_links(self) -> int:
        """Links of the longest host-to-host path: 2 per choice point and the 2 host links."""
        return 2 * len(self.choice_points) + 2

    @cached_property
    def upper_switches(self) -> list[str]:
        """Every switch above the leaves, tier by tier (spines; or aggs, then cores)."""
        return self.spines + self.aggs + self.cores

    @cached_property
    def top_switches(self) -> list[str]:
        """The top tier: spines, or cores."""
        return self.cores + self.spines

    @property
    def has_pods(self) -> bool:
        """Leaves grouped in pods under aggs (and every leaf reaches others through them)."""
        return self.tiers == 3

    @cached_property
    def leaf_groups(self) -> list[list[str]]:
        """The leaves of each pod, pod by pod; without pods every leaf alone."""
        if not self.has_pods:
            return [[leaf] for leaf in self.leaves]
        pods: dict[int, list[str]] = {}
        for leaf in self.leaves:
            pods.setdefault(self.pod_of(leaf), []).append(leaf)
        return list(pods.values())

    def hosts_on(self, leaf: str) -> list[str]:
        """The hosts of `leaf`, by slot."""
        return self._hosts_on[leaf]

    @cached_property
    def _hosts_on(self) -> dict[str, list[str]]:
        out: dict[str, list[tuple[int, str]]] = {leaf: [] for leaf in self.leaves}
        for h in self.hosts:
            out[self.leaf_of(h)].append((self.graph.nodes[h]["slot"], h))
        return {leaf: [h for _, h in sorted(v)] for leaf, v in out.items()}

    @cached_property
    def servers(self) -> list[list[str]]:
        """Servers of several GPUs or NICs (gpus_per_server > 1 or nics_per_server > 0),
        each its hosts in GPU order; else empty."""
        n = self.spec.gpus_per_server if self.spec.has_nvlink else self.spec.nics_per_server
        return [self.hosts[i:i + n] for i in range(0, len(self.hosts), n)] if n else []

    @cached_property
    def server_of(self) -> dict[str, int]:
        """host -> its server's index in `servers` (empty without NVLink)."""
        if not self.spec.has_nvlink:
            return {}
        return {h: k for k, hs in enumerate(self.servers) for h in hs}

    @cached_property
    def server_map(self) -> ServerMap | None:
        """Where each GPU sits and PXN's relays (testbed/servers.py); None without NVLink."""
        return ServerMap.of(self.servers) if self.spec.has_nvlink else None

    def same_server(self, a: str, b: str) -> bool:
        """Two GPUs of one NVLink domain: a transfer between them crosses no fabric link."""
        return self.same_servers([(a, b)])[0]

    def same_servers(self, pairs: list[tuple[str, str]]) -> list[bool]:
        """`same_server` of each (a, b) pair, in one pass."""
        return self.same_servers_of([a for a, _ in pairs], [b for _, b in pairs])

    def same_servers_of(self, srcs: list[str], dsts: list[str]) -> list[bool]:
        """`same_server` of each (srcs[k], dsts[k]), by C-level maps (65,536 pairs at
        8,192 GPUs)."""
        s = self.server_of
        if not s:
            return [False] * len(srcs)
        one = map(eq, map(s.get, srcs, repeat(-1)), map(s.get, dsts, repeat(-2)))
        return list(map(and_, one, map(ne, srcs, dsts)))

    @cached_property
    def nvlink_ends(self) -> dict[str, tuple[int, int]]:
        """host -> (its link into its NVLink switch, the switch's link to it), as indices in
        `links`; empty without NVLink."""
        if not self.spec.has_nvlink:
            return {}
        li = self.link_index
        return {h: (li[h, f"nvs{k + 1}"], li[f"nvs{k + 1}", h])
                for h, k in self.server_of.items()}

    # -- failures ----------------------------------------------------------------------------
    def failable_switch(self, name, role: str | None = None) -> str:
        """`name` if it is a switch above the leaves (of `role`, when given); FabricError
        otherwise (leaves carry hosts and cannot fail here)."""
        if role == "spine" or not self.has_pods:
            spines = self.spines + [n for n in self.plane_switches if self.role(n) == "spine"]
            if not isinstance(name, str) or name not in spines:
                raise FabricError(f"unknown spine {name!r:.40} (spine1..spine{len(spines)})")
        elif not isinstance(name, str) or not (name in self.graph and self.role(name) in
                                                ("agg", "core")):
            p = self.planes
            raise FabricError(f"{name!r:.40} is not an agg or core of this fabric "
                              f"(agg1..agg{len(self.aggs) * p}, core1..core{len(self.cores) * p})")
        return name

    def failable_link(self, pair) -> tuple[str, str]:
        """A link between two switches, lower tier first; FabricError otherwise."""
        ok = (isinstance(pair, (list, tuple)) and len(pair) == 2
              and all(isinstance(x, str) for x in pair))
        if not self.has_pods:
            if not ok or not self.graph.has_edge(*pair) or self.role(pair[0]) != "leaf" \
                    or self.role(pair[1]) != "spine":
                raise FabricError(f"expected [leafX, spineY] of this fabric, got {pair!r:.40}")
            return (pair[0], pair[1])
        if not ok or not all(self.is_switch(x) for x in pair) or not self.graph.has_edge(*pair):
            raise FabricError(f"expected a link between two switches of this fabric, e.g. "
                              f"[leaf1, agg2] or [agg1, core3], got {pair!r:.40}")
        return self.link_key(pair[0], pair[1])

    def changed(self, fail: bool, target: tuple[str, ...]) -> "Fabric":
        """This fabric with one switch (target (name,)) or link (a pair) failed or restored;
        FabricError when the result cannot be built (e.g. a leaf cut off)."""
        switches, links = set(self.spec.failed), set(self.spec.failed_links)
        group, key = (switches, target[0]) if len(target) == 1 else (links, tuple(target))
        if fail:
            group.add(key)
        else:
            group.discard(key)
        return build_fabric(self.spec.with_failures(tuple(switches), tuple(links)))

    def uplinks(self, switch: str) -> list[str]:
        """Neighbours one tier up (leaf-spine leaf: spines; leaf: aggs; agg: cores)."""
        return self.graph.nodes[switch].get("up", [])

    def usable_spines(self, src_leaf: str, dst_leaf: str) -> list[str]:
        """Leaf-spine: spines through which src_leaf can reach dst_leaf with every link up."""
        return [
            s for s in self.spines
            if self.is_live(src_leaf, s) and self.is_live(s, dst_leaf)
        ]

    def switch_paths(self, src_leaf: str, dst_leaf: str) -> list[tuple[str, ...]]:
        """The live shortest up-down paths between two leaves, as switch tuples in a fixed
        order (leaf-spine: by spine; same pod: by agg; across pods: by plane, then core).
        Empty when failures cut every such path; (leaf,) for a leaf to itself."""
        key = (src_leaf, dst_leaf)
        cache = self._path_cache
        if key not in cache:
            cache[key] = list(self._live_paths(src_leaf, dst_leaf))
        return cache[key]

    @cached_property
    def _path_cache(self) -> dict:
        return {}

    def switch_path_links(self, src_leaf: str, dst_leaf: str) -> list[tuple[int, ...]]:
        """Per path of `switch_paths(src_leaf, dst_leaf)`, its links' indices in `links`."""
        key = (src_leaf, dst_leaf, "links")
        cache = self._path_cache
        if key not in cache:
            lid = self._lid
            cache[key] = [tuple(lid[u][v] for u, v in zip(p, p[1:]))
                          for p in self.switch_paths(src_leaf, dst_leaf)]
        return cache[key]

    def spray_shares(self, src_leaf: str, dst_leaf: str) -> list[tuple[int, float]]:
        """Per-packet spraying's use of the fabric between two leaves: (link index, share of
        the live shortest paths crossing it) for every link of those paths, in path order.
        A flow sprayed evenly over them puts share x its rate on each link."""
        key = (src_leaf, dst_leaf, "spray")
        cache = self._path_cache
        if key not in cache:
            paths = self.switch_path_links(src_leaf, dst_leaf)
            count: dict[int, int] = {}
            for p in paths:
                for i in p:
                    count[i] = count.get(i, 0) + 1
            cache[key] = [(i, n / len(paths)) for i, n in count.items()]
        return cache[key]

    def route_links(self, path: tuple[str, ...]) -> tuple[int, ...] | None:
        """The indices in `links` of a path's links when it is one of switch_paths between
        its end leaves and each of its links exists (leaves of two planes have none), else
        None (cached per path)."""
        cache = self._route_links
        if path not in cache:
            lid = self._lid
            ok = len(path) > 2 and path[0] in lid and path[-1] in lid and \
                path in self.paths_via(path[0], path[-1], path[1])
            ids = tuple(lid[u].get(v, -1) for u, v in zip(path, path[1:])) if ok else ()
            cache[path] = ids if ids and min(ids) >= 0 else None
        return cache[path]

    @cached_property
    def _route_links(self) -> dict[tuple[str, ...], tuple[int, ...] | None]:
        return {}

    def first_hops(self, a: str, b: str) -> tuple[str, ...]:
        """The second switches of switch_paths(a, b) (a's live choices up), in its order,
        found without listing every path (a pair across pods of clos3-16k-jobs has 128)."""
        key = (a, b, "first")
        cache = self._path_cache
        if key not in cache:
            listed = cache.get((a, b))
            if listed is not None:
                cache[key] = tuple(dict.fromkeys(p[1] for p in listed if len(p) > 1))
            else:
                tails = self._tails(a, b)
                cache[key] = () if a == b else tuple(g for g in self._ups[a]
                                                     if next(tails(g), None) is not None)
        return cache[key]

    def paths_via(self, a: str, b: str, hop: str) -> list[tuple[str, ...]]:
        """The paths of switch_paths(a, b) whose second switch is `hop`, in its order."""
        listed = self._path_cache.get((a, b))
        if listed is not None:
            return [p for p in listed if len(p) > 1 and p[1] == hop]
        return list(self._live_paths(a, b, hop))

    def has_live_path(self, a: str, b: str) -> bool:
        """Whether switch_paths(a, b) has a path, found without listing them (a k=48
        fat-tree has 576 between two pods: listing every pair's took 12 GB)."""
        cached = self._path_cache.get((a, b))
        if cached is not None:
            return bool(cached)
        return next(self._live_paths(a, b), None) is not None

    def _live_paths(self, a: str, b: str, via: str | None = None
                    ) -> Iterator[tuple[str, ...]]:
        """switch_paths(a, b)'s paths, one at a time, in its order (leaf-spine: by spine;
        same pod: by agg; across pods: by plane, then core); `via`: only those whose second
        switch it is."""
        if a == b:
            if via is None:
                yield (a,)
            return
        ups = self._ups[a]
        tails = self._tails(a, b)
        for g in (ups if via is None else [via] if via in ups else []):
            yield from ((a, g, *t) for t in tails(g))

    def _tails(self, a: str, b: str) -> Callable[[str], Iterator[tuple[str, ...]]]:
        """For leaves a != b: g -> the live ends (the switches after g, b last) of the
        shortest up-down paths from a through its uplink g, in order."""
        dead, ups = self._dead, self._ups
        if self.tiers == 2 or self.pod_of(a) == self.pod_of(b):    # a -> s -> b
            def over(s: str) -> Iterator[tuple[str, ...]]:
                if (a, s) not in dead and (s, b) not in dead:
                    yield (b,)
            return over
        plane = self._plane
        down = {plane[g]: g for g in ups[b]}

        def across(g: str) -> Iterator[tuple[str, ...]]:      # a -> g -> core -> g2 -> b
            g2 = down[plane[g]]
            if (a, g) not in dead and (g2, b) not in dead:
                yield from ((c, g2, b) for c in ups[g]
                            if (g, c) not in dead and (c, g2) not in dead)
        return across

    @cached_property
    def _plane(self) -> dict[str, int]:
        return {n: d["plane"] for n, d in self.graph.nodes(data=True) if "plane" in d}

    def path(self, src_host: str, dst_host: str, spine: str | None) -> list[str]:
        """Leaf-spine node list of a path; spine None exactly when both hosts share a leaf."""
        a, b = self.leaf_of(src_host), self.leaf_of(dst_host)
        if a == b:
            if spine is not None:
                raise FabricError(f"{src_host}->{dst_host} stays on {a}: it takes no spine")
            return [src_host, a, dst_host]
        if spine is None:
            raise FabricError(f"{src_host}->{dst_host} crosses leaves: it needs a spine")
        if spine not in self.usable_spines(a, b):
            raise FabricError(f"{src_host}->{dst_host} cannot use {spine}: failed or unknown")
        return [src_host, a, spine, b, dst_host]

    def serves(self, src_host: str, dst_host: str, path: tuple[str, ...]) -> bool:
        """`path` is a live shortest path between the two hosts' leaves in its plane (a leaf
        alone: both hosts' port on it)."""
        plane = self.plane_of(path[0]) if path and path[0] in self.graph else 1
        return tuple(path) in self.switch_paths(self.leaf_at(src_host, plane),
                                                self.leaf_at(dst_host, plane))

    def host_path(self, src_host: str, dst_host: str, switches: tuple[str, ...]) -> list[str]:
        """Node list host -> `switches` -> host; raises FabricError unless `switches` is one of
        the live shortest paths between the hosts' leaves (in the plane of its first)."""
        plane = self.plane_of(switches[0]) if switches and switches[0] in self.graph else 1
        a, b = self.leaf_at(src_host, plane), self.leaf_at(dst_host, plane)
        if tuple(switches) not in self.switch_paths(a, b):
            raise FabricError(f"{src_host}->{dst_host}: {'/'.join(switches)} is not a live "
                              f"shortest path from {a} to {b}")
        return [src_host, *switches, dst_host]

    def path_links(self, src_host: str, dst_host: str, spine: str | None) -> list[tuple[str, str]]:
        nodes = self.path(src_host, dst_host, spine)
        return list(zip(nodes, nodes[1:]))

    @cached_property
    def links(self) -> list[tuple[str, str]]:
        """Every directed link, in a fixed order (index = position)."""
        return list(self.graph.edges)

    @cached_property
    def link_index(self) -> dict[tuple[str, str], int]:
        return {e: i for i, e in enumerate(self.links)}

    @cached_property
    def host_ends(self) -> tuple[dict[str, int], list[tuple[int, int, int]]]:
        """host name -> i, and per i (its leaf's index in `leaves`, its uplink's and its
        downlink's index in `links`): a flow's first and last link (the predictor's rows)."""
        li, leaf_ix = self.link_index, {leaf: i for i, leaf in enumerate(self.leaves)}
        return ({h: i for i, h in enumerate(self.hosts)},
                [(leaf_ix[self.leaf_of(h)], li[(h, self.leaf_of(h))], li[(self.leaf_of(h), h)])
                 for h in self.hosts])

    def capacity_mbps(self, u: str, v: str) -> float:
        return self.graph.edges[u, v]["capacity_mbps"]

    @cached_property
    def capacities_mbps(self) -> tuple[float, ...]:
        """capacity_mbps of every link, in `links` order (read once per fabric)."""
        return tuple(c for _, _, c in self.graph.edges(data="capacity_mbps"))   # links' order

    def nonblocking(self) -> "Fabric":
        """The same hosts (names, order, host link rate) on one switch: `leaf1` holds every
        host, with one idle spine (a leaf-spine of one leaf), the reference against which
        Hedera measures routing. At most 250 hosts (one leaf's addresses)."""
        n = len(self.hosts)
        if n > MAX_HOSTS_PER_LEAF:
            raise FabricError(f"nonblocking puts all {n} hosts on one switch, at most "
                              f"{MAX_HOSTS_PER_LEAF} in the emulator; use `predict` for it")
        rate, s = self.spec.host_link_mbps * self.spec.planes, self.spec   # every NIC port
        return build_fabric(FabricSpec(1, 1, n, rate, rate, gpus_per_server=s.gpus_per_server,
                                       nvlink_mbps=s.nvlink_mbps))


#: How build_fabric's error for a leaf cut off starts (the config names its failure keys).
ISOLATED = "fabric: the failures isolate"


def build_fabric(spec: FabricSpec) -> Fabric:
    """Build and validate the graph for `spec` (its kind's build, testbed/topologies/);
    raises FabricError on impossible input."""
    fabric = Fabric(spec, build_graph(spec))
    for leaf in fabric.leaves:
        if not any(fabric.is_live(leaf, u) for u in fabric.uplinks(leaf)):
            raise FabricError(f"{ISOLATED} {leaf}; keep at least one of its uplinks live")
    return fabric
