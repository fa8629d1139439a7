"""One rank of one job, run inside a Mininet host: `python -m traffic.agent PLAN.json`.

The agent executes its share of the job's transfer DAG over persistent TCP connections and
talks to the runner by JSON lines: commands on stdin, events on stdout.

    runner -> agent            agent -> runner
    (start)                    {"event": "listening"}
    {"cmd": "connect"}         {"event": "connected"}
    {"cmd": "iterate", "iteration": t}
                               {"event": "done", "iteration": t, "start_s", "recv": [[tid,
                                first_byte_s, last_byte_s, bytes], ...], "bytes_received",
                                "bytes_sent", "retrans_segments", "tcp": {conn_id:
                                {retrans_segments, reordering_seen, out_of_order_packets}},
                                "verified": true}
                               with "report_transfers" in the plan, also as each arrives:
                               {"event": "received", "iteration": t, "tid", "t"}
    {"cmd": "exit"}            (exits 0)
    any failure                {"event": "error", "message": "..."} and exit 1

A send waits until its deps (transfers this host receives) are verified; sends on one
connection go in order. Every receive is checked against the deterministic payload
(traffic/wire.py). Times are time.monotonic() seconds, shared by every namespace of the machine.
Every blocking call has a deadline (`timeout_s` in the plan).
"""
from __future__ import annotations

import json
import socket
import sys
import threading
import time
import zlib
from dataclasses import dataclass

from .collectives import ADAPTIVE_UNSENT_BYTES
from .wire import HEADER, MAGIC, ExpectedCrc, header, payload_crc, payload_pieces

RECV_BUFFER_BYTES = 256 * 1024


class AgentError(RuntimeError):
    """A transfer failed: timeout, connection lost, or bytes that do not verify."""


@dataclass
class Plan:
    host: str
    job_index: int
    ip: str
    listen_port: int
    seed: int
    timeout_s: float
    tcp_cc: str
    outgoing: list[dict]   # {conn_id, dst_ip, dst_port, src_port}
    incoming: list[dict]   # {conn_id, src_ip, src_port}
    sends: list[dict]      # {tid, conn_id, size_bytes, deps[, pool, pool_bytes, piece_bytes]}
    recvs: list[dict]      # {tid, conn_id, size_bytes[, pool, pool_bytes, pool_parts]}, in
                           # order per connection; pool: an adaptive split's part
    window_clamp_bytes: int = 0   # receive window bound per connection; 0: kernel autotuning
    report_transfers: bool = False   # a "received" event per transfer as it arrives


_EMIT_LOCK = threading.Lock()


def emit(event: dict) -> None:
    """One JSON line to the runner (whole lines, whichever thread writes)."""
    line = json.dumps(event) + "\n"
    with _EMIT_LOCK:
        sys.stdout.write(line)
        sys.stdout.flush()


def _configure(sock: socket.socket, plan: Plan) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, plan.tcp_cc.encode())
    if plan.window_clamp_bytes:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_WINDOW_CLAMP, plan.window_clamp_bytes)
    sock.settimeout(plan.timeout_s)


#: Offsets in struct tcp_info (linux/tcp.h) of the u32 counters the agents report:
#: tcpi_total_retrans, tcpi_reord_seen (Linux 4.19+) and tcpi_rcv_ooopack (5.4+).
TCP_INFO_OFFSETS = {"retrans_segments": 100, "reordering_seen": 220, "out_of_order_packets": 224}
TCP_INFO_BYTES = 232


