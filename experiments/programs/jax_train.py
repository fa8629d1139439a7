"""Data-parallel training of a small MLP with JAX over gloo (CPU): gradients all-reduced
every step, one rank per process.

    RANK=r WORLD_SIZE=n JAX_COORDINATOR_ADDRESS=ip:port python jax_train.py \
        [--steps 20] [--hidden 512] [--batch 256]

Every rank draws its own shard of a generated regression problem (y = tanh(x W*) + noise,
the same W* everywhere) and holds a full copy of the parameters; each step is one jit over
the global batch sharded by rows, so the compiler has each rank compute its shard's
gradient and all-reduce it over the ranks (gloo's ring: 4 bytes per parameter, 2(n-1)/n of
them sent by each rank) before SGD, and the copies stay equal.
Each step is one step record with its loss (experiments/programs/mlfabric_steps.py); the
loss must fall. Rank 0 prints the parameter count and the first and last loss.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import mlfabric_steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--inputs", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--batch", type=int, default=256, help="samples per rank and step")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--timeout-s", type=int, default=120, help="rendezvous timeout")
    args = ap.parse_args()
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    jax.distributed.initialize(coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
                               num_processes=world, process_id=rank,
                               initialization_timeout=args.timeout_s)
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    mesh = Mesh(np.array(jax.devices()), ("ranks",))
    d, h = args.inputs, args.hidden
    truth = np.random.default_rng(0).standard_normal((d, 1)).astype(np.float32) / np.sqrt(d)
    init = np.random.default_rng(1)
    params = {"w1": init.standard_normal((d, h)).astype(np.float32) / np.sqrt(d),
              "b1": np.zeros(h, np.float32),
              "w2": init.standard_normal((h, 1)).astype(np.float32) / np.sqrt(h),
              "b2": np.zeros(1, np.float32)}
    n_params = sum(v.size for v in params.values())

    def loss_fn(p, x, y):
        out = jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
        return jnp.mean((out - y) ** 2)

    def step_fn(p, x, y):
        # the mean loss over the global batch, sharded by rows: the compiler sums each
        # rank's gradient over the ranks (an all-reduce, gloo's ring), as DDP does
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree.map(lambda a, g: a - args.lr * g, p, grads), loss

    replicated = P()
    rep = NamedSharding(mesh, replicated)
    train = jax.jit(step_fn, in_shardings=(rep, NamedSharding(mesh, P("ranks")),
                                           NamedSharding(mesh, P("ranks"))),
                    out_shardings=(rep, rep))
    p = {k: jax.make_array_from_callback(v.shape, rep, lambda idx, v=v: v[idx])
         for k, v in params.items()}
    data = np.random.default_rng(100 + rank)
    rows = NamedSharding(mesh, P("ranks"))

    def batch():
        """This rank's shard of the next global batch, as global arrays."""
        xs = data.standard_normal((args.batch, d)).astype(np.float32)
        ys = np.tanh(xs @ truth) + 0.01 * data.standard_normal((args.batch, 1)).astype(np.float32)
        return (jax.make_array_from_callback((world * args.batch, d), rows, lambda idx: xs),
                jax.make_array_from_callback((world * args.batch, 1), rows, lambda idx: ys))
    x, y = batch()
    train = train.lower(p, x, y).compile()      # compiled before the first timed step
    losses = []
    for step in range(args.steps):
        if step:
            x, y = batch()
        t0 = time.perf_counter()
        p, loss = train(p, x, y)
        loss = float(np.asarray(loss.addressable_shards[0].data))
        mlfabric_steps.report(step, time.perf_counter() - t0, loss=loss,
                              gradient_bytes=4 * n_params)
        losses.append(loss)
    if rank == 0:
        print(f"{n_params} parameters ({4 * n_params} gradient bytes per step); loss "
              f"{losses[0]:.5f} -> {losses[-1]:.5f}", file=sys.stderr)
    jax.distributed.shutdown()
    return 0 if losses[-1] < losses[0] else 1


if __name__ == "__main__":
    sys.exit(main())
