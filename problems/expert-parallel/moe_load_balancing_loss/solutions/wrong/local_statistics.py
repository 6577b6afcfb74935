"""Computes the loss from this rank's tokens alone: the per-rank imbalance is not the global one."""

import torch


def solution(logits, topk, coeff):
    topk, coeff = int(topk), float(coeff)
    layers, tokens, experts = logits.shape
    probs = torch.softmax(logits.float(), dim=-1).sum(dim=1)
    chosen = logits.topk(topk, dim=-1).indices
    counts = torch.stack([torch.bincount(chosen[l].reshape(-1), minlength=experts) for l in range(layers)])
    return (probs * counts.float()).sum(dim=-1) * (coeff * experts / (topk * tokens * tokens))
