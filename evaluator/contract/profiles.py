"""Hardware profiles: a machine class, the RQ queue its workers serve, and the ceilings the roofline uses.

Figures for the H200 profiles were measured on a 4×H200 NVLink machine (NV18 between every pair of GPUs):
NCCL all-gather bus bandwidth 307 GB/s at 1 GiB and all-reduce 304 GB/s at 256 MiB with NVLink multicast off;
478 GB/s is the nominal per-GPU NVLink figure (18 links × 26.6 GB/s). The roofline uses the nominal link figure,
so no honest implementation can beat it; the measured NCCL figures are kept beside it for the reader.

Two-node profiles (``nodes`` > 1) group consecutive ranks into nodes of ``world_size // nodes``: ranks
``n * ranks_per_node ... (n + 1) * ranks_per_node - 1`` are node ``n``. Inside a node, GPUs talk over NVLink at
``link_gbps``; between nodes each GPU has its own network interface at ``internode_gbps``. The inter-node figure
is an assumption, not a measurement: one 400 Gb/s InfiniBand/RoCE NIC per GPU, i.e. 50 GB/s per GPU per direction
(the usual rail-optimised H100/H200 cluster node). Rank processes learn the layout from ``LOCAL_WORLD_SIZE``,
``LOCAL_RANK`` and ``GROUP_RANK`` (torchrun's names); problems that depend on it take ``ranks_per_node`` as a
preset parameter (docs/contributing-problems.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from evaluator.contract.jobs import evaluation_queue

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
    nodes: int = 1  # machines the ranks are spread over; ranks per node = world_size // nodes
    internode_gbps: float | None = None  # per-GPU unidirectional bandwidth between nodes, GB/s (nodes > 1)
    internode_latency_us: float = 0.0  # the smallest time a step that crosses nodes can take
    smoke: bool = False  # tests the evaluator itself on any problem at this world size; never queued, never ranked
    # NVLink multicast (multicast objects, multi-memory instructions) in solution code: never on shared hosts, where it
    # can take the GPUs out of service; a dedicated host may opt in. The static check reads it; results record it.
    multicast_allowed: bool = False

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.world_size % self.nodes:
            raise ValueError(f"profile {self.name}: {self.world_size} ranks cannot be split into {self.nodes} nodes")
        if self.nodes > 1 and not self.internode_gbps:
            raise ValueError(f"profile {self.name}: a profile of {self.nodes} nodes needs internode_gbps")

    @property
    def ranks_per_node(self) -> int:
        return self.world_size // self.nodes

    def node_of(self, rank: int) -> int:
        """The node a rank sits on: consecutive ranks share a node."""
        return rank // self.ranks_per_node

    @property
    def queue(self) -> str:
        return evaluation_queue(self.name)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cpu(world_size: int) -> HardwareProfile:
    return HardwareProfile(
        name=f"cpu-gloo-{world_size}",
        description=f"{world_size} CPU processes on one host over gloo; small sizes; for development and CI",
        world_size=world_size,
        backend="gloo",
        device="cpu",
        preset="small",
        # Loopback and DRAM ceilings far above what gloo reaches, so the CPU roofline never rejects honest code.
        link_gbps=1000.0,
        hbm_gbps=1000.0,
        peak_tflops={"float32": 100.0, "float64": 50.0, "bfloat16": 100.0},
    )


_H200_PEAK = {
    "bfloat16": 989.0,
    "float16": 989.0,
    "float8_e4m3fn": 1979.0,
    "float32": 67.0,
    "float64": 67.0,
    "int8": 1979.0,
}
_H100_PEAK = dict(_H200_PEAK)


def _h200(world_size: int) -> HardwareProfile:
    return HardwareProfile(
        name=f"h200-nvlink-{world_size}",
        description=f"{world_size}× NVIDIA H200 SXM, all pairs NVLink (NV18, 478 GB/s per GPU per direction), NCCL",
        world_size=world_size,
        backend="nccl",
        device="cuda",
        preset="bench",
        link_gbps=478.0,
        hbm_gbps=4800.0,
        peak_tflops=_H200_PEAK,
        measured_link_gbps=307.0,
        link_latency_us=2.0,
    )


# One 400 Gb/s NIC per GPU (ConnectX-7 class, InfiniBand NDR or RoCE): 50 GB/s per GPU per direction. An
# assumption stated in each two-node profile's description; the roofline bounds inter-node bytes with it.
_INTERNODE_GBPS = 50.0
_INTERNODE_LATENCY_US = 5.0  # one RDMA write across a switch, a few µs; a floor, not a typical figure


def _cpu_nodes(nodes: int, ranks_per_node: int) -> HardwareProfile:
    world_size = nodes * ranks_per_node
    return HardwareProfile(
        name=f"cpu-gloo-{nodes}x{ranks_per_node}",
        description=(
            f"{world_size} CPU processes on one host over gloo, grouped as {nodes} nodes of {ranks_per_node} "
            f"ranks; small sizes; for development and CI of inter-node problems"
        ),
        world_size=world_size,
        backend="gloo",
        device="cpu",
        preset="small",
        link_gbps=1000.0,
        hbm_gbps=1000.0,
        peak_tflops={"float32": 100.0, "float64": 50.0, "bfloat16": 100.0},
        nodes=nodes,
        internode_gbps=1000.0,
    )


PROFILES: dict[str, HardwareProfile] = {
    p.name: p
    for p in (
        _cpu(2),
        _cpu(4),
        _h200(2),
        _h200(4),
        _h200(8),
        HardwareProfile(
            name="h100-nvlink-8",
            description="8× NVIDIA H100 SXM, NVSwitch (450 GB/s per GPU per direction), NCCL",
            world_size=8,
            backend="nccl",
            device="cuda",
            preset="bench",
            link_gbps=450.0,
            hbm_gbps=3350.0,
            peak_tflops=_H100_PEAK,
            link_latency_us=2.0,
        ),
        _cpu_nodes(2, 2),
        HardwareProfile(
            name="h200-2x4",
            description=(
                "2 nodes × 4 NVIDIA H200 SXM: NVLink inside a node (NV18, 478 GB/s per GPU per direction); "
                "between nodes one 400 Gb/s NIC per GPU (50 GB/s per GPU per direction, an assumption); NCCL"
            ),
            world_size=8,
            backend="nccl",
            device="cuda",
            preset="bench",
            link_gbps=478.0,
            hbm_gbps=4800.0,
            peak_tflops=_H200_PEAK,
            measured_link_gbps=307.0,
            link_latency_us=2.0,
            nodes=2,
            internode_gbps=_INTERNODE_GBPS,
            internode_latency_us=_INTERNODE_LATENCY_US,
        ),
    )
}

# The profile used when none is named: an evaluation spec's, the CLI's --hardware and the portal's
# ARENA_DEFAULT_PROFILE. A CPU profile, so everything works on any machine without a GPU.
DEFAULT_PROFILE = "cpu-gloo-2"


class UnknownProfile(ValueError):
    pass


# Profiles for checking the evaluator on one GPU (sandbox with CUDA, the compiled timer, repeatability): any problem
# runs at one rank. Only `arena eval` and the benchmarks reach them; the portal never offers them.
SMOKE_PROFILES: dict[str, HardwareProfile] = {
    "h200-smoke-1": HardwareProfile(
        name="h200-smoke-1",
        description="1× NVIDIA H200, one rank, bench sizes: a smoke test of the evaluator on a "
        "GPU, not a ranked measurement",
        world_size=1,
        backend="nccl",
        device="cuda",
        preset="bench",
        link_gbps=478.0,
        hbm_gbps=4800.0,
        peak_tflops=_H200_PEAK,
        link_latency_us=0.0,
        smoke=True,
    ),
}


def get_profile(name: str, allow_smoke: bool = False) -> HardwareProfile:
    if allow_smoke and name in SMOKE_PROFILES:
        return SMOKE_PROFILES[name]
    if name not in PROFILES:
        raise UnknownProfile(f"unknown hardware profile {name!r}; choose one of {', '.join(PROFILES)}")
    return PROFILES[name]
