"""Log-prob of the sampled token and the policy's entropy, per token, from hidden states and a vocab-sharded LM head.

The baseline walks the tokens in chunks so that only one chunk's logits exist at a time: a GEMM with the local
weight shard, then all-reduces of the max and of (sum exp, sum exp * z, target logit) across the vocab shards."""

import math

import torch
import torch.distributed as dist

from problems.common import dtype_of, randint, randn, rank_generator, shared_generator

CHUNK = 2048  # tokens per chunk in the baseline; not part of the statement


def solution(hidden, weight, target, temperature):
    rank = dist.get_rank()
    shard = weight.shape[0]
    local_target = target - rank * shard
    owned = (local_target >= 0) & (local_target < shard)
    logprobs, entropy = [], []
    for start in range(0, hidden.shape[0], CHUNK):
        end = min(start + CHUNK, hidden.shape[0])
        z = (hidden[start:end] @ weight.t()).float() / temperature
        m = z.amax(dim=-1)
        dist.all_reduce(m, op=dist.ReduceOp.MAX)
        e = torch.exp(z - m[:, None])
        tgt = z.gather(-1, local_target[start:end].clamp(0, shard - 1)[:, None]).squeeze(-1)
        stats = torch.stack([e.sum(-1), (e * z).sum(-1), torch.where(owned[start:end], tgt, 0.0)])
        dist.all_reduce(stats)
        log_total = stats[0].log()
        logprobs.append(stats[2] - m - log_total)
        entropy.append(m + log_total - stats[1] / stats[0])
    return torch.cat(logprobs), torch.cat(entropy)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                tokens: int, hidden: int, vocab: int):
    dt = dtype_of(dtype)
    g = shared_generator(seed, device)
    # Per-token scales spread the logits' standard deviation from 0.5 to 3: confident and uncertain positions.
    scale = torch.exp(torch.empty((tokens, 1), device=device).uniform_(math.log(0.25), math.log(1.5), generator=g))
    h = (randn((tokens, hidden), torch.float32, device, g) * scale).to(dt)
    target = randint(0, vocab, (tokens,), device, g)
    temperature = torch.empty((), device=device).uniform_(0.8, 1.2, generator=g)
    weight = randn((vocab // world_size, hidden), dt, device, rank_generator(seed, rank, device),
                   scale=2.0 / math.sqrt(hidden))
    return h, weight, target, temperature


def oracle(inputs: list[tuple], **_):
    hidden, _, target, temperature = inputs[0]
    weight = torch.cat([inp[1] for inp in inputs]).to(torch.float64)
    z = hidden.to(torch.float64) @ weight.t() / temperature.to(torch.float64)
    logp = torch.log_softmax(z, dim=-1)
    picked = logp.gather(-1, target[:, None]).squeeze(-1)
    entropy = -(logp.exp() * logp).sum(-1)
    return [(picked.float(), entropy.float()) for _ in inputs]
