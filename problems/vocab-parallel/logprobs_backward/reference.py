"""Backward of vocab-parallel log-probs: d logp[t] / d z[t, v] = onehot(target[t])[v] - softmax(z[t])[v], scaled by
the upstream gradient. The softmax needs the global max and sum of exponentials; only the rank owning the target
id adds the one-hot part."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randint, randn, rank_generator, shared_generator


def solution(logits, target, grad_output):
    rank = dist.get_rank()
    z = logits.float()
    shard = z.shape[-1]
    m = z.amax(dim=-1)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    e = torch.exp(z - m[:, None])
    total = e.sum(dim=-1)
    dist.all_reduce(total)
    grad = e * (-grad_output / total)[:, None]
    local = target - rank * shard
    owned = (local >= 0) & (local < shard)
    grad.scatter_add_(-1, local.clamp(0, shard - 1)[:, None], (grad_output * owned)[:, None])
    return grad.to(logits.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tokens: int, vocab: int):
    shard = vocab // world_size
    g = shared_generator(seed, device)
    target = randint(0, vocab, (tokens,), device, g)
    grad_output = randn((tokens,), torch.float32, device, g)
    logits = randn((tokens, shard), torch.float32, device, rank_generator(seed, rank, device), scale=2.0)
    # Sampled tokens usually have a high logit under the policy that sampled them.
    local = target - rank * shard
    owned = (local >= 0) & (local < shard)
    logits.scatter_add_(-1, local.clamp(0, shard - 1)[:, None], 6.0 * owned[:, None].float())
    return logits.to(dtype_of(dtype)), target, grad_output


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    z = torch.cat([inp[0].to(torch.float64) for inp in inputs], dim=-1).requires_grad_()
    target, grad_output = inputs[0][1], inputs[0][2].to(torch.float64)
    logp = torch.log_softmax(z, dim=-1).gather(-1, target[:, None]).squeeze(-1)
    (grad,) = torch.autograd.grad(logp, z, grad_output)
    return [part.to(dt).contiguous() for part in grad.chunk(w, dim=-1)]
