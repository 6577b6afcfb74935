"""Clipped importance-sampling policy loss (PPO / GRPO, asymmetric clip) over vocab-sharded logits, with its gradient.

logp from the sharded log-softmax (all-reduced max, then sum-exp and target logit), ratio = exp(logp - old),
loss_t = -min(ratio * A, clip(ratio, 1 - 0.2, 1 + 0.28) * A); the gradient of sum(mask * loss) / sum(mask) with
respect to the logits is coef_t * (onehot - softmax), coef_t zero on tokens whose clipped branch is taken."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, group_generator, randint, randn, shared_generator

CLIP_LOW, CLIP_HIGH = 0.2, 0.28
BAND = 0.01  # log-ratios are kept this far from the clip boundaries, so every token's branch is unambiguous


def solution(logits, target, old_logprobs, advantages, mask):
    rank = dist.get_rank()
    z = logits.float()
    shard = z.shape[-1]
    m = z.amax(dim=-1)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    e = torch.exp(z - m[:, None])
    local = target - rank * shard
    owned = (local >= 0) & (local < shard)
    picked = z.gather(-1, local.clamp(0, shard - 1)[:, None]).squeeze(-1)
    stats = torch.stack([e.sum(-1), torch.where(owned, picked, 0.0)])
    dist.all_reduce(stats)
    logp = stats[1] - m - stats[0].log()
    ratio = torch.exp(logp - old_logprobs)
    unclipped = ratio * advantages
    clipped = ratio.clamp(1 - CLIP_LOW, 1 + CLIP_HIGH) * advantages
    token_loss = -torch.minimum(unclipped, clipped) * mask
    active = unclipped <= clipped  # the ratio's own branch is the one selected, so it carries the gradient
    coef = torch.where(active, -advantages * ratio, 0.0) * mask / mask.sum()
    grad = e * (-coef / stats[0])[:, None]
    grad.scatter_add_(-1, local.clamp(0, shard - 1)[:, None], (coef * owned)[:, None])
    return token_loss, grad.to(logits.dtype)


def _shard(seed, rank, world_size, device, dt, target, tokens, vocab):
    """Rank `rank`'s logits, as stored (rounded to dt), with the sampled tokens planted high. Every rank needs every
    shard to build the shared old log-probs, so each shard comes from a stream of its own, which every rank draws
    alike and from which nothing else is drawn."""
    shard = vocab // world_size
    z = randn((tokens, shard), torch.float32, device, group_generator(seed, ("logits", rank), device), scale=2.0)
    local = target - rank * shard
    owned = (local >= 0) & (local < shard)
    z.scatter_add_(-1, local.clamp(0, shard - 1)[:, None], 6.0 * owned[:, None].float())
    return z.to(dt), local, owned


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tokens: int, vocab: int):
    dt = dtype_of(dtype)
    g = shared_generator(seed, device)
    target = randint(0, vocab, (tokens,), device, g)
    advantages = randn((tokens,), torch.float32, device, g)
    mask = (torch.rand((tokens,), generator=g, device=device) < 0.85).float()
    mask[0] = 1.0
    # The log-ratio of the current to the rollout policy, from a stream of its own that gives no rank any value: the
    # rank holds it only mixed into old_logprobs with the global logsumexp, which it must therefore get from its peers
    # (drawn from the stream of target, advantages and mask, a rank recovering that stream had both).
    drift = randn((tokens,), torch.float32, device, group_generator(seed, "drift", device), scale=0.2)
    low, high = (torch.log1p(torch.tensor(c)).item() for c in (-CLIP_LOW, CLIP_HIGH))
    # Token 0 (always counted) leaves the trust region on the side its advantage clips, so on every seed some token's
    # gradient is zeroed by the clip (16 tokens of the small preset may otherwise have none).
    drift[0] = high + BAND + drift[0].abs() if advantages[0] > 0 else low - BAND - drift[0].abs()
    for c in (low, high):
        d = drift - c
        drift = torch.where(d.abs() < BAND, c + torch.where(d < 0, -1.0, 1.0) * (BAND + d.abs()), drift)
    # The current policy's log-probs, which every rank rebuilds from every shard's stream.
    lse = torch.full((tokens,), float("-inf"), device=device)
    tgt = torch.zeros((tokens,), device=device)
    mine = None
    for j in range(world_size):
        z, local, owned = _shard(seed, j, world_size, device, dt, target, tokens, vocab)
        zf = z.float()
        lse = torch.logaddexp(lse, torch.logsumexp(zf, dim=-1))
        tgt += torch.where(owned, zf.gather(-1, local.clamp(0, zf.shape[-1] - 1)[:, None]).squeeze(-1), 0.0)
        if j == rank:
            mine = z
        del z, zf
    old_logprobs = (tgt - lse) - drift
    return mine, target, old_logprobs, advantages, mask


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    z = torch.cat([inp[0].to(torch.float64) for inp in inputs], dim=-1).requires_grad_()
    target, old, adv, mask = (x.to(torch.float64) if x.is_floating_point() else x for x in inputs[0][1:])
    logp = torch.log_softmax(z, dim=-1).gather(-1, target[:, None]).squeeze(-1)
    ratio = torch.exp(logp - old)
    per_token = -torch.minimum(ratio * adv, ratio.clamp(1 - CLIP_LOW, 1 + CLIP_HIGH) * adv)
    loss = (per_token * mask).sum() / mask.sum()
    (grad,) = torch.autograd.grad(loss, z)
    token_loss = (per_token * mask).detach().float()
    return [(token_loss, part.to(dt).contiguous()) for part in grad.chunk(w, dim=-1)]
