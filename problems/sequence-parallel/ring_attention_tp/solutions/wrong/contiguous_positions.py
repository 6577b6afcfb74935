"""Wrong: treats each CP rank's shard as one contiguous block (rank c holding positions [c*L, (c+1)*L)) instead of
the zigzag pair of chunks, so the causal mask hides the wrong keys."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right


def solution(q, k, v, tp):
    tp = int(tp.item())
    w, r = dist.get_world_size(), dist.get_rank()
    cp_rank = r // tp
    s_local, heads, d = q.shape
    kv = torch.stack([k, v]).contiguous()
    every = [torch.empty_like(kv) for _ in range(w)]
    dist.all_gather(every, kv)
    mine = torch.stack([every[c * tp + r % tp] for c in range(cp_rank + 1)], dim=1)  # (2, c, L, H, D)
    kv_seq = mine.reshape(2, (cp_rank + 1) * s_local, heads, d).permute(0, 2, 1, 3)
    out = F.scaled_dot_product_attention(
        q.transpose(0, 1)[None],
        kv_seq[0, None],
        kv_seq[1, None],
        attn_mask=causal_lower_right(s_local, (cp_rank + 1) * s_local),
    )[0]
    return out.transpose(0, 1).contiguous()
