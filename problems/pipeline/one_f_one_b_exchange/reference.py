"""1F1B steady-state exchange on a ring of stages: rank r sends `act` to (r+1) % W and `grad` to (r-1) % W,
and returns (act of rank r-1, grad of rank r+1). The wrap-around matches the interleaved schedule, where the
last stage's output feeds the first stage's next model chunk and gradients flow back the same way."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, rank_generator


def solution(act: torch.Tensor, grad: torch.Tensor):
    w, r = dist.get_world_size(), dist.get_rank()
    nxt, prev = (r + 1) % w, (r - 1) % w
    act_in = torch.empty_like(act)
    grad_in = torch.empty_like(grad)
    # Messages between one pair of ranks match in posting order, so the forward pair is posted before the
    # backward pair on every rank; with W=2 both go to the same peer.
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, act.contiguous(), nxt),
                                   dist.P2POp(dist.irecv, act_in, prev),
                                   dist.P2POp(dist.isend, grad.contiguous(), prev),
                                   dist.P2POp(dist.irecv, grad_in, nxt)])
    for req in reqs:
        req.wait()
    return act_in, grad_in


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, micro_batch: int, hidden: int):
    g = rank_generator(seed, rank, device)
    shape = (seq, micro_batch, hidden)
    return (randn(shape, dtype_of(dtype), device, g), randn(shape, dtype_of(dtype), device, g, scale=1e-2))


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    return [(inputs[(r - 1) % w][0].clone(), inputs[(r + 1) % w][1].clone()) for r in range(w)]
