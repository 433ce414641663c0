"""The runner's result, signed with a key only the launcher and the runner know.

The candidate runs in the runner's process and can read the runner's command line, so it can
find `--output`, write a passing result there itself and `os._exit(0)`. The launcher writes a
fresh random key to a file of its own and passes its path (`--result-key`); the runner reads
and deletes that file before the candidate is imported, and signs the result it writes
(HMAC-SHA256 of the file's bytes, in `<output>.sig`). The launcher accepts only a result whose
signature verifies. A candidate that digs the key out of the runner's memory (its frames)
could still sign; this stops the forgery that needs nothing but `sys.argv`."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
from pathlib import Path


class ResultSeal:
    def __init__(self, key: bytes | None) -> None:
        self._key = key

    @classmethod
    def take(cls, key_file: str | None) -> ResultSeal:
        """Read the launcher's key and delete its file (call before importing the candidate)."""
        if not key_file:
            return cls(None)
        path = Path(key_file)
        key = path.read_bytes()
        with contextlib.suppress(OSError):
            path.unlink()
        return cls(key)

    def sign(self, output: str) -> None:
        """`<output>.sig`: the HMAC of the result file's bytes (nothing without a key or a file)."""
        if self._key is None or output == "-":
            return
        body = Path(output).read_bytes()
        signature = hmac.new(self._key, body, hashlib.sha256).hexdigest()
        fd = os.open(output + ".sig", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(signature)
