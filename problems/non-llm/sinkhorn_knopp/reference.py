"""Distributed Sinkhorn-Knopp (SwAV): Q = exp(scores / eps)^T is prototypes x samples with the samples (columns)
spread over ranks; row (prototype) sums must be all-reduced, column (sample) sums are local."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, shared_generator

EPSILON, ITERATIONS = 0.05, 3


def solution(scores):
    world = dist.get_world_size()
    q = torch.exp(scores.float() / EPSILON).t()
    prototypes, samples = q.shape[0], q.shape[1] * world
    total = q.sum()
    dist.all_reduce(total)
    q = q / total
    for _ in range(ITERATIONS):
        rows = q.sum(dim=1, keepdim=True)
        dist.all_reduce(rows)
        q = q / rows / prototypes  # every prototype gets 1/prototypes of the mass
        q = q / q.sum(dim=0, keepdim=True) / samples  # every sample gets 1/samples of the mass
    return (q * samples).t()


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, batch: int,
                prototypes: int):
    # Cosine similarities between L2-normalised embeddings and L2-normalised prototypes, as SwAV scores them.
    dim = 128
    protos = torch.randn((prototypes, dim), generator=shared_generator(seed, device), device=device)
    z = torch.randn((batch // world_size, dim), generator=rank_generator(seed, rank, device), device=device)
    scores = torch.nn.functional.normalize(z, dim=1) @ torch.nn.functional.normalize(protos, dim=1).t()
    return (scores.to(dtype_of(dtype)),)


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    q = torch.exp(torch.cat([inp[0].double() for inp in inputs]) / EPSILON).t()
    prototypes, samples = q.shape
    q = q / q.sum()
    for _ in range(ITERATIONS):
        q = q / q.sum(dim=1, keepdim=True) / prototypes
        q = q / q.sum(dim=0, keepdim=True) / samples
    return [part.float() for part in (q * samples).t().chunk(world)]
