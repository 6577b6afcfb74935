"""Link-prediction evaluation of a distributed GNN, as GraphStorm runs it: every trainer scores its own test edges
(one positive score and K negative scores each), the scores of every trainer are exchanged so that each holds them
all, and the rank of every positive among its negatives is computed:

    ranking[i] = 1 + number of j with neg[i, j] > pos[i]        (a tie counts for the positive)

Trainers hold different numbers of edges; each returns the rankings of all edges, trainer by trainer."""

import torch
import torch.distributed as dist

from problems.common import rank_generator, shared_generator


def _exchange(x: torch.Tensor) -> torch.Tensor:
    """Every rank's rows of ``x``, in rank order, on every rank (sizes exchanged first: they differ)."""
    w, rank = dist.get_world_size(), dist.get_rank()
    sizes = torch.zeros(w, dtype=torch.int64, device=x.device)
    sizes[rank] = x.shape[0]
    dist.all_reduce(sizes)
    counts = sizes.tolist()
    out = x.new_empty((sum(counts), *x.shape[1:]))
    send = x.repeat(w, *([1] * (x.dim() - 1))).contiguous()  # the same rows to every rank
    dist.all_to_all_single(out, send, output_split_sizes=counts, input_split_sizes=[x.shape[0]] * w)
    return out


def solution(pos_score: torch.Tensor, neg_score: torch.Tensor) -> torch.Tensor:
    pos = _exchange(pos_score)
    neg = _exchange(neg_score)
    return 1 + (neg > pos[:, None]).sum(dim=1)


def _edges(seed: int, rank: int, edges: int) -> int:
    """This rank's number of test edges: edges x [0.75, 1.25], drawn per seed."""
    g = shared_generator(seed)
    scale = 0.75 + 0.5 * torch.rand((rank + 1,), generator=g)[rank]
    return int(edges * scale)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, edges: int,
                negatives: int):
    n = _edges(seed, rank, edges)
    g = rank_generator(seed, rank, device)
    # Scores of a half-trained model: positives a bit above the negatives on average, so rankings spread from 1 to
    # about K / 4 and are rarely 1.
    pos = torch.randn((n,), generator=g, device=g.device) + 1.5
    neg = torch.randn((n, negatives), generator=g, device=g.device)
    return pos.to(device), neg.to(device)


def oracle(inputs: list[tuple], **_):
    pos = torch.cat([inp[0] for inp in inputs])
    neg = torch.cat([inp[1] for inp in inputs])
    ranking = 1 + (neg > pos[:, None]).sum(dim=1)
    return [ranking.clone() for _ in inputs]
