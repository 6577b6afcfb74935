import torch
import torch.distributed as dist


def solution(x, topk_ids, topk_weights, experts):
    experts = int(experts)
    # Megatron's formulation: a dense (tokens, experts) routing map, read expert-major with masked_select;
    # the counts come from an all-gather instead of an all-to-all.
    w, r = dist.get_world_size(), dist.get_rank()
    tokens = x.shape[0]
    local = experts // w
    routing_map = torch.zeros((tokens, experts), dtype=torch.bool, device=x.device)
    routing_map.scatter_(1, topk_ids, True)
    prob_map = torch.zeros((tokens, experts), dtype=topk_weights.dtype, device=x.device)
    prob_map.scatter_(1, topk_ids, topk_weights)
    token_idx = torch.arange(tokens, device=x.device).unsqueeze(0).expand(experts, tokens)
    picked = token_idx.masked_select(routing_map.t())
    permuted = x.index_select(0, picked)
    probs = prob_map.t().masked_select(routing_map.t())
    counts = routing_map.sum(0)
    all_counts = [torch.empty_like(counts) for _ in range(w)]
    dist.all_gather(all_counts, counts)
    return permuted, probs, torch.stack(all_counts)[:, r * local : (r + 1) * local].contiguous()
