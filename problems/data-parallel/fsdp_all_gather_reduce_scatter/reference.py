"""FSDP linear layer: the weight lives as flat shards; forward all-gathers it, backward reduce-scatters the
averaged weight gradient so each rank keeps only the gradient of the shard it owns."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn


def solution(x, weight_shard, grad_out):
    world = dist.get_world_size()
    out_features, in_features = grad_out.shape[1], x.shape[1]
    flat = torch.empty(weight_shard.numel() * world, dtype=weight_shard.dtype, device=weight_shard.device)
    dist.all_gather_into_tensor(flat, weight_shard)
    y = x @ flat.view(out_features, in_features).t()
    grad_weight = grad_out.t() @ x
    grad_shard = torch.empty_like(weight_shard)
    dist.reduce_scatter_tensor(grad_shard, grad_weight.reshape(-1))
    return y, grad_shard.div_(world)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tokens: int,
                in_features: int, out_features: int):
    g = rank_generator(seed, rank, device)
    dt = dtype_of(dtype)
    x = randn((tokens, in_features), dt, device, g)
    weight_shard = randn((out_features * in_features // world_size,), dt, device, g, scale=in_features ** -0.5)
    grad_out = randn((tokens, out_features), dt, device, g, scale=tokens ** -0.5)
    return x, weight_shard, grad_out


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    dt = inputs[0][0].dtype
    x = [inp[0].double() for inp in inputs]
    weight = torch.cat([inp[1].double() for inp in inputs]).view(inputs[0][2].shape[1], inputs[0][0].shape[1])
    mean_grad = sum(inp[2].double().t() @ xi for inp, xi in zip(inputs, x)) / world
    shards = mean_grad.reshape(-1).chunk(world)
    return [((x[r] @ weight.t()).to(dt), shards[r].to(dt)) for r in range(world)]
