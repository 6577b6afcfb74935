"""Node-aware all-to-all: rank r's j-th block of rows goes to rank j; rank r returns the blocks it received,
in source-rank order. The reference routes in two hops as Tutel's 2-D hierarchical all-to-all does: inside the
node, every rank collects the blocks bound for ranks with its own local index on any node; then the ranks with
the same local index exchange those node-aggregated bundles across nodes."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, node_groups, node_layout, rank_generator, randn


def solution(x: torch.Tensor, ranks_per_node: torch.Tensor) -> torch.Tensor:
    per_node = int(ranks_per_node)
    w = dist.get_world_size()
    nodes = w // per_node
    rows, cols = x.shape[0] // w, x.shape[1]
    intra, inter = node_groups(per_node)
    # Hop 1 (NVLink): block j = (node m, local l') goes to local peer l'; send buffer ordered (l', m).
    send = x.view(nodes, per_node, rows, cols).transpose(0, 1).contiguous()
    hop = torch.empty_like(send)  # (source local l_s, destination node m, rows, cols)
    dist.all_to_all_single(hop, send, group=intra)
    # Hop 2 (network): the bundle for node m travels to the rank with my local index there.
    send = hop.transpose(0, 1).contiguous()  # (m, l_s, ...)
    out = torch.empty_like(send)  # (source node n_s, source local l_s, ...) = source-rank order
    dist.all_to_all_single(out, send, group=inter)
    return out.view(w * rows, cols)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, rows: int, cols: int,
                ranks_per_node: int):
    node_layout(world_size, ranks_per_node)
    g = rank_generator(seed, rank, device)
    return (randn((world_size * rows, cols), dtype_of(dtype), device, g),
            torch.tensor(ranks_per_node, dtype=torch.int64, device=device))


def oracle(inputs: list[tuple], rows: int, **_):
    w = len(inputs)
    return [torch.cat([inputs[s][0][r * rows:(r + 1) * rows] for s in range(w)]) for r in range(w)]
