"""Distributed tile rasterization of projected 2-D Gaussians (gsplat-style), Gaussians sharded by rank and
16 x 16-pixel tiles owned round-robin (tile t belongs to rank t % W).

Each rank sends every splat to the ranks owning a tile its pixel box touches; each owner sorts the splats of each
of its tiles by depth and alpha-composites them front to back."""

import math

import torch
import torch.distributed as dist

from problems.common import rank_generator

TILE = 16
CHUNK = 128  # tiles composited at once (bounds the memory of the padded per-tile splat lists)


def _tile_pairs(boxes: torch.Tensor, tiles_x: int):
    """(splat index, tile id) for every tile a splat's box [x0, y0, x1, y1) touches."""
    tx0, ty0 = boxes[:, 0] // TILE, boxes[:, 1] // TILE
    ntx = (boxes[:, 2] - 1) // TILE - tx0 + 1
    nty = (boxes[:, 3] - 1) // TILE - ty0 + 1
    count = ntx * nty
    splat = torch.repeat_interleave(torch.arange(boxes.shape[0], device=boxes.device), count)
    k = torch.arange(splat.numel(), device=boxes.device) - (torch.cumsum(count, 0) - count)[splat]
    tx, ty = tx0[splat] + k % ntx[splat], ty0[splat] + k // ntx[splat]
    return splat, ty * tiles_x + tx


