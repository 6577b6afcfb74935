"""Does its work on a side stream and joins it properly: the side stream waits for the caller's stream before it
starts, the caller's stream waits for the side stream before returning, and the output is recorded on the
caller's stream. On CPU the same code runs without streams."""

import torch
import torch.distributed as dist

_streams: dict = {}


def solution(x: torch.Tensor) -> torch.Tensor:
    if x.device.type != "cuda":
        out = x.clone()
        dist.all_reduce(out)
        return out
    caller = torch.cuda.current_stream(x.device)
    side = _streams.setdefault(x.device, torch.cuda.Stream(device=x.device))
    side.wait_stream(caller)
    with torch.cuda.stream(side):
        out = x.clone()
        dist.all_reduce(out)
    caller.wait_stream(side)
    out.record_stream(caller)
    return out
