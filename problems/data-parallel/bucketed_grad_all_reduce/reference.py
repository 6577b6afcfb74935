"""Bucketed gradient all-reduce: DDP's Reducer packs gradients into byte-capped buckets (in reverse parameter order,
the order backward produces them), all-reduces each flat bucket and divides by the world size."""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def _shapes(layers: int, hidden: int) -> list[tuple[int, ...]]:
    """Parameter shapes of a stack of MLP blocks: up-projection, its bias, down-projection, its bias, norm weight."""
    shapes = []
    for _ in range(layers):
        shapes += [(4 * hidden, hidden), (4 * hidden,), (hidden, 4 * hidden), (hidden,), (hidden,)]
    return shapes


def solution(bucket_cap_bytes: torch.Tensor, *grads: torch.Tensor) -> tuple[torch.Tensor, ...]:
    world = dist.get_world_size()
    cap = int(bucket_cap_bytes.item())
    out: list[torch.Tensor | None] = [None] * len(grads)
    bucket: list[int] = []
    size = 0

    def flush():
        flat = torch.cat([grads[i].reshape(-1) for i in bucket])
        flat.div_(world)  # DDP divides before the sum so bf16 buckets do not overflow
        dist.all_reduce(flat)
        for i, piece in zip(bucket, flat.split([grads[i].numel() for i in bucket])):
            out[i] = piece.view(grads[i].shape).clone()

    for i in reversed(range(len(grads))):
        nbytes = grads[i].numel() * grads[i].element_size()
        if bucket and size + nbytes > cap:
            flush()
            bucket, size = [], 0
        bucket.append(i)
        size += nbytes
    if bucket:
        flush()
    return tuple(out)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, layers: int, hidden: int,
                bucket_cap_bytes: int):
    g = rank_generator(seed, rank, device)
    cap = torch.tensor(bucket_cap_bytes, dtype=torch.int64, device=device)
    return (cap, *(randn(s, dtype_of(dtype), device, g) for s in _shapes(layers, hidden)))


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    acc = accumulate_dtype(inputs[0][1].dtype)
    means = tuple((sum(inp[i].to(acc) for inp in inputs) / world).to(inputs[0][i].dtype)
                  for i in range(1, len(inputs[0])))
    return [tuple(m.clone() for m in means) for _ in inputs]
