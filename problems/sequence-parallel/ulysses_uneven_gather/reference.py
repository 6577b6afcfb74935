"""The output gather of Ulysses sequence parallelism when the sequence does not split evenly: each rank holds the
hidden states of its own run of tokens (runs of different lengths, as when a packed batch is split at sample
boundaries), and every rank needs the whole sequence, in rank order. The lengths are known only locally, so they
are exchanged first."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn, shared_generator


def solution(x: torch.Tensor) -> torch.Tensor:
    w = dist.get_world_size()
    mine = torch.tensor([x.shape[0]], dtype=torch.int64, device=x.device)
    lengths = torch.empty(w, dtype=torch.int64, device=x.device)
    dist.all_gather_into_tensor(lengths, mine)
    counts = lengths.tolist()
    most = max(counts)
    # Shards padded to the longest, gathered, and the padding dropped (verl's gather, then unpad).
    padded = x.new_zeros((most, *x.shape[1:]))
    padded[:x.shape[0]] = x
    every = x.new_empty((w * most, *x.shape[1:]))
    dist.all_gather_into_tensor(every, padded)
    return torch.cat([every[r * most:r * most + counts[r]] for r in range(w)])


def lengths(seed: int, world_size: int, tokens: int) -> list[int]:
    """Every rank's run length: tokens x [0.75, 1.25], drawn per seed (the same list on every rank)."""
    u = torch.rand((world_size,), generator=shared_generator(seed))
    return [int(tokens * (0.75 + 0.5 * float(v))) for v in u]


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tokens: int, hidden: int):
    n = lengths(seed, world_size, tokens)[rank]
    return (randn((n, hidden), dtype_of(dtype), device, rank_generator(seed, rank, device)),)


def oracle(inputs: list[tuple], **_):
    full = torch.cat([inp[0] for inp in inputs])
    return [full.clone() for _ in inputs]