def tcp_counters(sock: socket.socket, *names: str) -> dict[str, int | None]:
    """The socket's TCP_INFO counters `names` since it opened (None: the kernel has none)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_BYTES)
    out: dict[str, int | None] = {}
    for name in names:
        off = TCP_INFO_OFFSETS[name]
        out[name] = (int.from_bytes(info[off:off + 4], sys.byteorder)
                     if len(info) >= off + 4 else None)
    return out


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            raise AgentError("connection closed by peer")
        buf += part
    return bytes(buf)


class Agent:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.out_socks: dict[int, socket.socket] = {}
        self.in_socks: dict[int, socket.socket] = {}
        self.failure: str | None = None

    # -- setup -------------------------------------------------------------------------------
    def listen(self) -> socket.socket:
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.plan.window_clamp_bytes:
            # a fixed receive buffer (inherited by accepted sockets) stops the kernel's
            # autotuning; the kernel doubles it for overhead and advertises a share of that
            # (its measured payload/truesize ratio, < 1), so half the bound caps the window
            lsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                             self.plan.window_clamp_bytes // 2)
        lsock.bind((self.plan.ip, self.plan.listen_port))
        lsock.listen(64)
        lsock.settimeout(self.plan.timeout_s)
        return lsock

    def connect(self, lsock: socket.socket) -> None:
        p = self.plan
        expected = {(c["src_ip"], c["src_port"]): c["conn_id"] for c in p.incoming}
        accepted: dict[int, socket.socket] = {}

        def accept_all() -> None:
            try:
                while len(accepted) < len(expected):
                    sock, peer = lsock.accept()
                    if peer not in expected:
                        sock.close()
                        continue
                    _configure(sock, p)
                    accepted[expected[peer]] = sock
            except OSError as e:
                self.failure = f"accept on {p.ip}:{p.listen_port}: {e}"

        adaptive = {s["conn_id"] for s in p.sends if s.get("pool", -1) >= 0}
        acceptor = threading.Thread(target=accept_all, daemon=True)
        acceptor.start()
        deadline = time.monotonic() + p.timeout_s
        for c in p.outgoing:
            while True:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                _configure(sock, p)
                sock.bind((p.ip, c["src_port"]))
                try:
                    sock.connect((c["dst_ip"], c["dst_port"]))
                    break
                except OSError as e:
                    sock.close()
                    if time.monotonic() > deadline:
                        raise AgentError(f"connect {c['dst_ip']}:{c['dst_port']}: {e}")
                    time.sleep(0.05)
            if c["conn_id"] in adaptive:
                # a piece counts as sent once (nearly) all of it is on the wire, not queued
                # in the socket: a subflow on a slow path must not hoard pieces there
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT,
                                ADAPTIVE_UNSENT_BYTES)
            self.out_socks[c["conn_id"]] = sock
        acceptor.join(timeout=max(0.0, deadline - time.monotonic()))
        if self.failure or len(accepted) < len(expected):
            raise AgentError(self.failure or f"only {len(accepted)}/{len(expected)} peers "
                             f"connected within {p.timeout_s:g} s")
        self.in_socks = accepted
        lsock.close()

    # -- one iteration -----------------------------------------------------------------------
    def iterate(self, iteration: int) -> dict:
        p = self.plan
        start_s = time.monotonic()
        received = {r["tid"]: threading.Event() for r in p.recvs}
        recv_times: dict[int, tuple[float, float, int]] = {}
        shared = {s["pool"]: SharedBytes(s["pool_bytes"]) for s in p.sends
                  if s.get("pool", -1) >= 0}
        pools_in = {r["pool"]: [r["pool_parts"], 0] for r in p.recvs if r.get("pool", -1) >= 0}
        counters = {"received": 0, "sent": 0}
        errors: list[str] = []
        lock = threading.Lock()

        def count_in(n: int) -> None:
            with lock:
                counters["received"] += n

        def count_out(n: int) -> None:
            with lock:
                counters["sent"] += n

        def fail(msg: str) -> None:
            with lock:
                errors.append(msg)
            for ev in received.values():  # wake waiting senders: the iteration is over
                ev.set()

        def receiver(conn_id: int, expected: list[dict]) -> None:
            sock = self.in_socks[conn_id]
            buf = bytearray(RECV_BUFFER_BYTES)
            view = memoryview(buf)
            try:
                for r in expected:
                    first, carried = _receive_one(sock, view, p, iteration, conn_id, r,
                                                  count_in)
                    last = time.monotonic()
                    recv_times[r["tid"]] = (first, last, carried)
                    if r.get("pool", -1) >= 0:
                        _pool_part_done(pools_in, r, carried, lock)
                    received[r["tid"]].set()
                    if p.report_transfers:   # after the set(): a dependent send goes first
                        emit({"event": "received", "iteration": iteration, "tid": r["tid"],
                              "t": last})
            except Exception as e:  # noqa: BLE001 - any failure ends the iteration, reported
                fail(f"receive on conn {conn_id}: {type(e).__name__}: {e}")

        def sender(conn_id: int, sends: list[dict]) -> None:
            sock = self.out_socks[conn_id]
            try:
                for s in sends:
                    # the header's checksum before the wait: off the path from the deps'
                    # arrival to this transfer's first byte
                    pool = shared.get(s.get("pool", -1))
                    crc = 0 if pool is not None else payload_crc(p.seed, p.job_index, iteration, s["tid"],
                                                     s["size_bytes"])
                    for dep in s["deps"]:
                        left = p.timeout_s - (time.monotonic() - start_s)
                        if not received[dep].wait(timeout=max(left, 0.0)):
                            raise AgentError(f"transfer {s['tid']} waited more than "
                                             f"{p.timeout_s:g} s for transfer {dep}")
                    if errors:
                        return
                    _send_one(sock, p, iteration, s, crc, count_out, pool)
            except Exception as e:  # noqa: BLE001 - any failure ends the iteration, reported
                fail(f"send on conn {conn_id}: {type(e).__name__}: {e}")

        _run_all([(receiver, conn_id, [r for r in p.recvs if r["conn_id"] == conn_id])
                  for conn_id in self.in_socks]
                 + [(sender, conn_id, [s for s in p.sends if s["conn_id"] == conn_id])
                    for conn_id in self.out_socks], start_s + p.timeout_s, errors,
                 f"iteration {iteration} exceeded {p.timeout_s:g} s")
        tcp = self.tcp_counters()
        return {"event": "done", "iteration": iteration, "start_s": start_s,
                "recv": [[tid, a, b, n] for tid, (a, b, n) in sorted(recv_times.items())],
                "bytes_received": counters["received"], "bytes_sent": counters["sent"],
                "retrans_segments": sum(c.get("retrans_segments") or 0 for c in tcp.values()),
                "tcp": tcp, "verified": True}

    def tcp_counters(self) -> dict[str, dict]:
        """Per connection (its id as a string): the sender's retransmitted segments and
        reorderings seen, the receiver's out-of-order packets, since it opened."""
        out: dict[str, dict] = {}
        for cid, sock in self.out_socks.items():
            out[str(cid)] = tcp_counters(sock, "retrans_segments", "reordering_seen")
        for cid, sock in self.in_socks.items():
            out.setdefault(str(cid), {}).update(tcp_counters(sock, "out_of_order_packets"))
        return out


