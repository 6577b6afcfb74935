"""The result channel between a rank process and the launcher: a pipe the launcher opened itself.

Each message is one JSON line carrying an HMAC over its body, keyed by a secret the launcher hands the rank on
stdin before any solution code is imported. The launcher never reads what a solution prints, so a fake result
written to stdout, to a file or, without the key, to this pipe is ignored or refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any

# Bound at import, before any solution code exists in the process.
_write = os.write
_dumps = json.dumps
_hmac_new = hmac.new
_sha256 = hashlib.sha256


def _mac(key: bytes, body: str) -> str:
    return _hmac_new(key, body.encode(), _sha256).hexdigest()


class RankChannel:
    """The rank's writing end."""

    def __init__(self, fd: int, key: bytes, rank: int) -> None:
        self._fd = fd
        self._key = key
        self._rank = rank
        self._seq = 0

    def send(self, kind: str, **payload: Any) -> None:
        body = _dumps({"rank": self._rank, "seq": self._seq, "kind": kind, **payload}, default=str)
        self._seq += 1
        line = _dumps({"body": body, "mac": _mac(self._key, body)}) + "\n"
        data = line.encode()
        while data:
            written = _write(self._fd, data)
            data = data[written:]


class ChannelReader:
    """The launcher's reading end for one rank: splits lines and verifies each message."""

    def __init__(self, fd: int, key: bytes, rank: int) -> None:
        self.fd = fd
        self._key = key
        self._rank = rank
        self._buffer = b""
        self._expected_seq = 0
        self.closed = False

    def read_available(self, killed: bool = False) -> list[dict[str, Any]]:
        """Messages now readable. Raises ValueError on a forged, reordered or malformed message, and on a partial
        line left at the end by a rank that ended by itself (``killed``: the launcher cut it off mid-write)."""
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            self.closed = True
            if self._buffer.strip() and not killed:
                raise ValueError(f"rank {self._rank} left a partial line that is not a harness message on the result "
                                 f"channel (forged result)")
        self._buffer += chunk
        messages = []
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            try:
                envelope = json.loads(line)
                body = envelope["body"]
                mac = envelope["mac"]
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"rank {self._rank} wrote something that is not a harness message to the result "
                                 f"channel") from exc
            if not hmac.compare_digest(_mac(self._key, body), str(mac)):
                raise ValueError(f"rank {self._rank}: a message on the result channel failed authentication "
                                 f"(forged result)")
            message = json.loads(body)
            if message.get("rank") != self._rank or message.get("seq") != self._expected_seq:
                raise ValueError(f"rank {self._rank}: a message on the result channel is out of sequence "
                                 f"(replayed or forged result)")
            self._expected_seq += 1
            messages.append(message)
        return messages
