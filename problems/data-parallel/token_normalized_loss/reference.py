"""Token-normalised loss over gradient-accumulation micro-batches and data-parallel ranks: every micro-batch's summed
cross-entropy is divided by the number of valid (non-padding) tokens of the whole optimizer step, counted over every
micro-batch of every rank, so a padded micro-batch weighs what its tokens weigh. The count needs an all-reduce
before any micro-batch's loss or gradient can be scaled."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn

IGNORE = -100  # the label of padding positions


def solution(logits: torch.Tensor, labels: torch.Tensor):
    valid = labels != IGNORE
    count = valid.sum().reshape(1).float()
    dist.all_reduce(count)  # valid tokens of the whole step, every rank's micro-batches
    micro, tokens, vocab = logits.shape
    losses = torch.empty(micro, dtype=torch.float32, device=logits.device)
    grads = torch.empty_like(logits)
    for m in range(micro):  # one micro-batch at a time, as gradient accumulation runs them
        z = logits[m].float()
        logp = torch.log_softmax(z, dim=-1)
        safe = labels[m].clamp(min=0)
        nll = -logp.gather(-1, safe[:, None]).squeeze(-1) * valid[m]
        losses[m] = nll.sum() / count[0]
        g = logp.exp()
        g[torch.arange(tokens, device=z.device), safe] -= 1
        grads[m] = (g * (valid[m, :, None] / count[0])).to(logits.dtype)
    return losses, grads


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, micro: int, tokens: int,
                vocab: int):
    g = rank_generator(seed, rank, device)
    logits = randn((micro, tokens, vocab), dtype_of(dtype), device, g, scale=3.0)
    labels = torch.randint(0, vocab, (micro, tokens), generator=g, device=g.device).to(device)
    # Each micro-batch is padded after a random number of valid tokens (20 % to 100 %): counts differ a lot between
    # micro-batches and ranks, which is what the global normalisation is for.
    lengths = (tokens * (0.2 + 0.8 * torch.rand((micro,), generator=g, device=g.device))).long().to(device)
    labels[torch.arange(tokens, device=device)[None, :] >= lengths[:, None]] = IGNORE
    return logits, labels


def oracle(inputs: list[tuple], **_):
    count = sum(int((labels != IGNORE).sum()) for _, labels in inputs)
    out = []
    for logits, labels in inputs:
        valid = labels != IGNORE
        logp = torch.log_softmax(logits.double(), dim=-1)
        safe = labels.clamp(min=0)
        nll = -logp.gather(-1, safe[..., None]).squeeze(-1) * valid
        onehot = torch.nn.functional.one_hot(safe, logits.shape[-1]).double()
        grads = (logp.exp() - onehot) * valid[..., None] / count
        out.append(((nll.sum(dim=-1) / count).float(), grads.to(logits.dtype)))
    return out
