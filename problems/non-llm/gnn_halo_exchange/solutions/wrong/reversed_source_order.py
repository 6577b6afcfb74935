"""Wrong: appends the halo groups from the highest source rank down instead of in ascending source order."""

import torch
import torch.distributed as dist


def solution(features, send_idx, send_counts, recv_counts):
    rc = recv_counts.tolist()
    halo = torch.empty((sum(rc), features.shape[1]), dtype=features.dtype, device=features.device)
    dist.all_to_all_single(halo, features[send_idx], rc, send_counts.tolist())
    groups = list(halo.split(rc))
    return torch.cat([features, *reversed(groups)])
