"""What `arena submit`, `arena test` and `arena eval` print, as a newcomer met it: a model run on a profile no
worker serves is said at once (status 3) instead of a silent wait of up to 30 minutes, as for one solution; a CPU
profile's result prints no speedup or roofline fraction (the site says "not computed" there), a GPU profile's
does."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from evaluator.cli.main import main
from evaluator.cli.run_eval import print_result
from evaluator.cli.submit import _print_run
from leaderboard.models import ModelRun
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import passed_document


def _cpu_document() -> dict:
    doc = passed_document(1.289)
    doc["message"] = "correct on 5 trials × 2 ranks; timed on a CPU profile, which tests the pipeline"
    doc["profile"] = {"name": "cpu-gloo-2", "backend": "gloo", "device": "cpu", "world_size": 2}
    doc["timing"].update(
        method="host-windows-by-the-host",
        iterations=20,
        speedup_uncertainty=0.5,
        baseline={"median_us": 6021.3, "p10_us": 2890.1, "p90_us": 10165.8},
        solution={"median_us": 4340.0, "p10_us": 2624.2, "p90_us": 8446.5},
    )
    doc["roofline"] = {"time_us": 0.05, "bound": "hbm", "baseline_fraction": 0.0, "solution_fraction": 0.0}
    return doc


def test_a_cpu_result_prints_its_times_but_no_speedup_or_roofline_fraction(capsys):
    print_result(_cpu_document())
    out = capsys.readouterr().out
    assert "baseline  median    6021.30 µs" in out  # the times recorded stay
    assert "speedup   not computed" in out and "1.289" not in out, out
    assert "roofline: fractions not computed on a CPU profile" in out and "reaches" not in out, out


def test_a_gpu_result_prints_its_speedup_and_roofline_fractions(capsys):
    doc = _cpu_document()
    doc["profile"] = {"name": "h200-nvlink-4", "backend": "nccl", "device": "cuda", "world_size": 4}
    print_result(doc)
    out = capsys.readouterr().out
    assert "speedup   1.289 ± 0.500" in out and "baseline reaches 0.0%" in out, out


def test_a_cpu_runs_scores_say_not_computed_instead_of_dashes(capsys):
    scores = {
        "scored_at_k": 2,
        "pass_at_k": 1.0,
        "pass_at_1": 1.0,
        "fast_p_at_k": {"1": None, "1.5": None},
        "geomean_speedup": None,
        "mean_roofline_fraction": None,
        "coverage": 0.01,
        "timed": False,
    }
    _print_run({"profile": "cpu-gloo-2", "protocol": {"label": "agentic · k=2"}, "scores": scores})
    out = capsys.readouterr().out
    assert "pass@2 100.0 %" in out and "coverage 1.0 %" in out
    assert "not computed on cpu-gloo-2" in out and "fast_1@2 —" not in out and "geomean speedup —" not in out, out


@pytest.mark.django_db(transaction=True)
def test_a_model_run_on_an_unserved_profile_is_said_at_once_and_ends_with_status_3(
    problems, user, live_server, redis_conn, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    monkeypatch.delenv("ARENA_PORTAL", raising=False)
    token = Token.objects.create(user=user).key
    archive = tmp_path / "run.zip"
    archive.write_bytes(fx.archive_bytes())  # on h200-nvlink-2, which no worker serves here
    code = main(
        ["submit", "--portal", live_server.url, "--token", token, "--model-run", str(archive), "--timeout", "600"]
    )
    assert code == 3
    out, err = capsys.readouterr()
    assert "model run 1 accepted" in out.replace(str(ModelRun.objects.get().pk), "1")
    assert "no worker serves h200-nvlink-2" in err and "h200-nvlink-2-test h200-nvlink-2" in err, err
    assert '"hardware": "cpu-gloo-2" in its manifest' in err and "--wait" in err, err
    assert ModelRun.objects.get().profile == "h200-nvlink-2"  # left queued, for when a worker starts


def test_a_portal_that_drops_the_connection_gets_a_sentence_not_a_traceback(tmp_path, capsys):
    """The portal restarting (a local portal reloads when its code changes) reset the connection mid-upload, and
    `arena submit` printed urllib's traceback."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def drop() -> None:
        while True:  # every request (the queue check, then the upload)
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            conn.close()  # a reset, no answer

    threading.Thread(target=drop, daemon=True).start()
    source = tmp_path / "s.py"
    source.write_text("def solution(x):\n    return x\n")
    portal = f"http://127.0.0.1:{server.getsockname()[1]}"
    with pytest.raises(SystemExit) as ended:
        main(
            [
                "submit",
                "--portal",
                portal,
                "--token",
                "t",
                "--problem",
                "collectives/all_reduce",
                "--solution",
                str(source),
                "--hardware",
                "cpu-gloo-2",
                "--no-follow",
            ]
        )
    server.close()
    said = str(ended.value)  # a reset while sending reads "cannot reach", one while answering "closed the connection"
    assert said.startswith("arena: ") and portal in said, said
    assert "cannot reach the portal" in said or "closed the connection before answering" in said, said


def test_arena_eval_on_a_gpu_profile_without_the_gpus_says_so_before_starting(tmp_path, capsys):
    """`arena eval --hardware h200-nvlink-4` (the README's line for a GPU host) on a machine without 4 CUDA GPUs
    ended as an infra_error naming torch's internals ("module 'torch._C' has no attribute '_cuda_setDevice'")."""
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() >= 4:
        pytest.skip("this machine has the GPUs")
    source = tmp_path / "s.py"
    source.write_text("def solution(x):\n    return x.clone()\n")
    assert (
        main(
            [
                "eval",
                "--problem",
                "collectives/all_reduce",
                "--solution",
                str(source),
                "--hardware",
                "h200-nvlink-4",
                "--json",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "h200-nvlink-4 runs 4 ranks, one per CUDA GPU" in err and "--hardware cpu-gloo-2" in err, err
    assert (
        main(
            [
                "test",
                "--local",
                "--problem",
                "collectives/all_reduce",
                "--solution",
                str(source),
                "--hardware",
                "h200-nvlink-4",
            ]
        )
        == 2
    )
    assert "one per CUDA GPU" in capsys.readouterr().err
