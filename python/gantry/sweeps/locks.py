"""The two locks of a sweep's folder.

ClaimLock: one process at a time creates or adopts a trial (gantry/sweeps/claim.py), so a sweep
never makes more trials than asked and a trial's number fixes its sampler's seed. It is a file
created with O_EXCL (safe on NFSv3+ as Optuna's JournalFileOpenLock), held for milliseconds; one
left behind by a killed process is broken after `stale_seconds`.

TrialLock: at most one gan_train writes a trial's model_dir. An flock on model_dir/.lock, taken by
the worker and inherited by its gan_train (pass its fd), so it is held until both have exited —
a worker started again for the trial (a restarted driver, a requeued job) waits while the
previous gan_train still writes its last checkpoint. A worker takes it while it claims the trial
when it is free, so the lock says "trained now" from the claim on (a synchronous sweep's idle
workers wait while some trial's lock is held).
"""
from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path


class ClaimLock:
    def __init__(self, path: Path, stale_seconds: float = 120.0):
        self.path = Path(path)
        self.stale_seconds = stale_seconds

    def __enter__(self) -> "ClaimLock":
        delay = 0.001
        while True:
            try:
                os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                return self
            except OSError as e:
                if e.errno != errno.EEXIST:
                    raise
            try:
                if time.time() - self.path.stat().st_mtime > self.stale_seconds:
                    self.path.unlink()  # its holder died inside the lock
                    continue
            except FileNotFoundError:
                continue
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def __exit__(self, *exc) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def claim_lock(sweep_dir: Path) -> ClaimLock:
    return ClaimLock(Path(sweep_dir) / "claim.lock")


class TrialLock:
    def __init__(self, model_dir: Path):
        self.path = Path(model_dir) / ".lock"
        self.fd = -1
        self.held = False

    def try_acquire(self) -> bool:
        """Takes the lock if it is free now."""
        if self.fd < 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.held = True
        except BlockingIOError:
            pass
        return self.held

    def acquire(self, on_wait=None) -> "TrialLock":
        """Takes the lock, waiting for its holder (on_wait() is called first) unless held already."""
        if not self.held and not self.try_acquire():
            if on_wait:
                on_wait()
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            self.held = True
        return self

    def held_elsewhere(self) -> bool:
        """Whether a worker or its gan_train holds the lock now (a probe: taken and let go at once)."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            self.held = False

    def __enter__(self) -> "TrialLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
