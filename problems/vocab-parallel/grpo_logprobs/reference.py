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

from problems.common import dtype_of, randint, rank_generator, shared_generator

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


def _skeleton(sg: torch.Generator, rows: int, top_k: int, top_p: float):
    """Per position, every rank alike: HEAD candidate slots' grid levels (distinct, in random slot order), how far
    each may rise (up to the next candidate's level, so the order stays as drawn), and the target's slot, drawn from
    the filtered distribution at the drawn levels. Rows where, at some lift, a survivor's mass-above falls within
    MARGIN of p are drawn again: so the kept set is the same whatever the owners' lifts."""
    dev = sg.device
    level = torch.empty((rows, HEAD), dtype=torch.int64, device=dev)
    todo = torch.ones(rows, dtype=torch.bool, device=dev)
    while todo.any():
        n = int(todo.sum())
        level[todo] = torch.rand((n, 128), generator=sg, device=dev).argsort(dim=1)[:, :HEAD]
        lv, order = level.sort(dim=1, descending=True)
        room = torch.cat([torch.full((rows, 1), 128, device=dev), lv[:, :-1]], dim=1) - lv - 1
        low = (4 + lv[:, :top_k].double() / GRID).exp()
        high = (4 + (lv + room)[:, :top_k].double() / GRID).exp()
        # A survivor's mass-above grows with the lifts of those above it and shrinks with its own and those below.
        most = _above(high, low)
        least = _above(low, high)
        todo = ((most > top_p - MARGIN) & (least < top_p + MARGIN)).any(dim=1)
    room = torch.empty_like(room).scatter_(1, order, room)
    probs = low / low.sum(dim=1, keepdim=True)
    keep = (torch.cumsum(probs, dim=1) - probs) < top_p
    pick = torch.multinomial(torch.where(keep, probs, 0.0), 1, generator=sg)
    return level, room, order.gather(1, pick).squeeze(1)


def _above(upper: torch.Tensor, lower: torch.Tensor) -> torch.Tensor:
    """Each survivor's mass-above with the exp-logits ``upper`` for those above it and ``lower`` for it and below."""
    above = torch.cumsum(upper, dim=1) - upper
    return above / (above + lower.flip(1).cumsum(dim=1).flip(1))


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, batch: int, seq: int,
                vocab: int):
    dt = dtype_of(dtype)
    shard = vocab // world_size
    sg = shared_generator(seed, device)
    top_k = int(torch.randint(16, 49, (), generator=sg, device=sg.device))
    top_p = float(0.7 + 0.25 * torch.rand((), generator=sg, device=sg.device))
    rows = batch * seq
    # Candidate slot j belongs to rank j // per and sits in its own bucket of that rank's shard. The slots' levels
    # on the grid are every rank's alike, but each owner lifts its own candidates by a private draw (at most to the
    # next candidate's level, so no tie and the same kept set): no rank knows its peers' logits, or the answer,
    # before it hears from them. The target's position is every rank's alike (the target is an input of all).
    if HEAD % world_size or shard < HEAD // world_size:
        raise ValueError(f"{HEAD} candidates per position cannot be dealt to {world_size} shards of {shard}")
    per = HEAD // world_size
    bucket = shard // per
    level, room, target_slot = _skeleton(sg, rows, top_k, top_p)
    target_at = randint(0, bucket, (rows,), device, sg)
    target = (target_slot // per) * shard + (target_slot % per) * bucket + target_at
    # Every other logit is far below the candidates (at most 3 < 4), so only candidates can survive top-k.
    g = rank_generator(seed, rank, device)
    tail = torch.randn((rows, shard), generator=g, device=g.device).clamp_(-6, 3)
    slot = torch.arange(rank * per, (rank + 1) * per, device=device)
    at = randint(0, bucket, (rows, per), device, g)
    at = torch.where(target_slot[:, None] == slot, target_at[:, None], at)
    room = room[:, rank * per:(rank + 1) * per]
    lift = (torch.rand((rows, per), generator=g, device=g.device) * (room + 1)).long().minimum(room)
    vals = 4 + (level[:, rank * per:(rank + 1) * per] + lift).float() / GRID
    tail = tail.to(device)
    tail.scatter_(1, (slot - rank * per) * bucket + at, vals.to(device))
    return (tail.to(dt).view(batch, seq, shard), target.view(batch, seq).to(device),
            torch.tensor(top_k, dtype=torch.int64, device=device),
            torch.tensor(top_p, dtype=torch.float32, device=device))


def oracle(inputs: list[tuple], **_):
    z = torch.cat([inp[0].double() for inp in inputs], dim=-1)
    batch, seq, vocab = z.shape
    target, top_k, top_p = inputs[0][1], int(inputs[0][2]), float(inputs[0][3])
    out = filtered_logprobs(z.view(-1, vocab), target.reshape(-1), top_k, top_p).view(batch, seq).float()
    return [out.clone() for _ in inputs]
