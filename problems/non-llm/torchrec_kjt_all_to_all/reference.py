"""KJT all-to-all for table-wise sharded embeddings: rank r holds a KeyedJaggedTensor of every feature for its
local batch; feature f's table lives on rank owner[f]. Each owner receives, for each of its features, the lengths
and ids of every rank's samples, and returns them feature-major: feature, then source rank, then sample."""

import torch
import torch.distributed as dist

from problems.common import randint, rank_generator, shared_generator


def _segments(sizes: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Indices that gather the jagged segments of the given sizes (laid out back to back) in the given order."""
    starts = torch.cumsum(sizes, 0) - sizes
    sizes, starts = sizes[order], starts[order]
    within = torch.arange(int(sizes.sum()), device=sizes.device) - torch.repeat_interleave(torch.cumsum(sizes, 0) - sizes, sizes)
    return torch.repeat_interleave(starts, sizes) + within


def solution(lengths: torch.Tensor, values: torch.Tensor, owner: torch.Tensor):
    w, rank = dist.get_world_size(), dist.get_rank()
    features, batch = lengths.shape
    # Features grouped by destination (ascending feature ids inside each group).
    send_features = torch.argsort(owner, stable=True)
    per_feature = lengths.sum(1)
    send_values = values[_segments(per_feature, send_features)]
    send_lengths = lengths[send_features].reshape(-1)
    owned = torch.bincount(owner, minlength=w)
    mine = int(owned[rank])
    recv_lengths = lengths.new_empty(w * mine * batch)
    dist.all_to_all_single(recv_lengths, send_lengths, [mine * batch] * w, (owned * batch).tolist())
    recv_lengths = recv_lengths.view(w, mine, batch)
    value_splits = torch.zeros(w, dtype=torch.int64, device=lengths.device).index_add_(0, owner, per_feature)
    recv_values = values.new_empty(int(recv_lengths.sum()))
    dist.all_to_all_single(recv_values, send_values, recv_lengths.sum((1, 2)).tolist(), value_splits.tolist())
    # Arrived (source rank, feature); the output is (feature, source rank).
    seg = recv_lengths.sum(2).reshape(-1)
    order = torch.arange(w * mine, device=lengths.device).view(w, mine).t().reshape(-1)
    out_values = recv_values[_segments(seg, order)]
    return recv_lengths.permute(1, 0, 2).reshape(mine, w * batch), out_values


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, batch: int,
                features: int, mean_len: int, num_embeddings: int):
    if features < world_size:
        raise ValueError("every rank owns at least one feature: features >= W")
    sg = shared_generator(seed, "cpu")
    # Uneven table-wise plan: every rank gets one feature, the rest go anywhere.
    perm = torch.randperm(features, generator=sg)
    owner = torch.randint(0, world_size, (features,), generator=sg)
    owner[perm[:world_size]] = torch.arange(world_size)
    pooling = torch.randint(1, 2 * mean_len, (features, 1), generator=sg)  # each feature's mean ids per sample
    g = rank_generator(seed, rank, "cpu")
    lengths = (torch.rand((features, batch), generator=g) * (2 * pooling + 1)).floor().to(torch.int64)
    values = randint(0, num_embeddings, (int(lengths.sum()),), device, rank_generator(seed, rank, device))
    return lengths.to(device), values, owner.to(device)


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    owner = inputs[0][2]
    out = []
    for r in range(w):
        feats = torch.nonzero(owner == r).flatten().tolist()
        lens, vals = [], []
        for f in feats:
            row = []
            for lengths, values, _ in inputs:
                offset = int(lengths[:f].sum())
                row.append(lengths[f])
                vals.append(values[offset:offset + int(lengths[f].sum())])
            lens.append(torch.cat(row))
        out.append((torch.stack(lens), torch.cat(vals)))
    return out
