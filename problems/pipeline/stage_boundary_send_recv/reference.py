"""Pipeline stage boundary as a ring: rank r sends its activation to rank (r+1) % W and returns the one
rank (r-1) % W sent. The wrap-around is the interleaved schedule's hop from the last stage to the first."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, rank_generator


def solution(act: torch.Tensor) -> torch.Tensor:
    w, r = dist.get_world_size(), dist.get_rank()
    recv = torch.empty_like(act)
    # Posting both sides in one batch lets every rank send and receive at once without deadlock.
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, act.contiguous(), (r + 1) % w),
                                   dist.P2POp(dist.irecv, recv, (r - 1) % w)])
    for req in reqs:
        req.wait()
    return recv


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                seq: int, micro_batch: int, hidden: int):
    g = rank_generator(seed, rank, device)
    return (randn((seq, micro_batch, hidden), dtype_of(dtype), device, g),)


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    return [inputs[(r - 1) % w][0].clone() for r in range(w)]
