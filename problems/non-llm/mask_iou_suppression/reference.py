"""Distributed mask non-maximum suppression with mask IoU (SAM's automatic mask generator, with mask IoU in place
of box IoU). Masks are sharded across ranks; suppression is the global greedy one: visit all masks in descending
score order and keep a mask unless a kept mask overlaps it by IoU > 0.7, tested exactly as
10 * intersection > 7 * union in integer pixel counts. Each rank returns, for each of its masks, -1 if kept, or
the global index (rank * N + i) of the highest-scoring kept mask that suppresses it."""

import torch
import torch.distributed as dist

from problems.common import randint, rank_generator, shared_generator


def _overlaps(own: torch.Tensor, every: torch.Tensor) -> torch.Tensor:
    """[n, m] bool: 10 * |a & b| > 7 * |a | b| for own masks a and all masks b (flattened 0/1 rows)."""
    a, b = own.float(), every.float()
    inter = (a @ b.t()).round().long()  # exact: pixel counts stay far below 2^24
    union = a.sum(1).long()[:, None] + b.sum(1).long()[None, :] - inter
    return 10 * inter > 7 * union


def greedy(over: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Global greedy suppression from the full [M, M] overlap matrix: -1 for kept masks, else the index of the
    first kept mask (in score order) that overlaps it. Solved as the fixed point of keep[i] = no kept j before i
    overlaps i; each pass settles at least one more position, and the fixed point is the greedy answer."""
    order = torch.argsort(scores, descending=True)
    m = order.numel()
    before = torch.triu(torch.ones((m, m), dtype=torch.bool, device=over.device), diagonal=1)
    sup = over[order][:, order] & before  # sup[j, i]: j precedes i and overlaps it
    sup_f = sup.float()
    keep = torch.ones(m, dtype=torch.bool, device=over.device)
    while True:
        new = (keep.float() @ sup_f) == 0
        if torch.equal(new, keep):
            break
        keep = new
    by_sorted = torch.where(keep, -1, torch.argmax((sup & keep[:, None]).to(torch.int8), dim=0))
    by = torch.where(by_sorted >= 0, order[by_sorted.clamp(min=0)], -1)
    out = torch.empty_like(by)
    out[order] = by
    return out


def solution(masks: torch.Tensor, scores: torch.Tensor):
    w, rank = dist.get_world_size(), dist.get_rank()
    n = masks.shape[0]
    flat = masks.reshape(n, -1).contiguous()
    every = flat.new_empty((w * n, flat.shape[1]))
    dist.all_gather_into_tensor(every, flat)
    all_scores = scores.new_empty(w * n)
    dist.all_gather_into_tensor(all_scores, scores.contiguous())
    rows = _overlaps(flat, every).to(torch.uint8)  # this rank's rows of the overlap matrix
    over = rows.new_empty((w * n, w * n))
    dist.all_gather_into_tensor(over, rows)
    return greedy(over.bool(), all_scores)[rank * n:(rank + 1) * n].clone()


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, masks: int, height: int,
                width: int, objects: int):
    sg = shared_generator(seed, device)
    # Objects every rank sees (ellipses): each rank's masks are jittered copies, as different prompts and crops give.
    cy = randint(0, height, (objects,), device, sg)
    cx = randint(0, width, (objects,), device, sg)
    ry = randint(max(2, height // 6), max(3, height // 3), (objects,), device, sg)
    rx = randint(max(2, width // 6), max(3, width // 3), (objects,), device, sg)
    g = rank_generator(seed, rank, device)
    # Scores: i / (W * masks) for i = 0 .. W * masks - 1, so no two masks tie; a rank holds those with i = rank mod W,
    # in an order drawn from its own stream.
    scores = ((torch.randperm(masks, generator=g, device=device) * world_size + rank)
              .to(torch.float32) / (world_size * masks))
    # A third of a rank's masks outline objects only this rank sees (kept, as a rule); the rest are jittered copies
    # of the shared objects, which suppress one another across ranks.
    own = torch.rand((masks,), generator=g, device=device) < 1 / 3
    k = randint(0, objects, (masks,), device, g)
    ly, lx = randint(0, height, (masks,), device, g), randint(0, width, (masks,), device, g)
    jy, jx = max(1, height // 24), max(1, width // 24)
    my = (torch.where(own, ly, cy[k]) + randint(-jy, jy + 1, (masks,), device, g))[:, None, None]
    mx = (torch.where(own, lx, cx[k]) + randint(-jx, jx + 1, (masks,), device, g))[:, None, None]
    sy = (ry[k] * randint(90, 111, (masks,), device, g) // 100).clamp(min=1)[:, None, None]  # radii within 10 %
    sx = (rx[k] * randint(90, 111, (masks,), device, g) // 100).clamp(min=1)[:, None, None]
    y = torch.arange(height, device=device)[None, :, None]
    x = torch.arange(width, device=device)[None, None, :]
    inside = (y - my) ** 2 * sx ** 2 + (x - mx) ** 2 * sy ** 2 <= sx ** 2 * sy ** 2
    return inside.to(torch.uint8), scores


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    n = inputs[0][0].shape[0]
    masks = torch.cat([i[0] for i in inputs]).reshape(w * n, -1).long()
    scores = torch.cat([i[1] for i in inputs])
    inter = masks @ masks.t()
    area = masks.sum(1)
    union = area[:, None] + area[None, :] - inter
    over = (10 * inter > 7 * union).tolist()
    kept: list[int] = []
    by = [-1] * (w * n)
    for i in sorted(range(w * n), key=lambda j: -float(scores[j])):
        hit = next((j for j in kept if over[j][i]), None)  # kept is in score order
        if hit is None:
            kept.append(i)
        else:
            by[i] = hit
    by_t = torch.tensor(by, dtype=torch.int64)
    return [by_t[r * n:(r + 1) * n].clone() for r in range(w)]
