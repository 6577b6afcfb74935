"""Exchanges each pair's rows with batched isend/irecv instead of one all-to-all."""

import torch
import torch.distributed as dist


def solution(features, send_idx, send_counts, recv_counts):
    rank, world = dist.get_rank(), dist.get_world_size()
    sc, rc = send_counts.tolist(), recv_counts.tolist()
    send_off = [sum(sc[:d]) for d in range(world)]
    recv = [torch.empty((rc[s], features.shape[1]), dtype=features.dtype, device=features.device) for s in range(world)]
    ops = []
    for peer in range(world):
        if peer == rank:
            continue
        if sc[peer]:
            rows = features[send_idx[send_off[peer] : send_off[peer] + sc[peer]]].contiguous()
            ops.append(dist.P2POp(dist.isend, rows, peer))
        if rc[peer]:
            ops.append(dist.P2POp(dist.irecv, recv[peer], peer))
    if ops:
        for req in dist.batch_isend_irecv(ops):
            req.wait()
    return torch.cat([features, *recv])
