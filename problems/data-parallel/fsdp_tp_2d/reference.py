"""2-D parallelism on a (W/2) x 2 mesh, rank = dp_index * 2 + tp_index: the MLP's weights are split over tp
(fc1 by output rows, fc2 by input columns), and each tp half is FSDP-sharded flat over the dp group. A rank
gathers its tp halves over dp, computes its partial MLP output, and the tp pair all-reduces it."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import dtype_of, group_generator, randn, rank_generator

TP = 2
_MESHES: dict = {}


def _groups():
    """(dp group of this rank, tp group of this rank), created once per process group."""
    world, rank = dist.get_world_size(), dist.get_rank()
    key = (id(dist.group.WORLD), world)
    if key not in _MESHES:
        dp = [dist.new_group([d * TP + t for d in range(world // TP)]) for t in range(TP)]
        tp = [dist.new_group([d * TP + t for t in range(TP)]) for d in range(world // TP)]
        _MESHES[key] = (dp, tp)
    dp, tp = _MESHES[key]
    return dp[rank % TP], tp[rank // TP]


def solution(x, w1_shard, w2_shard):
    dp_group, tp_group = _groups()
    dp = dist.get_world_size() // TP
    hidden = x.shape[1]
    half = w1_shard.numel() * dp // hidden  # ffn / TP
    w1 = torch.empty(dp * w1_shard.numel(), dtype=x.dtype, device=x.device)
    w2 = torch.empty(dp * w2_shard.numel(), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(w1, w1_shard, group=dp_group)
    work2 = dist.all_gather_into_tensor(w2, w2_shard, group=dp_group, async_op=True)
    h = F.gelu(x @ w1.view(half, hidden).t())
    work2.wait()
    y = h @ w2.view(hidden, half).t()
    dist.all_reduce(y, group=tp_group)
    return y


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tokens: int, hidden: int,
                ffn: int):
    dp, d = world_size // TP, rank // TP
    n = ffn // TP * hidden // dp  # elements of a dp shard of one tp half of fc1 (and of fc2)
    dt = dtype_of(dtype)
    # x is dp index d's micro-batch, the same on both ranks of its tp pair: drawn from the pair's own stream.
    x = randn((tokens, hidden), dt, device, group_generator(seed, d, device))
    # Each rank draws only its shard of each weight from its own generator (a slice of one shared draw would give
    # every rank its peers' shards): dp slice d of its tp half (rank % TP) of fc1's output rows (column-parallel) and of
    # fc2's input columns (row-parallel), flat and row-major; the oracle concatenates them into the full weights.
    g = rank_generator(seed, rank, device)
    w1_shard = randn((n,), dt, device, g, scale=hidden ** -0.5)
    w2_shard = randn((n,), dt, device, g, scale=ffn ** -0.5)
    return x, w1_shard, w2_shard


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    dp = world // TP
    dt = inputs[0][0].dtype
    hidden = inputs[0][0].shape[1]
    w1 = torch.cat([torch.cat([inputs[d * TP + t][1].double() for d in range(dp)]).view(-1, hidden)
                    for t in range(TP)])                                            # [ffn, hidden]
    w2 = torch.cat([torch.cat([inputs[d * TP + t][2].double() for d in range(dp)]).view(hidden, -1)
                    for t in range(TP)], dim=1)                                     # [hidden, ffn]
    return [(F.gelu(inp[0].double() @ w1.t()) @ w2.t()).to(dt) for inp in inputs]
