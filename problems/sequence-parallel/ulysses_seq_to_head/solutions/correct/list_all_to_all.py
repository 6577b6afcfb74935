import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    w = dist.get_world_size()
    s_local, heads, d = x.shape
    hl = heads // w
    sends = [x[:, j * hl : (j + 1) * hl].contiguous() for j in range(w)]
    out = torch.empty(w * s_local, hl, d, dtype=x.dtype, device=x.device)
    recvs = list(out.chunk(w, dim=0))
    dist.all_to_all(recvs, sends)
    return out
