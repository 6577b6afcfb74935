"""Switch-Transformer load-balancing loss for several MoE layers at once, over the tokens of all ranks.

For each layer: P_e = sum over all tokens of softmax(logits)[e], f_e = number of tokens whose top-k includes e,
loss = coeff * experts / (topk * N^2) * sum_e P_e * f_e, with N the total token count over ranks."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, rank_generator, shared_generator


def solution(logits: torch.Tensor, topk: torch.Tensor, coeff: torch.Tensor) -> torch.Tensor:
    topk, coeff = int(topk), float(coeff)
    layers, tokens, experts = logits.shape
    probs = torch.softmax(logits.float(), dim=-1)
    chosen = logits.topk(topk, dim=-1).indices.reshape(layers, tokens * topk)
    counts = torch.zeros((layers, experts), dtype=torch.float32, device=logits.device)
    counts.scatter_add_(1, chosen, torch.ones_like(chosen, dtype=torch.float32))
    # One all-reduce carries both statistics; float32 counts are exact far beyond these sizes.
    stats = torch.stack([probs.sum(dim=1), counts])
    dist.all_reduce(stats)
    n = tokens * dist.get_world_size()
    return (stats[0] * stats[1]).sum(dim=-1) * (coeff * experts / (topk * n * n))


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                layers: int, tokens: int, experts: int, topk: int, coeff: float):
    # Each layer's router favours some experts through a bias shared by all ranks; the bias grows with depth
    # so every layer has a different imbalance, hence a different loss.
    spread = torch.tensor([0.1 + 0.05 * l for l in range(layers)], device=device)[:, None, None]
    shared = shared_generator(seed, device)
    bias = randn((layers, 1, experts), torch.float32, device, shared) * spread
    # The coefficient varies by seed around the preset's (0.5x to 1.5x), so it is read, not assumed.
    scale = 0.5 + torch.rand((), generator=shared, device=shared.device).item()
    g = rank_generator(seed, rank, device)
    logits = (randn((layers, tokens, experts), torch.float32, device, g) + bias).to(dtype_of(dtype))
    return (logits, torch.tensor(topk, dtype=torch.int64, device=device),
            torch.tensor(coeff * scale, dtype=torch.float32, device=device))


def oracle(inputs: list[tuple], **_):
    logits = torch.cat([inp[0] for inp in inputs], dim=1).to(torch.float64)
    topk, coeff = int(inputs[0][1]), float(inputs[0][2])
    layers, n, experts = logits.shape
    probs = torch.softmax(logits, dim=-1).sum(dim=1)
    chosen = logits.topk(topk, dim=-1).indices
    counts = torch.nn.functional.one_hot(chosen, experts).sum(dim=(1, 2)).to(torch.float64)
    loss = (probs * counts).sum(dim=-1) * (coeff * experts / (topk * n * n))
    return [loss.to(inputs[0][0].dtype) for _ in inputs]
