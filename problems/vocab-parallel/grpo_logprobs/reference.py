"""GRPO log-probs (NeMo-RL): the policy's logits are sharded over the vocabulary; the log-prob of the token that
followed each position needs the global log-softmax normaliser and the logit from the rank owning that token."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randint, rank_generator, randn, shared_generator


def solution(logits, input_ids):
    rank = dist.get_rank()
    x = logits[:, :-1].float()  # position t predicts input_ids[:, t + 1]; the last position predicts nothing
    shard = x.shape[-1]
    logits_max = x.amax(dim=-1)
    dist.all_reduce(logits_max, op=dist.ReduceOp.MAX)
    x = x - logits_max[..., None]
    local = input_ids[:, 1:] - rank * shard
    outside = (local < 0) | (local >= shard)
    picked = x.gather(-1, local.clamp(0, shard - 1)[..., None]).squeeze(-1).masked_fill(outside, 0.0)
    both = torch.stack([picked, x.exp().sum(dim=-1)])
    dist.all_reduce(both)
    return both[0] - both[1].log()


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, batch: int, seq: int,
                vocab: int):
    shard = vocab // world_size
    input_ids = randint(0, vocab, (batch, seq), device, shared_generator(seed, device))
    logits = randn((batch, seq, shard), torch.float32, device, rank_generator(seed, rank, device), scale=2.0)
    # The sequences were sampled from this policy, so the sampled next token usually has a high logit.
    nxt = input_ids[:, 1:] - rank * shard
    owned = (nxt >= 0) & (nxt < shard)
    logits[:, :-1].scatter_add_(-1, nxt.clamp(0, shard - 1)[..., None], 6.0 * owned[..., None].float())
    return logits.to(dtype_of(dtype)), input_ids


def oracle(inputs: list[tuple], **_):
    logits = torch.cat([inp[0].double() for inp in inputs], dim=-1)[:, :-1]
    ids = inputs[0][1][:, 1:]
    logprobs = torch.log_softmax(logits, dim=-1).gather(-1, ids[..., None]).squeeze(-1)
    return [logprobs.float() for _ in inputs]
