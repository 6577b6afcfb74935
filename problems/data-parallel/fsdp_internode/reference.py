"""HSDP (hybrid-sharded data parallel) around one linear layer: the flat weight is sharded over the ranks of a
node and replicated across nodes. Forward all-gathers the shards inside the node; backward reduce-scatters the
weight gradient inside the node, then all-reduces each shard across nodes, averaged over all W ranks."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, group_generator, node_groups, node_layout, rank_generator, randn


def solution(x, weight_shard, grad_out, ranks_per_node):
    per_node = int(ranks_per_node)
    intra, inter = node_groups(per_node)
    out_features, in_features = grad_out.shape[1], x.shape[1]
    flat = weight_shard.new_empty(weight_shard.numel() * per_node)
    dist.all_gather_into_tensor(flat, weight_shard, group=intra)
    y = x @ flat.view(out_features, in_features).t()
    grad_weight = grad_out.t() @ x
    grad_shard = torch.empty_like(weight_shard)
    dist.reduce_scatter_tensor(grad_shard, grad_weight.reshape(-1), group=intra)
    dist.all_reduce(grad_shard, group=inter)
    return y, grad_shard.div_(dist.get_world_size())


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, tokens: int,
                in_features: int, out_features: int, ranks_per_node: int):
    node_layout(world_size, ranks_per_node)
    dt = dtype_of(dtype)
    # The weight is the same model on every node, so the ranks of one node-local index hold the same shard: each
    # rank draws only that shard, from the stream of its node-local index (group_generator; a slice of one shared
    # draw would give every rank its peers' shards). x and grad_out are this rank's own.
    local = rank % ranks_per_node
    size = out_features * in_features // ranks_per_node
    weight_shard = randn((size,), dt, device, group_generator(seed, local, device),
                         scale=in_features ** -0.5)
    g = rank_generator(seed, rank, device)
    x = randn((tokens, in_features), dt, device, g)
    grad_out = randn((tokens, out_features), dt, device, g, scale=tokens ** -0.5)
    return x, weight_shard, grad_out, torch.tensor(ranks_per_node, dtype=torch.int64, device=device)


def oracle(inputs: list[tuple], ranks_per_node: int, **_):
    world = len(inputs)
    dt = inputs[0][0].dtype
    out_features, in_features = inputs[0][2].shape[1], inputs[0][0].shape[1]
    weight = torch.cat([inputs[l][1].double() for l in range(ranks_per_node)]).view(out_features, in_features)
    mean_grad = sum(inp[2].double().t() @ inp[0].double() for inp in inputs) / world
    shards = mean_grad.reshape(-1).chunk(ranks_per_node)
    return [((inputs[r][0].double() @ weight.t()).to(dt), shards[r % ranks_per_node].to(dt)) for r in range(world)]
