"""All-reduce bandwidth of JAX over gloo (CPU), nccl-tests style: one rank per process.

    RANK=r WORLD_SIZE=n JAX_COORDINATOR_ADDRESS=ip:port python jax_allreduce.py \
        [--sizes 1M 16M 64M] [--iters 5] [--warmup 1]

mlfabric sets the variables (traffic/programs.py). For each size S (bytes of float32), the
psum of an S-byte array over every rank is timed --iters times after --warmup untimed runs;
each timed run is one step record (experiments/programs/mlfabric_steps.py) with the size,
algbw = S / time and busbw = algbw x 2(n-1)/n (nccl-tests' all-reduce convention), and
rank 0 prints a table at the end. gloo runs a ring: each rank sends 2(n-1)/n x S bytes.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import mlfabric_steps

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_bytes(text: str) -> int:
    """'64M' -> 67108864; a multiple of 4 bytes (float32) of at least 4."""
    mult = UNITS.get(text[-1:].upper(), 1)
    n = int(text[:-1] if text[-1:].upper() in UNITS else text) * mult
    if n < 4 or n % 4:
        raise argparse.ArgumentTypeError(f"{text}: sizes are whole float32s (4 bytes)")
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=size_bytes, nargs="+", default=[size_bytes("16M")])
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--timeout-s", type=int, default=120, help="rendezvous timeout")
    args = ap.parse_args()
    import jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    jax.distributed.initialize(coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
                               num_processes=world, process_id=rank,
                               initialization_timeout=args.timeout_s)
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:                                   # jax < 0.8
        from jax.experimental.shard_map import shard_map
    mesh = Mesh(np.array(jax.devices()), ("ranks",))
    summed = jax.jit(shard_map(lambda x: jax.lax.psum(x, "ranks"), mesh=mesh,
                               in_specs=P("ranks"), out_specs=P("ranks")))
    rows, step = [], 0
    for size in args.sizes:
        n = size // 4
        x = jax.make_array_from_callback((world * n,), NamedSharding(mesh, P("ranks")),
                                         lambda idx: np.full(n, rank + 1, np.float32))
        for _ in range(args.warmup):
            summed(x).block_until_ready()
        times = []
        for _ in range(args.iters):
            t0 = time.perf_counter()
            y = summed(x)
            y.block_until_ready()
            dt = time.perf_counter() - t0
            times.append(dt)
            algbw = size / dt / 1e9
            mlfabric_steps.report(step, dt, size_bytes=size, algbw_gbps=algbw,
                                  busbw_gbps=algbw * 2 * (world - 1) / world)
            step += 1
        want = world * (world + 1) / 2
        got = float(np.asarray(y.addressable_shards[0].data)[0])
        if got != want:
            print(f"rank {rank}: wrong sum {got} (want {want})", file=sys.stderr)
            return 1
        rows.append((size, sorted(times)[len(times) // 2]))
    if rank == 0:
        print(f"{'size (B)':>12} {'time (s)':>10} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}",
              file=sys.stderr)
        for size, t in rows:
            print(f"{size:>12} {t:>10.4f} {size / t / 1e9:>13.4f} "
                  f"{size / t / 1e9 * 2 * (world - 1) / world:>13.4f}", file=sys.stderr)
    jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