def _receive_one(sock: socket.socket, view: memoryview, p, iteration: int, conn_id: int,
                 r: dict, count) -> tuple[float, int]:
    """Receive and verify transfer `r` on `sock` (an adaptive part: its pieces up to the
    empty one). `count(n)` is told of every n bytes. Returns (time of the first header,
    payload bytes)."""
    if r.get("pool", -1) < 0:
        first, size, crc = _header(sock, p, iteration, conn_id, r, exact=True)
        _receive_payload(sock, view, p, iteration, conn_id, r["tid"], size, crc, count)
        return first, size
    first, carried, k = 0.0, 0, 0
    while True:
        t, size, crc = _header(sock, p, iteration, conn_id, r, exact=False)
        first = first or t
        if size == 0:
            return first, carried
        _receive_payload(sock, view, p, iteration, conn_id, f"{r['tid']}/{k}", size, crc, count)
        carried, k = carried + size, k + 1


def _header(sock: socket.socket, p, iteration: int, conn_id: int, r: dict,
            exact: bool) -> tuple[float, int, int]:
    """Read the next header, which must be transfer r's (of r's size when `exact`); returns
    (its arrival time, size in bytes, CRC)."""
    magic, job, it, tid, size, crc = HEADER.unpack(_recv_exact(sock, HEADER.size))
    at = time.monotonic()
    if (magic, job, it, tid) != (MAGIC, p.job_index, iteration, r["tid"]) or (
            exact and size != r["size_bytes"]):
        raise AgentError(f"conn {conn_id}: expected transfer {r['tid']} of iteration "
                         f"{iteration} ({r['size_bytes']} B), got {tid} of {it} ({size} B)")
    return at, size, crc