def _composite(data: torch.Tensor, boxes: torch.Tensor, tile_ids: torch.Tensor, splat: torch.Tensor,
               tile_of_pair: torch.Tensor, tiles_x: int) -> torch.Tensor:
    """RGBA of the given tiles, (len(tile_ids), TILE, TILE, 4). data rows: mx, my, A, B, C, r, g, b, opacity, depth.
    (splat, tile_of_pair) are pairs with tile_of_pair an index into tile_ids."""
    dev = data.device
    n_tiles = tile_ids.numel()
    out = torch.zeros((n_tiles, TILE * TILE, 4), dtype=torch.float32, device=dev)
    # Front to back: sort pairs by depth, then (stably) by tile.
    o = torch.argsort(data[splat, 9], stable=True)
    splat, tile_of_pair = splat[o], tile_of_pair[o]
    o = torch.argsort(tile_of_pair, stable=True)
    splat, tile_of_pair = splat[o], tile_of_pair[o]
    count = torch.bincount(tile_of_pair, minlength=n_tiles)
    first = torch.cumsum(count, 0) - count
    slot = torch.arange(splat.numel(), device=dev) - first[tile_of_pair]
    iy, ix = torch.meshgrid(torch.arange(TILE, device=dev), torch.arange(TILE, device=dev), indexing="ij")
    for c0 in range(0, n_tiles, CHUNK):
        c1 = min(c0 + CHUNK, n_tiles)
        width = int(count[c0:c1].max()) if c1 > c0 else 0
        if width == 0:
            continue
        sel = (tile_of_pair >= c0) & (tile_of_pair < c1)
        idx = torch.full((c1 - c0, width), -1, dtype=torch.int64, device=dev)
        idx[tile_of_pair[sel] - c0, slot[sel]] = splat[sel]
        valid = idx >= 0
        d = data[idx.clamp(min=0)]  # (tiles, width, 10)
        b = boxes[idx.clamp(min=0)]
        t = tile_ids[c0:c1]
        px = ((t % tiles_x) * TILE)[:, None] + ix.reshape(-1)[None, :]  # (tiles, 256)
        py = ((t // tiles_x) * TILE)[:, None] + iy.reshape(-1)[None, :]
        dx = (px.float() + 0.5)[:, None, :] - d[:, :, 0:1]
        dy = (py.float() + 0.5)[:, None, :] - d[:, :, 1:2]
        quad = d[:, :, 2:3] * dx * dx + 2 * d[:, :, 3:4] * dx * dy + d[:, :, 4:5] * dy * dy
        inside = ((px[:, None, :] >= b[:, :, 0:1]) & (px[:, None, :] < b[:, :, 2:3])
                  & (py[:, None, :] >= b[:, :, 1:2]) & (py[:, None, :] < b[:, :, 3:4]) & valid[:, :, None])
        alpha = torch.where(inside, d[:, :, 8:9] * torch.exp(-0.5 * quad), 0.0)  # (tiles, width, 256)
        trans = torch.cumprod(1 - alpha, dim=1)
        before = torch.cat([torch.ones_like(trans[:, :1]), trans[:, :-1]], dim=1)
        weight = alpha * before
        out[c0:c1, :, :3] = torch.einsum("twp,twc->tpc", weight, d[:, :, 5:8])
        out[c0:c1, :, 3] = 1 - trans[:, -1]
    return out.view(n_tiles, TILE, TILE, 4)


def solution(means, conics, colors, opacities, depths, boxes, image_hw):
    w, r = dist.get_world_size(), dist.get_rank()
    img_h, img_w = image_hw.tolist()
    tiles_x = img_w // TILE
    n_tiles = (img_h // TILE) * tiles_x
    data = torch.cat([means, conics, colors, opacities[:, None], depths[:, None]], dim=1)
    splat, tile = _tile_pairs(boxes, tiles_x)
    # Each splat goes once to every rank owning one of its tiles.
    key = torch.unique(splat * w + tile % w)
    splat, dest = key // w, key % w
    order = torch.argsort(dest, stable=True)
    splat = splat[order]
    send_counts = torch.bincount(dest, minlength=w)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    s_split, r_split = send_counts.tolist(), recv_counts.tolist()
    n = sum(r_split)
    rdata = data.new_empty((n, data.shape[1]))
    dist.all_to_all_single(rdata, data[splat].contiguous(), r_split, s_split)
    rboxes = boxes.new_empty((n, 4))
    dist.all_to_all_single(rboxes, boxes[splat].contiguous(), r_split, s_split)
    splat, tile = _tile_pairs(rboxes, tiles_x)
    mine = tile % w == r
    my_tiles = torch.arange(r, n_tiles, w, device=means.device)
    return _composite(rdata, rboxes, my_tiles, splat[mine], tile[mine] // w, tiles_x)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                img_h: int, img_w: int, splats: int, max_scale: float):
    g = rank_generator(seed, rank)
    u = torch.rand((splats, 8), generator=g, dtype=torch.float64)
    mx, my = u[:, 0] * img_w, u[:, 1] * img_h
    s1, s2 = 0.5 + u[:, 2] * (max_scale - 0.5), 0.5 + u[:, 3] * (max_scale - 0.5)
    th = u[:, 4] * math.pi
    c, s = torch.cos(th), torch.sin(th)
    # Covariance R diag(s1^2, s2^2) R^T; its inverse (the conic) in closed form.
    a = c * c / s1 ** 2 + s * s / s2 ** 2
    b = c * s * (1 / s1 ** 2 - 1 / s2 ** 2)
    cc = s * s / s1 ** 2 + c * c / s2 ** 2
    radius = torch.ceil(3 * torch.maximum(s1, s2)).long()
    fx, fy = mx.floor().long(), my.floor().long()
    boxes = torch.stack([(fx - radius).clamp(0, img_w), (fy - radius).clamp(0, img_h),
                         (fx + radius + 1).clamp(0, img_w), (fy + radius + 1).clamp(0, img_h)], dim=1)
    means = torch.stack([mx, my], dim=1).float()
    conics = torch.stack([a, b, cc], dim=1).float()
    colors = u[:, 5:8].float()
    opacities = (0.1 + 0.8 * torch.rand(splats, generator=g, dtype=torch.float64)).float()
    # Depths distinct over all ranks without a shared draw: rank r holds r + 1, r + 1 + W, ... of 1..W*splats (the
    # ranks' depths interleave), in an order of its own.
    depths = (torch.randperm(splats, generator=g) * world_size + rank + 1).float()
    hw = torch.tensor([img_h, img_w], dtype=torch.int64)
    return tuple(t.to(device) for t in (means, conics, colors, opacities, depths, boxes, hw))


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    cat = [torch.cat([inp[i] for inp in inputs]) for i in range(6)]
    means, conics, colors, opacities, depths, boxes = [t.double() if t.is_floating_point() else t for t in cat]
    img_h, img_w = inputs[0][6].tolist()
    tiles_x = img_w // TILE
    n_tiles = (img_h // TILE) * tiles_x
    order = torch.argsort(depths)  # every splat of every rank, front to back
    means, conics, colors, opacities, boxes = means[order], conics[order], colors[order], opacities[order], boxes[order]
    outs = []
    for r in range(w):
        tiles = []
        for t in range(r, n_tiles, w):
            ys = torch.arange(TILE) + (t // tiles_x) * TILE
            xs = torch.arange(TILE) + (t % tiles_x) * TILE
            py, px = torch.meshgrid(ys, xs, indexing="ij")
            px, py = px.reshape(-1, 1), py.reshape(-1, 1)  # (256, 1) against (1, splats)
            dx, dy = px + 0.5 - means[:, 0], py + 0.5 - means[:, 1]
            quad = conics[:, 0] * dx ** 2 + 2 * conics[:, 1] * dx * dy + conics[:, 2] * dy ** 2
            inside = (px >= boxes[:, 0]) & (px < boxes[:, 2]) & (py >= boxes[:, 1]) & (py < boxes[:, 3])
            alpha = torch.where(inside, opacities * torch.exp(-0.5 * quad), 0.0)
            rgba = torch.zeros((TILE * TILE, 4), dtype=torch.float64)
            trans = torch.ones(TILE * TILE, dtype=torch.float64)
            for i in range(alpha.shape[1]):
                rgba[:, :3] += (alpha[:, i] * trans)[:, None] * colors[i]
                trans = trans * (1 - alpha[:, i])
            rgba[:, 3] = 1 - trans
            tiles.append(rgba.view(TILE, TILE, 4))
        outs.append(torch.stack(tiles).float().to(inputs[0][0].device))
    return outs
