"""The input helpers every reference uses: a draw is the same whatever the dtype and device path it takes."""

import pytest
import torch

from problems.common import randn, shared_generator

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _float32_then_cast(shape: tuple[int, ...], dtype: torch.dtype, device: str, seed: int, scale: float):
    g = shared_generator(seed, device)
    x = torch.randn(shape, generator=g, device=device, dtype=torch.float32)
    if scale != 1.0:
        x.mul_(scale)
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("scale", [1.0, 8192**-0.5])
def test_a_draw_on_the_cpu_is_the_float32_draw_cast_to_its_dtype(dtype: torch.dtype, scale: float) -> None:
    drawn = randn((257, 33), dtype, "cpu", shared_generator(11, "cpu"), scale=scale)
    assert drawn.dtype == dtype
    assert torch.equal(drawn, _float32_then_cast((257, 33), dtype, "cpu", 11, scale))


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("scale", [1.0, 8192**-0.5])
def test_a_one_pass_draw_on_the_gpu_has_the_values_of_the_float32_draw_cast(dtype: torch.dtype, scale: float) -> None:
    # An odd size, so the kernel's unrolled tail is compared too.
    drawn = randn((4097, 1023), dtype, "cuda", shared_generator(7, "cuda"), scale=scale)
    assert drawn.dtype == dtype and drawn.device.type == "cuda"
    assert torch.equal(drawn, _float32_then_cast((4097, 1023), dtype, "cuda", 7, scale))
