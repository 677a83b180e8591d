"""The local executor: N workers on this machine, each running one trial at a time with its own
thread share (GANTRY_NUM_THREADS of its gan_train), so N trials run concurrently on N × threads
cores, or one at a time with N = 1.

The workers die with the driver (PR_SET_PDEATHSIG: SIGTERM), and a worker stopped that way passes
the stop to its gan_train, which saves its step: a driver that is killed and started again
resumes every interrupted trial from its checkpoint. Ctrl-C or SIGTERM to the driver stops the
workers the same way and the driver exits with 75.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

from .gan_train import STOPPED, die_with_parent
from .worker_command import worker_command, worker_pythonpath


class LocalExecutor:
    def __init__(self, sweep_dir: Path, jobs: int, threads: int, gan_train: str, say: Callable[[str], None]):
        self.sweep_dir = Path(sweep_dir)
        self.jobs = jobs
        self.threads = threads
        self.gan_train = gan_train
        self.say = say
        self.stop_signal = 0

    def run(self, on_progress: Callable[[], None], progress_seconds: float) -> int:
        """0 when the workers found nothing left, 75 when stopped, 1 when a worker failed."""
        logs = self.sweep_dir / "workers"
        logs.mkdir(exist_ok=True)
        env = dict(os.environ, PYTHONPATH=worker_pythonpath())
        workers = []
        for slot in range(self.jobs):
            with open(logs / f"local-{slot}.log", "a") as log:
                workers.append(subprocess.Popen(
                    worker_command(self.sweep_dir, str(slot), self.jobs, self.threads, self.gan_train), env=env,
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent))
        self.say(f"{self.jobs} local worker(s), {self.threads or 'all'} thread(s) each; logs in {logs}")

        def stop(signum, frame):
            self.stop_signal = self.stop_signal or signum
            for w in workers:
                if w.poll() is None:
                    w.send_signal(signal.SIGTERM)

        # Signal handlers belong to the main thread; a sweep driven from another thread is stopped
        # through its workers' signals alone.
        main = threading.current_thread() is threading.main_thread()
        previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
        try:
            last = time.monotonic()
            while any(w.poll() is None for w in workers):
                time.sleep(0.2)
                if time.monotonic() - last >= progress_seconds:
                    on_progress()
                    last = time.monotonic()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        codes = [w.returncode for w in workers]
        if self.stop_signal or STOPPED in codes:
            return STOPPED
        failed = [(slot, c) for slot, c in enumerate(codes) if c != 0]
        for slot, code in failed:
            self.say(f"worker {slot} failed (exit {code}); see {logs / f'local-{slot}.log'}")
        return 1 if failed else 0
