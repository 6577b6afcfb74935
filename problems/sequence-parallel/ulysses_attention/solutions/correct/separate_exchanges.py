import torch
import torch.distributed as dist
import torch.nn.functional as F


def _to_heads(x, w):
    s_local, heads, d = x.shape
    send = x.reshape(s_local, w, heads // w, d).transpose(0, 1).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    return recv.reshape(w * s_local, heads // w, d).transpose(0, 1)  # (H/W, S, D)


def solution(q, k, v):
    w = dist.get_world_size()
    s_local, heads, d = q.shape
    qh, kh, vh = (_to_heads(t, w) for t in (q, k, v))
    out = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)  # (H/W, S, D)
    sends = list(out.transpose(0, 1).chunk(w, dim=0))
    sends = [s.contiguous() for s in sends]
    recvs = [torch.empty_like(sends[0]) for _ in range(w)]
    dist.all_to_all(recvs, sends)
    return torch.cat(recvs, dim=1)
