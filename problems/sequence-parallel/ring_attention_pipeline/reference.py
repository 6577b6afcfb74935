"""Context-parallel causal attention blocks on a pipeline: the W ranks form P = W / C pipeline stages of C
context-parallel ranks (consecutive ranks share a stage). Stage 0 holds the input sequence, split into C contiguous
chunks over its ranks; each stage applies its own attention block (QKV projection, causal attention over the whole
sequence of its C ranks, output projection, residual) and hands its output chunk to the same context-parallel
position of the next stage. Every rank returns its stage's output chunk."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from problems.common import dtype_of, node_groups, randn, rank_generator, shared_generator


def qkv_heads(h: torch.Tensor, w_qkv: torch.Tensor, heads: int) -> torch.Tensor:
    """(3, B, heads, len, head_dim) from h (B, len, D): q, k, v stacked along the projection's rows."""
    b, s, _ = h.shape
    return (h @ w_qkv.t()).view(b, s, 3, heads, -1).permute(2, 0, 3, 1, 4)


def attend(h: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    """h + causal attention of q (the last q.shape[2] positions) over k, v, through the output projection."""
    ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(q.shape[2], k.shape[2]))
    return h + ctx.transpose(1, 2).reshape(h.shape[0], h.shape[1], -1) @ w_o.t()


def solution(hidden, w_qkv, w_o, sizes):
    world, rank = dist.get_world_size(), dist.get_rank()
    cp, heads, chunk = (int(s) for s in sizes)
    stage, pos = divmod(rank, cp)
    cp_group, _ = node_groups(cp)  # the cp ranks of this stage
    if stage == 0:
        h = hidden
    else:
        h = torch.empty((hidden.shape[0], chunk, w_o.shape[0]), dtype=w_o.dtype, device=w_o.device)
        dist.recv(h, rank - cp)  # the previous stage's output for this chunk
    q, k, v = qkv_heads(h, w_qkv, heads)
    kv = torch.stack([k, v]).contiguous()  # (2, B, H, chunk, d)
    every = torch.empty((cp * 2, *kv.shape[1:]), dtype=kv.dtype, device=kv.device)
    dist.all_gather_into_tensor(every, kv, group=cp_group)
    visible = every.view(cp, *kv.shape)[:pos + 1]  # chunks 0..pos: the causal prefix
    kv_vis = visible.permute(1, 2, 3, 0, 4, 5).reshape(2, kv.shape[1], kv.shape[2], -1, kv.shape[4])
    out = attend(h, q, kv_vis[0], kv_vis[1], w_o)
    if stage + 1 < world // cp:
        dist.send(out.contiguous(), rank + cp)
    return out


def _weights(seed: int, stage: int, hidden: int, heads: int, head_dim: int, dt, device):
    g = shared_generator(seed + 1009 * (stage + 1), device)  # one stream per stage: the same on its cp ranks
    w_qkv = randn((3 * heads * head_dim, hidden), dt, device, g, scale=hidden ** -0.5)
    w_o = randn((hidden, heads * head_dim), dt, device, g, scale=0.5 * (heads * head_dim) ** -0.5)
    return w_qkv, w_o


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, batch: int, seq: int,
                hidden: int, heads: int, head_dim: int, cp: int):
    dt = dtype_of(dtype)
    if world_size % cp or world_size // cp < 2 or seq % cp:
        raise ValueError("W must be a multiple of cp with at least two stages, and seq divide by cp")
    stage = rank // cp
    chunk = seq // cp
    # Only stage 0 holds the pipeline's input; later stages get theirs from the stage before (an empty tensor here).
    rows = chunk if stage == 0 else 0
    x = randn((batch, rows, hidden), dt, device, rank_generator(seed, rank, device))
    w_qkv, w_o = _weights(seed, stage, hidden, heads, head_dim, dt, device)
    sizes = torch.tensor([cp, heads, chunk], dtype=torch.int64, device=device)
    return x, w_qkv, w_o, sizes


def oracle(inputs: list[tuple], **_):
    dt = inputs[0][0].dtype
    cp, heads, chunk = (int(s) for s in inputs[0][3])
    stages = len(inputs) // cp
    h = torch.cat([inputs[p][0] for p in range(cp)], dim=1).double()
    outs = []
    for s in range(stages):
        w_qkv, w_o = (t.double() for t in inputs[s * cp][1:3])
        q, k, v = qkv_heads(h, w_qkv, heads)
        h = attend(h, q, k, v, w_o)
        outs.append(h)
    return [outs[r // cp][:, (r % cp) * chunk:(r % cp + 1) * chunk].to(dt).contiguous() for r in range(len(inputs))]
