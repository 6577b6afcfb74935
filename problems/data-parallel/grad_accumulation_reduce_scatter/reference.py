"""Megatron-style gradient accumulation: every micro-batch's weight gradient is added to an fp32 main_grad buffer
without communication; after the last micro-batch the buffer is reduce-scattered and scaled by 1/W, so each rank
keeps the averaged gradient of the shard its distributed optimizer owns."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn


def solution(x, grad_out):
    world = dist.get_world_size()
    micro, out_features, in_features = x.shape[0], grad_out.shape[2], x.shape[2]
    main_grad = torch.zeros((out_features, in_features), dtype=torch.float32, device=x.device)
    for m in range(micro):
        main_grad += grad_out[m].t() @ x[m]  # the bit16 weight gradient, added to the fp32 buffer
    shard = torch.empty(main_grad.numel() // world, dtype=torch.float32, device=x.device)
    dist.reduce_scatter_tensor(shard, main_grad.view(-1))
    return shard / world


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, micro_batches: int,
                tokens: int, in_features: int, out_features: int):
    g = rank_generator(seed, rank, device)
    dt = dtype_of(dtype)
    x = randn((micro_batches, tokens, in_features), dt, device, g)
    # The loss is averaged over micro-batches and tokens, so each micro-batch's dL/dy is scaled down accordingly.
    grad_out = randn((micro_batches, tokens, out_features), dt, device, g, scale=(micro_batches * tokens) ** -0.5)
    return x, grad_out


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    total = sum(torch.einsum("mto,mti->oi", dy.double(), x.double()) for x, dy in inputs) / world
    return [chunk.float() for chunk in total.reshape(-1).chunk(world)]
