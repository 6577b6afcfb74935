"""Magi-1's tile-parallel VAE decode. The latent video is cut into overlapping spatial tiles (stride 3/4 of a tile);
the tiles are dealt out over the ranks (largest first, round robin), each rank decodes its own, the decoded tiles
are all-gathered, and every tile is blended linearly with the raw decoded tiles above and to its left over a
quarter-tile band, cropped to the stride and assembled into the full video on every rank."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from problems.common import dtype_of, randn, shared_generator

OVERLAP = 0.25


def tiling(height: int, width: int, tile: int) -> list[tuple[int, int, int, int]]:
    """(row, col, h0, w0) of every tile in raster order; a tile covers [h0, h0 + tile) x [w0, w0 + tile), clipped."""
    stride = int(tile * (1 - OVERLAP))
    rows, cols = -(-height // stride), -(-width // stride)
    return [(i, j, i * stride, j * stride) for i in range(rows) for j in range(cols)]


def decode_tile(z, w1, b1, w2, b2):
    """The stand-in decoder, frame by frame: a 3x3 convolution (zero padding at the tile's edge), SiLU, a 1x1
    convolution to 3 s^2 channels and a pixel shuffle by s. (C, T, h, w) -> (3, T, h s, w s)."""
    s = int(round((w2.shape[0] // 3) ** 0.5))
    x = F.silu(F.conv2d(z.transpose(0, 1), w1, b1, padding=1))
    x = F.conv2d(x, w2[:, :, None, None], b2)
    return F.pixel_shuffle(x, s).transpose(0, 1)


def _blend_dtype(x: torch.Tensor) -> torch.dtype:
    """The weights in float32 at least (Magi-1 multiplies by Python floats), so a bf16 tile blends in float32."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def blend(raw: dict, i: int, j: int, extent: int) -> torch.Tensor:
    """Tile (i, j) blended with the raw tiles above and to its left: over the first e rows (columns), weights
    y / e for itself and 1 - y / e for the neighbour's last e rows (columns), e = min(extent, both sizes)."""
    b = raw[i, j].clone()
    if i > 0:
        a = raw[i - 1, j]
        e = min(a.shape[2], b.shape[2], extent)
        t = (torch.arange(e, device=b.device, dtype=torch.float64) / e).to(_blend_dtype(b))[:, None]
        b[:, :, :e, :] = (a[:, :, -e:, :] * (1 - t) + b[:, :, :e, :] * t).to(b.dtype)
    if j > 0:
        a = raw[i, j - 1]
        e = min(a.shape[3], b.shape[3], extent)
        t = (torch.arange(e, device=b.device, dtype=torch.float64) / e).to(_blend_dtype(b))
        b[:, :, :, :e] = (a[:, :, :, -e:] * (1 - t) + b[:, :, :, :e] * t).to(b.dtype)
    return b


def assemble(raw: dict, height: int, width: int, tile: int, scale: int) -> torch.Tensor:
    extent = int(tile * scale * OVERLAP)
    limit = tile * scale - extent
    tiles = tiling(height, width, tile)
    rows = 1 + max(i for i, _, _, _ in tiles)
    cols = 1 + max(j for _, j, _, _ in tiles)
    return torch.cat([torch.cat([blend(raw, i, j, extent)[:, :, :limit, :limit] for j in range(cols)], dim=3)
                      for i in range(rows)], dim=2)


def solution(z, w1, b1, w2, b2, tile):
    w, r = dist.get_world_size(), dist.get_rank()
    tile = int(tile)
    scale = int(round((w2.shape[0] // 3) ** 0.5))
    _, frames, height, width = z.shape
    tiles = tiling(height, width, tile)

    def numel(t):
        _, _, h0, w0 = t
        return min(tile, height - h0) * min(tile, width - w0)

    order = sorted(range(len(tiles)), key=lambda i: -numel(tiles[i]))  # stable: ties keep raster order
    mine = [order[k] for k in range(r, len(order), w)]
    per_rank = [sum(numel(tiles[order[k]]) for k in range(q, len(order), w)) for q in range(w)]
    out_per_latent = 3 * frames * scale * scale
    buf = torch.zeros(max(per_rank) * out_per_latent, dtype=z.dtype, device=z.device)
    at = 0
    for idx in mine:
        _, _, h0, w0 = tiles[idx]
        d = decode_tile(z[:, :, h0:h0 + tile, w0:w0 + tile], w1, b1, w2, b2).reshape(-1)
        buf[at:at + d.numel()] = d
        at += d.numel()
    every = torch.empty(w * buf.numel(), dtype=buf.dtype, device=buf.device)
    dist.all_gather_into_tensor(every, buf)
    every = every.view(w, -1)
    raw = {}
    for q in range(w):
        at = 0
        for k in range(q, len(order), w):
            i, j, h0, w0 = tiles[order[k]]
            th, tw = min(tile, height - h0) * scale, min(tile, width - w0) * scale
            raw[i, j] = every[q, at:at + 3 * frames * th * tw].view(3, frames, th, tw)
            at += 3 * frames * th * tw
    return assemble(raw, height, width, tile, scale)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str,
                channels: int, frames: int, height: int, width: int, hidden: int, scale: int, tile: int):
    dt = dtype_of(dtype)
    # The latent and the decoder are the same on every rank, as after Magi-1's DiT gathers the video.
    g = shared_generator(seed, device)
    z = randn((channels, frames, height, width), dt, device, g)
    w1 = randn((hidden, channels, 3, 3), dt, device, g, scale=(9 * channels) ** -0.5)
    b1 = randn((hidden,), dt, device, g, scale=0.1)
    w2 = randn((3 * scale * scale, hidden), dt, device, g, scale=hidden ** -0.5)
    b2 = randn((3 * scale * scale,), dt, device, g, scale=0.1)
    return z, w1, b1, w2, b2, torch.tensor(tile, dtype=torch.int64, device=device)


def oracle(inputs: list[tuple], height: int, width: int, scale: int, tile: int, **_):
    z, w1, b1, w2, b2, _ = (t.double() for t in inputs[0])
    raw = {(i, j): decode_tile(z[:, :, h0:h0 + tile, w0:w0 + tile], w1, b1, w2, b2)
           for i, j, h0, w0 in tiling(height, width, tile)}
    video = assemble(raw, height, width, tile, scale).to(inputs[0][0].dtype)
    return [video.clone() for _ in inputs]
