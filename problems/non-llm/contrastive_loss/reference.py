"""Distributed CLIP loss (OpenCLIP ClipLoss with gather_with_grad=True, local_loss=True).

Global batch N = W * B of (image, text) pairs; logits = s * I @ T.T over the gathered features. The loss of pair i
is (CE of row i at label i + CE of column i at label i) / 2. Rank r returns [its local mean loss, the global mean],
and the gradients, with respect to its own image and text features, of the summed loss over the global batch."""

import torch
import torch.distributed as dist

from problems.common import randn, rank_generator, shared_generator


def solution(image: torch.Tensor, text: torch.Tensor, logit_scale: torch.Tensor):
    w, rank = dist.get_world_size(), dist.get_rank()
    b = image.shape[0]
    all_image = image.new_empty((w * b, image.shape[1]))
    all_text = text.new_empty((w * b, text.shape[1]))
    dist.all_gather_into_tensor(all_image, image.contiguous())
    dist.all_gather_into_tensor(all_text, text.contiguous())
    s = logit_scale
    own = torch.arange(b, device=image.device) + rank * b
    log_p = torch.log_softmax(s * image @ all_text.t(), dim=1)  # this rank's images against every text
    log_q = torch.log_softmax(s * text @ all_image.t(), dim=1)  # this rank's texts against every image
    rows = torch.arange(b, device=image.device)
    local = -(log_p[rows, own] + log_q[rows, own]).mean() / 2
    total = local.clone()
    dist.all_reduce(total)
    p, q = log_p.exp(), log_q.exp()
    # d(sum loss)/d logits = (P + Q^T) / 2 - Id. The Q^T (resp. P^T) part of this rank's rows lives on other ranks:
    # each rank sends its share through a reduce-scatter, as all_gather's backward does.
    partial = torch.cat([q.t() @ text, p.t() @ image], dim=1)  # [N, 2D]: to images' and texts' gradients
    mine = partial.new_empty((b, partial.shape[1]))
    dist.reduce_scatter_tensor(mine, partial.contiguous())
    d = image.shape[1]
    grad_image = s * (p @ all_text / 2 + mine[:, :d] / 2 - text)
    grad_text = s * (q @ all_image / 2 + mine[:, d:] / 2 - image)
    return torch.stack([local, total / w]), grad_image, grad_text


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, batch: int, dim: int):
    scale = 20.0 + 30.0 * torch.rand((), generator=shared_generator(seed, "cpu"))
    g = rank_generator(seed, rank, device)
    image = torch.nn.functional.normalize(randn((batch, dim), torch.float32, device, g), dim=1)
    text = torch.nn.functional.normalize(image + randn((batch, dim), torch.float32, device, g), dim=1)
    return image, text, scale.to(device=device, dtype=torch.float32)


def oracle(inputs: list[tuple], **_):
    w = len(inputs)
    b = inputs[0][0].shape[0]
    image = torch.cat([i[0] for i in inputs]).double().requires_grad_(True)
    text = torch.cat([i[1] for i in inputs]).double().requires_grad_(True)
    s = inputs[0][2].double()
    logits = s * image @ text.t()
    labels = torch.arange(w * b)
    per_pair = (torch.nn.functional.cross_entropy(logits, labels, reduction="none")
                + torch.nn.functional.cross_entropy(logits.t(), labels, reduction="none")) / 2
    per_pair.sum().backward()
    total = per_pair.mean().detach()
    out = []
    for r in range(w):
        sl = slice(r * b, (r + 1) * b)
        losses = torch.stack([per_pair[sl].mean().detach(), total]).float()
        out.append((losses, image.grad[sl].float(), text.grad[sl].float()))
    return out
