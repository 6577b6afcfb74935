"""Two-shot: reduce-scatter the partials in float32, add the residual and normalize only this rank's rows, then
all-gather both results."""

import torch
import torch.distributed as dist


def solution(partial, residual, weight):
    w, r = dist.get_world_size(), dist.get_rank()
    t = partial.shape[0] // w
    mine = torch.empty((t, partial.shape[1]), dtype=torch.float32, device=partial.device)
    dist.reduce_scatter_tensor(mine, partial.float().contiguous())
    res = mine + residual[r * t : (r + 1) * t].float()
    normed = res / torch.sqrt(res.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight.float()
    both = torch.stack([normed, res]).to(partial.dtype)
    gathered = torch.empty((w, 2, t, partial.shape[1]), dtype=partial.dtype, device=partial.device)
    dist.all_gather_into_tensor(gathered.view(w * 2 * t, -1), both.view(2 * t, -1))
    out = gathered.transpose(0, 1).reshape(2, w * t, -1)
    return out[0].contiguous(), out[1].contiguous()
