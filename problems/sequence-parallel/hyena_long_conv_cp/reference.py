"""Hyena long convolution with the sequence sharded: y[t, c] = sum_{s <= t} h[t - s, c] * u[s, c].

The filter is as long as the sequence, so the baseline re-shards from sequence to channels (all-to-all), runs a
zero-padded FFT convolution over the whole sequence for its C/W channels, and re-shards the output back."""

import math

import torch
import torch.distributed as dist

from problems.common import dtype_of, randn, rank_generator, shared_generator


def solution(u: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    w, r = dist.get_world_size(), dist.get_rank()
    n_local, channels = u.shape
    seq, cl = w * n_local, channels // w
    send = u.view(n_local, w, cl).transpose(0, 1).contiguous()  # channel group j goes to rank j
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    full = recv.view(seq, cl)  # sequence blocks arrive in rank order
    n = 2 * seq  # zero padding turns the circular FFT product into a linear (causal) convolution
    spec = torch.fft.rfft(full, n=n, dim=0) * torch.fft.rfft(h[:, r * cl:(r + 1) * cl], n=n, dim=0)
    y = torch.fft.irfft(spec, n=n, dim=0)[:seq]
    send = y.reshape(w, n_local, cl).contiguous()  # sequence block j goes back to rank j
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    return recv.permute(1, 0, 2).reshape(n_local, channels).to(u.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, seq: int, channels: int):
    dt = dtype_of(dtype)
    u = randn((seq // world_size, channels), dt, device, rank_generator(seed, rank, device))
    # An implicit Hyena filter: noise under a per-channel exponential window whose length ranges from S/20 to
    # 2S, scaled to unit energy so the output is of unit scale.
    g = shared_generator(seed, device)
    rate = torch.exp(torch.empty(channels, device=device).uniform_(math.log(0.5), math.log(20.0), generator=g))
    t = torch.arange(seq, device=device, dtype=torch.float32)[:, None] / seq
    h = randn((seq, channels), torch.float32, device, g) * torch.exp(-rate[None, :] * t)
    h = h / h.norm(dim=0, keepdim=True)
    return u, h.to(dt)


def oracle(inputs: list[tuple], seq: int, channels: int, **_):
    w = len(inputs)
    dt = inputs[0][0].dtype
    u = torch.cat([inp[0] for inp in inputs]).to(torch.float64)
    h = inputs[0][1].to(torch.float64)
    # Direct causal convolution as a lower-triangular Toeplitz product per channel.
    lag = torch.arange(seq)[:, None] - torch.arange(seq)[None, :]  # t - s
    toeplitz = h[lag.clamp(min=0)] * (lag >= 0)[..., None]  # (S, S, C)
    y = torch.einsum("tsc,sc->tc", toeplitz, u).to(dt)
    n = seq // w
    return [y[r * n:(r + 1) * n].clone() for r in range(w)]
