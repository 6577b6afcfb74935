"""Wrong: sends only the codes and dequantises every rank's codes with the owner's own block scales."""

import torch
import torch.distributed as dist


def solution(grad, main_grad):
    world, rank = dist.get_world_size(), dist.get_rank()
    x = grad.float().view(-1, 128)
    amax = x.abs().amax(dim=1, keepdim=True)
    scale = torch.where(amax > 0, amax / torch.full_like(amax, 448.0), torch.ones_like(amax))
    codes = (x / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8).reshape(-1)
    recv = torch.empty_like(codes)
    dist.all_to_all_single(recv, codes)
    own = scale.view(world, -1, 1)[rank]
    vals = recv.view(torch.float8_e4m3fn).float().view(world, -1, 128) * own
    return main_grad + (vals.sum(0) / world).view(-1)
