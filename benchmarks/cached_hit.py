"""CPU and wall time of a cached page served from Redis, in this process, through Django's test client (no network,
no gunicorn): the page cache's own cost per hit (its Redis round trips, the stored page unpacked, the middleware).

    python benchmarks/cached_hit.py --db postgres://postgres@127.0.0.1:5432/arena_demo_1000 [--hits 2000]

Production settings (DEBUG off), the page cache on, in the Redis database of REDIS_URL (default 13) under a key prefix
of this run's own, removed at the end. Each page is rendered once and read until it is a hit; then ``--hits`` hits,
gzip accepted as browsers do; medians printed, one line per page.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a database seeded by seed_demo")
    parser.add_argument("--hits", type=int, default=2000)
    args = parser.parse_args(argv)
    prefix = "cached-hit-" + os.urandom(4).hex()
    os.environ.update(
        DATABASE_URL=args.db,
        DJANGO_SETTINGS_MODULE="portal.settings",
        DEBUG="0",
        ARENA_PAGE_CACHE="1",
        ARENA_CACHE_PREFIX=prefix,
        ALLOWED_HOSTS="localhost,127.0.0.1,testserver",
    )
    os.environ.setdefault("SECRET_KEY", "benchmark-only-" + os.urandom(24).hex())
    os.environ.setdefault("HTTPS", "0")
    os.environ.setdefault("ARENA_REDIS_WITHOUT_PASSWORD", "1")
    os.environ.setdefault("ARENA_WORKER_KEYS", "bench:evaluations=" + os.urandom(24).hex())
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/13")
    import django

    django.setup()
    from django.test import Client

    from leaderboard.models import ModelRun
    from leaderboard.rankings.generations import pages_cache

    a, b = ModelRun.objects.order_by("id").values_list("id", flat=True)[:2]
    client = Client()
    try:
        for path in ("/runs/", "/", f"/runs/compare/?a={a}&b={b}"):
            for _ in range(5):
                client.get(path, HTTP_ACCEPT_ENCODING="gzip")
            if client.get(path, HTTP_ACCEPT_ENCODING="gzip").get("X-Arena-Cache") != "hit":
                raise SystemExit(f"cached_hit: {path} is not served from the cache")
            cpu, wall = [], []
            for _ in range(args.hits):
                c0, w0 = time.process_time(), time.perf_counter()
                client.get(path, HTTP_ACCEPT_ENCODING="gzip")
                cpu.append((time.process_time() - c0) * 1000)
                wall.append((time.perf_counter() - w0) * 1000)
            print(f"{path}: CPU median {statistics.median(cpu):.3f} ms, wall median {statistics.median(wall):.3f} ms")
    finally:
        redis = pages_cache()._cache.get_client(write=True)
        for key in redis.scan_iter(f"{prefix}:*"):
            redis.delete(key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