def _receive_payload(sock: socket.socket, view: memoryview, p, iteration: int, conn_id: int,
                     key: int | str, size: int, crc: int, count) -> None:
    """Receive `size` payload bytes and check them against the header's `crc` and the
    deterministic payload of `key`, whose checksum advances with the bytes received, so that
    none of it is left after the last byte (a pass over the whole payload there delayed the
    transfers that depend on this one)."""
    want = ExpectedCrc(p.seed, p.job_index, iteration, key, size)
    left, got_crc = size, 0
    while left:
        n = sock.recv_into(view, min(left, RECV_BUFFER_BYTES))
        if n == 0:
            raise AgentError(f"conn {conn_id}: closed with {left} B missing")
        got_crc = zlib.crc32(view[:n], got_crc)
        left -= n
        want.advance(size - left)
        count(n)
    want = want.advance(size)
    if got_crc != crc or got_crc != want:
        raise AgentError(f"conn {conn_id}: transfer {key} checksum mismatch "
                         f"(got {got_crc:#x}, header {crc:#x}, want {want:#x})")


class SharedBytes:
    """The bytes of one adaptively split transfer that no subflow has taken yet."""

    def __init__(self, size_bytes: int):
        self.left = size_bytes
        self.lock = threading.Lock()

    def take(self, piece_bytes: int) -> int:
        """The next piece's size (0: nothing left)."""
        with self.lock:
            n = min(piece_bytes, self.left)
            self.left -= n
            return n


def _send_one(sock: socket.socket, p, iteration: int, s: dict, crc: int, count,
              shared: SharedBytes | None = None) -> None:
    """Send transfer `s` (header with its checksum `crc`, then the payload) on `sock`, or with
    `shared` the pieces this subflow takes of its transfer and the empty piece that ends them;
    `count(n)` is told of every n bytes."""
    if shared is None:
        _send_payload(sock, p, iteration, s["tid"], s["tid"], s["size_bytes"], crc, count)
        return
    k = 0
    while n := shared.take(s["piece_bytes"]):
        key = f"{s['tid']}/{k}"
        crc = payload_crc(p.seed, p.job_index, iteration, key, n)
        _send_payload(sock, p, iteration, s["tid"], key, n, crc, count)
        k += 1
    sock.sendall(header(p.job_index, iteration, s["tid"], 0, 0))


def _send_payload(sock: socket.socket, p, iteration: int, tid: int, key: int | str, size: int,
                  crc: int, count) -> None:
    sock.sendall(header(p.job_index, iteration, tid, size, crc))
    for piece in payload_pieces(p.seed, p.job_index, iteration, key, size):
        sock.sendall(piece)
        count(len(piece))


def _pool_part_done(pools_in: dict, r: dict, carried: int, lock: threading.Lock) -> None:
    """One part of an adaptive split arrived with `carried` bytes; once all have, their sum
    must be the transfer's."""
    with lock:
        left = pools_in[r["pool"]]
        left[0] -= 1
        left[1] += carried
        if left[0] == 0 and left[1] != r["pool_bytes"]:
            raise AgentError(f"transfer {r['pool']}: its parts carried {left[1]} B, "
                             f"expected {r['pool_bytes']} B")


def main(argv: list[str]) -> int:
    plan = Plan(**json.loads(open(argv[1]).read()))
    agent = Agent(plan)
    try:
        lsock = agent.listen()
        emit({"event": "listening"})
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd["cmd"] == "connect":
                agent.connect(lsock)
                emit({"event": "connected"})
            elif cmd["cmd"] == "iterate":
                emit(agent.iterate(int(cmd["iteration"])))
            elif cmd["cmd"] == "exit":
                return 0
        return 0
    except (OSError, AgentError, ValueError) as e:
        emit({"event": "error", "host": plan.host, "message": str(e)})
        return 1


def _run_all(work: list[tuple], deadline: float, errors: list[str], late: str) -> None:
    """Run each (function, conn_id, transfers) in a thread of its own until `deadline`
    (time.monotonic()); AgentError with every error, or `late` if one ran past it."""
    threads = [threading.Thread(target=fn, args=(conn_id, items), daemon=True)
               for fn, conn_id, items in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()) + 1.0)
    if any(t.is_alive() for t in threads) and not errors:
        errors.append(late)
    if errors:
        raise AgentError("; ".join(errors))


if __name__ == "__main__":
    sys.exit(main(sys.argv))

