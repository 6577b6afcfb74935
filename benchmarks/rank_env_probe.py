"""eval_wall with extra environment variables in every rank of both sandboxes (the judge's and the solution's), for
diagnosis only (the product never sets them):

  python3 benchmarks/rank_env_probe.py K=V[,K=V...] OUTDIR [eval_wall.py options]
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.contract.profiles import HardwareProfile  # noqa: E402
from evaluator.host import session  # noqa: E402


def main() -> None:
    if len(sys.argv) < 3 or "=" not in sys.argv[1]:
        sys.exit("usage: rank_env_probe.py K=V[,K=V...] OUTDIR [eval_wall.py options]")
    extra = dict(a.split("=", 1) for a in sys.argv[1].split(",") if a)
    original = session.node_environment

    def with_extra(profile: HardwareProfile, rank: int) -> dict[str, str]:
        return {**original(profile, rank), **extra}

    session.node_environment = with_extra  # each rank's variables, set before it touches a GPU (rank/spawn.py)
    sys.argv = [str(ROOT / "benchmarks" / "eval_wall.py"), *sys.argv[2:]]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
