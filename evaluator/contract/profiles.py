"""Hardware profiles: a machine class, the RQ queue its workers serve, and the ceilings the roofline uses.

Figures for the H200 profiles were measured on a 4×H200 NVLink machine (NV18 between every pair of GPUs):
NCCL all-gather bus bandwidth 307 GB/s at 1 GiB and all-reduce 304 GB/s at 256 MiB with NVLink multicast off;
478 GB/s is the nominal per-GPU NVLink figure (18 links × 26.6 GB/s). The roofline uses the nominal link figure,
so no honest implementation can beat it; the measured NCCL figures are kept beside it for the reader.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# Variables every process the evaluator starts on a GPU host must carry: NVLink multicast stays off on shared
# machines because a program that uses it can take the host's GPUs out of service.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


@dataclass(frozen=True)
class HardwareProfile:
    name: str
    description: str
    world_size: int
    backend: str  # "gloo" or "nccl"
    device: str  # "cpu" or "cuda"
    preset: str  # the problem size preset this profile runs
    link_gbps: float  # per-GPU unidirectional interconnect bandwidth the roofline uses, GB/s
    hbm_gbps: float  # per-device memory bandwidth, GB/s
    peak_tflops: dict[str, float]  # dense peak per dtype, TFLOP/s
    measured_link_gbps: float | None = None  # NCCL bus bandwidth measured on such a machine, for reference
    link_latency_us: float = 0.0  # the smallest time any cross-device step can take

    @property
    def queue(self) -> str:
        return self.name

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cpu(world_size: int) -> HardwareProfile:
    return HardwareProfile(
        name=f"cpu-gloo-{world_size}",
        description=f"{world_size} CPU processes on one host over gloo; small sizes; for development and CI",
        world_size=world_size, backend="gloo", device="cpu", preset="small",
        # Loopback and DRAM ceilings far above what gloo reaches, so the CPU roofline never rejects honest code.
        link_gbps=1000.0, hbm_gbps=1000.0, peak_tflops={"float32": 100.0, "float64": 50.0, "bfloat16": 100.0},
    )


_H200_PEAK = {"bfloat16": 989.0, "float16": 989.0, "float8_e4m3fn": 1979.0, "float32": 67.0, "float64": 67.0,
              "int8": 1979.0}
_H100_PEAK = dict(_H200_PEAK)


def _h200(world_size: int) -> HardwareProfile:
    return HardwareProfile(
        name=f"h200-nvlink-{world_size}",
        description=f"{world_size}× NVIDIA H200 SXM, all pairs NVLink (NV18, 478 GB/s per GPU per direction), NCCL",
        world_size=world_size, backend="nccl", device="cuda", preset="bench",
        link_gbps=478.0, hbm_gbps=4800.0, peak_tflops=_H200_PEAK, measured_link_gbps=307.0, link_latency_us=2.0,
    )


PROFILES: dict[str, HardwareProfile] = {
    p.name: p
    for p in (
        _cpu(2), _cpu(4), _h200(2), _h200(4), _h200(8),
        HardwareProfile(
            name="h100-nvlink-8", description="8× NVIDIA H100 SXM, NVSwitch (450 GB/s per GPU per direction), NCCL",
            world_size=8, backend="nccl", device="cuda", preset="bench", link_gbps=450.0, hbm_gbps=3350.0,
            peak_tflops=_H100_PEAK, link_latency_us=2.0,
        ),
    )
}


class UnknownProfile(ValueError):
    pass


def get_profile(name: str) -> HardwareProfile:
    if name not in PROFILES:
        raise UnknownProfile(f"unknown hardware profile {name!r}; choose one of {', '.join(PROFILES)}")
    return PROFILES[name]
