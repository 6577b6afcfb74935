"""Wrong: lays the scale grid out column-block-major ([cols/128, rows/128] read as [rows/128, cols/128])."""

import torch
import torch.distributed as dist


def solution(shard):
    world = dist.get_world_size()
    r, c = shard.shape
    tiles = shard.float().view(r // 128, 128, c // 128, 128)
    amax = tiles.abs().amax(dim=(1, 3))
    scale = torch.where(amax > 0, amax / torch.full_like(amax, 448.0), torch.ones_like(amax))
    codes = (tiles / scale[:, None, :, None]).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)
    all_codes = torch.empty((world * r, c), dtype=torch.uint8, device=shard.device)
    dist.all_gather_into_tensor(all_codes, codes.reshape(r, c))
    parts = [torch.empty_like(scale) for _ in range(world)]
    dist.all_gather(parts, scale.contiguous())
    grid = torch.cat(parts)  # [R, C] tiles
    wrong = grid.t().contiguous().view(grid.shape)  # column-major bytes read back row-major
    R, C = grid.shape
    vals = all_codes.view(torch.float8_e4m3fn).float().view(R, 128, C, 128) * wrong.view(R, 1, C, 1)
    return vals.view(world * r, c).to(shard.dtype), wrong
