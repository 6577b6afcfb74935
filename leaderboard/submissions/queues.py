"""The queues as people see them: per hardware profile, how many live workers serve it and how many jobs wait."""

from __future__ import annotations

from dataclasses import dataclass

import django_rq
from redis.exceptions import RedisError

from evaluator.contract.profiles import PROFILES
from leaderboard.submissions.selectors import live_queues, profile_typical_duration_s


@dataclass(frozen=True)
class ProfileQueue:
    profile: str
    queue: str
    description: str
    workers: int  # live workers (fresh heartbeat) serving the queue
    waiting: int  # jobs waiting in it
    typical_s: float | None  # median duration of its recent evaluations

    @property
    def served(self) -> bool:
        return self.workers > 0


def queue_overview() -> list[ProfileQueue] | None:
    """Every profile's queue, in the profiles' order; None when Redis cannot be reached."""
    live = live_queues()
    if not live:
        return None
    try:
        rows = []
        for name, profile in PROFILES.items():
            waiting = django_rq.get_queue(profile.queue).count
            rows.append(
                ProfileQueue(
                    profile=name,
                    queue=profile.queue,
                    description=profile.description,
                    workers=live.get(profile.queue, 0),
                    waiting=waiting,
                    typical_s=profile_typical_duration_s(profile=name),
                )
            )
        return rows
    except RedisError:
        return None


def unserved_profiles() -> set[str] | None:
    """The profiles no live worker serves now (None when Redis cannot be reached: say nothing either way)."""
    live = live_queues()
    if not live:
        return None
    return {name for name, p in PROFILES.items() if not live.get(p.queue)}
