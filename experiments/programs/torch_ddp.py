"""Data-parallel training with PyTorch DistributedDataParallel over gloo (CPU), one rank
per process: a small MLP on generated data, gradients all-reduced by DDP every step.

    RANK=r WORLD_SIZE=n MASTER_ADDR=ip MASTER_PORT=port python torch_ddp.py [--steps 20]

mlfabric sets the variables (traffic/programs.py), GLOO_SOCKET_IFNAME among them. Every rank
draws its own shard of a regression problem (y = tanh(x W*) + noise, the same W*
everywhere); DDP averages the gradients (a gloo all-reduce, 4 bytes per parameter) and
keeps the copies equal. Each step is one step record with its loss; the loss must fall.
PyTorch is not among mlfabric's requirements (PyPI's Linux wheels are CUDA builds of
several GB): install it where you want this example.
"""
from __future__ import annotations

import argparse
import sys
import time
from datetime import timedelta

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
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)                      # the same initial parameters on every rank
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(args.inputs, args.hidden), torch.nn.Tanh(),
        torch.nn.Linear(args.hidden, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    truth = torch.randn(args.inputs, 1, generator=torch.Generator().manual_seed(0))
    truth /= args.inputs ** 0.5
    data = torch.Generator().manual_seed(100 + rank)
    n_params = sum(p.numel() for p in model.parameters())
    losses = []
    for step in range(args.steps):
        x = torch.randn(args.batch, args.inputs, generator=data)
        y = torch.tanh(x @ truth) + 0.01 * torch.randn(args.batch, 1, generator=data)
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()                       # DDP all-reduces the gradients here
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(float(mean) / world)
        mlfabric_steps.report(step, time.perf_counter() - t0, loss=losses[-1],
                              gradient_bytes=4 * n_params)
    if rank == 0:
        print(f"{n_params} parameters ({4 * n_params} gradient bytes per step); loss "
              f"{losses[0]:.5f} -> {losses[-1]:.5f}", file=sys.stderr)
    dist.destroy_process_group()
    return 0 if losses[-1] < losses[0] else 1


if __name__ == "__main__":
    sys.exit(main())
