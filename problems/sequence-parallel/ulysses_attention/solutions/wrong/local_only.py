"""Attends only within the rank's own sequence block: no communication at all."""

import torch.nn.functional as F


def solution(q, k, v):
    out = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), is_causal=True)
    return out.transpose(0, 1).contiguous()
