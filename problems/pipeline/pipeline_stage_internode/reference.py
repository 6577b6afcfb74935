"""Pipeline stage boundary across nodes: node n is pipeline stage n, its ranks a tensor-parallel group holding
identical activations. Every rank returns the activations of the previous stage (node n-1, wrapping to the last
node), for every micro-batch. The reference does Megatron's scatter-gather: local rank l sends only slice l of
each micro-batch to local rank l of the next node, and the node re-assembles the slices with an all-gather."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, group_generator, node_groups, node_layout, randn


def solution(act: torch.Tensor, ranks_per_node: torch.Tensor) -> torch.Tensor:
    per_node = int(ranks_per_node)
    w, rank = dist.get_world_size(), dist.get_rank()
    nodes = w // per_node
    intra, _ = node_groups(per_node)
    if nodes == 1:  # one stage: its own activations come back
        return act.clone()
    node, local = divmod(rank, per_node)
    nxt = (node + 1) % nodes * per_node + local
    prev = (node - 1) % nodes * per_node + local
    flat = act.reshape(act.shape[0], -1)
    chunk = flat.shape[1] // per_node
    out = torch.empty_like(flat)
    for m in range(flat.shape[0]):  # one micro-batch at a time, as the schedule hands them over
        piece = flat[m, local * chunk:(local + 1) * chunk].contiguous()
        got = torch.empty_like(piece)
        for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, piece, nxt), dist.P2POp(dist.irecv, got, prev)]):
            req.wait()
        dist.all_gather_into_tensor(out[m], got, group=intra)
    return out.view_as(act)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, micro_batches: int,
                seq: int, micro_batch: int, hidden: int, ranks_per_node: int):
    node_layout(world_size, ranks_per_node)
    if (seq * micro_batch * hidden) % ranks_per_node:
        raise ValueError("a micro-batch's elements must divide by ranks_per_node")
    # Tensor-parallel ranks of one stage hold the same activation: drawn from the node's own stream.
    g = group_generator(seed, rank // ranks_per_node, device)
    return (randn((micro_batches, seq, micro_batch, hidden), dtype_of(dtype), device, g),
            torch.tensor(ranks_per_node, dtype=torch.int64, device=device))


def oracle(inputs: list[tuple], ranks_per_node: int, **_):
    w = len(inputs)
    nodes = w // ranks_per_node
    return [inputs[((r // ranks_per_node - 1) % nodes) * ranks_per_node][0].clone() for r in range(w)]
