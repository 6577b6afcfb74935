"""GRPO token log-probs under the sampler's top-k / top-p filter (NeMo-RL's DistributedLogprobWithSampling): the
policy's logits are sharded over the vocabulary; the log-prob of each target token must be taken from the same
filtered distribution vLLM sampled it from, and the filter needs each position's whole vocabulary.

Filter, per position (z = the position's logits over the whole vocabulary):
  top-k: keep the tokens whose logit is at least the k-th largest;
  top-p: over the softmax pi of the top-k survivors, keep token i iff the mass of survivors with a larger logit is
         below p (the most likely token is always kept);
  log-prob of the target = z_target - logsumexp(z over the kept tokens)."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, shared_generator

HEAD = 64  # candidate tokens per position that may survive top-k (top_k is at most 48 < HEAD)
GRID = 32  # candidate logits lie on 4 + m / GRID, m < 128: distinct and exact in bf16 (no ties anywhere that counts)
MARGIN = 1e-3  # no survivor's mass-above lies within this of p, so float32 and float64 agree on the kept set


def filtered_logprobs(z: torch.Tensor, target: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """Log-probs of ``target`` (rows) under top-k then top-p filtering of the rows of ``z`` (any float dtype)."""
    values, order = z.sort(dim=-1, descending=True)
    kept = values >= values[:, top_k - 1:top_k]  # top-k, ties at the threshold kept
    masked = values.masked_fill(~kept, float("-inf"))
    probs = torch.softmax(masked, dim=-1)
    above = torch.cumsum(probs, dim=-1) - probs  # mass of survivors ranked above (no ties among survivors)
    kept &= above < top_p
    masked = masked.masked_fill(~kept, float("-inf"))
    logz = torch.logsumexp(masked, dim=-1)
    return z.gather(-1, target[:, None]).squeeze(-1) - logz


def solution(logits, target, top_k, top_p):
    w, rank = dist.get_world_size(), dist.get_rank()
    batch, seq, shard = logits.shape
    rows = batch * seq // w
    # Vocab-parallel to batch-sequence-parallel: rank r gets rows [r*rows, (r+1)*rows) over the whole vocabulary.
    out = torch.empty((w, rows, shard), dtype=logits.dtype, device=logits.device)
    dist.all_to_all_single(out, logits.reshape(w, rows, shard).contiguous())
    z = out.permute(1, 0, 2).reshape(rows, w * shard).float()
    mine = target.reshape(-1)[rank * rows:(rank + 1) * rows]
    local = filtered_logprobs(z, mine, int(top_k), float(top_p))
    every = torch.empty(w * rows, dtype=torch.float32, device=logits.device)
    dist.all_gather_into_tensor(every, local)
    return every.view(batch, seq)


def _candidates(sg: torch.Generator, rows: int, vocab: int, top_k: int, top_p: float, dt: torch.dtype):
    """Per position: HEAD candidate ids (one per vocabulary bucket), their logits on the grid, and a target drawn
    from the filtered distribution; rows whose top-p boundary falls within MARGIN of p are drawn again."""
    bucket = vocab // HEAD
    ids = torch.randint(0, bucket, (rows, HEAD), generator=sg) + torch.arange(HEAD) * bucket
    vals = torch.empty((rows, HEAD), dtype=torch.float64)
    todo = torch.ones(rows, dtype=torch.bool)
    while todo.any():
        n = int(todo.sum())
        grid = torch.rand((n, 128), generator=sg).argsort(dim=1)[:, :HEAD]
        vals[todo] = (4 + grid.double() / GRID).to(dt).double()
        v, _ = vals.sort(dim=1, descending=True)
        probs = torch.softmax(v[:, :top_k], dim=1)
        above = torch.cumsum(probs, dim=1) - probs
        todo = ((above - top_p).abs() < MARGIN).any(dim=1)
    full_target = torch.empty(rows, dtype=torch.int64)
    v, order = vals.sort(dim=1, descending=True)
    probs = torch.softmax(v[:, :top_k], dim=1)
    keep = (torch.cumsum(probs, dim=1) - probs) < top_p
    pick = torch.multinomial(torch.where(keep, probs, 0.0), 1, generator=sg).squeeze(1)
    full_target = ids.gather(1, order[:, :top_k].gather(1, pick[:, None])).squeeze(1)
    return ids, vals, full_target


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, batch: int, seq: int,
                vocab: int):
    dt = dtype_of(dtype)
    shard = vocab // world_size
    sg = shared_generator(seed)
    top_k = int(torch.randint(16, 49, (), generator=sg))
    top_p = float(0.7 + 0.25 * torch.rand((), generator=sg))
    rows = batch * seq
    ids, vals, target = _candidates(sg, rows, vocab, top_k, top_p, dt)
    # Every other logit is far below the candidates (at most 3 < 4), so only candidates can survive top-k.
    g = rank_generator(seed, rank, device)
    tail = torch.randn((rows, shard), generator=g, device=g.device).clamp_(-6, 3)
    local = ids - rank * shard
    owned = (local >= 0) & (local < shard)
    tail = tail.to(device)
    r_idx = torch.arange(rows)[:, None].expand_as(ids)[owned]
    tail[r_idx.to(device), local[owned].to(device)] = vals[owned].float().to(device)
    return (tail.to(dt).view(batch, seq, shard), target.view(batch, seq).to(device),
            torch.tensor(top_k, dtype=torch.int64, device=device),
            torch.tensor(top_p, dtype=torch.float32, device=device))


def oracle(inputs: list[tuple], **_):
    z = torch.cat([inp[0].double() for inp in inputs], dim=-1)
    batch, seq, vocab = z.shape
    target, top_k, top_p = inputs[0][1], int(inputs[0][2]), float(inputs[0][3])
    out = filtered_logprobs(z.view(-1, vocab), target.reshape(-1), top_k, top_p).view(batch, seq).float()
    return [out.clone() for _ in inputs]
