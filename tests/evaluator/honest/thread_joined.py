"""Runs the all-reduce on a worker thread that it joins before returning, and a thread pool that it shuts down
inside the call: nothing it starts outlives the call."""

import concurrent.futures
import threading

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    worker = threading.Thread(target=dist.all_reduce, args=(out,))
    worker.start()
    worker.join()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        copy = pool.submit(out.clone).result()
    return copy
