# In each timed window of four calls (counted from the load as in wrong_when_timed_late_call.py), the first three
# calls return an empty placeholder and the last all-reduces all four calls' inputs at once, filling the placeholders:
# correct only if a call's outputs were taken after the window rather than as the call returned.
import torch
import torch.distributed as dist


class Deferred:
    def __init__(self) -> None:
        self.calls = 0
        self.inputs: list[torch.Tensor] = []
        self.slots: list[torch.Tensor] = []

    def settle(self) -> None:
        together = torch.stack(self.inputs)
        dist.all_reduce(together)
        for k in range(len(self.slots)):
            self.slots[k].copy_(together[k])
        self.inputs, self.slots = [], []

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        slot = torch.zeros_like(x)
        if self.calls <= 7:
            slot.copy_(x)
            dist.all_reduce(slot)
            return slot
        self.inputs.append(x)
        self.slots.append(slot)
        if len(self.slots) == 4:
            self.settle()
        return slot


solution = Deferred()
