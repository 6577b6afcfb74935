"""A GPU submission that compiles CUDA is built ahead on its profile's build queue; CPU ones are not."""

from rq import Queue

from leaderboard.submissions.services import submission_create

CUDA_SOURCE = "from torch.utils.cpp_extension import load_inline\ndef solution(x):\n    return x\n"


def test_gpu_submission_with_load_inline_is_prebuilt_on_the_build_queue(
    problems, user, redis_conn, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submission_create(
            user=user, problem="collectives/all_reduce", profile="h200-nvlink-4", filename="k.py", source=CUDA_SOURCE
        )
    assert Queue("h200-nvlink-4-build", connection=redis_conn).count == 1
    assert Queue("h200-nvlink-4", connection=redis_conn).count == 1


def test_cpu_submission_is_not_prebuilt(problems, user, redis_conn, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        submission_create(
            user=user, problem="collectives/all_reduce", profile="cpu-gloo-2", filename="k.py", source=CUDA_SOURCE
        )
    assert Queue("cpu-gloo-2-build", connection=redis_conn).count == 0
    assert Queue("cpu-gloo-2", connection=redis_conn).count == 1
