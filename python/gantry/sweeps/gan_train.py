"""gan_train as the sweep runs it: found once, asked to resolve a config (--dry-run), and run for
one segment of a trial (to a rung's step) as a child process with its own thread share.

A trial's gan_train is a separate process, so a crash is a result and not the sweep's end. It runs
in its own session, so a terminal's Ctrl-C reaches it only through its worker, as one SIGTERM (a
SIGINT after another stop signal would abort it without a checkpoint); it gets SIGTERM too when
its worker dies (PR_SET_PDEATHSIG), and stops politely then, with a checkpoint of the step reached
(exit 75). A scheduler that signals every process of a job (Slurm) reaches it directly as well.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

STOPPED = 75  # gan_train's exit code after a polite stop with a checkpoint (EX_TEMPFAIL)

_PR_SET_PDEATHSIG = 1


def find_gan_train(explicit: Optional[str] = None) -> str:
    """gan_train: `explicit`, $GANTRY_GAN_TRAIN, the build's apps/ beside this package
    (PYTHONPATH=build/python), or PATH; an error lists where it looked."""
    tried = []
    candidates = [explicit, os.environ.get("GANTRY_GAN_TRAIN"),
                  str(Path(__file__).resolve().parents[3] / "apps" / "gan_train"), shutil.which("gan_train")]
    for c in candidates:
        if not c:
            continue
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
        tried.append(c)
    raise FileNotFoundError("gan_train: expected the app at --gan-train, $GANTRY_GAN_TRAIN, the build's apps/ or on "
                            f"PATH, found none (looked at {', '.join(tried) or 'nothing'})")


def die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _error_line(output: str, config_file: str) -> str:
    """gan_train's last error line, without its "gan_train: <file>: " prefix."""
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("gan_train:")]
    line = errors[-1] if errors else (lines[-1] if lines else "no output")
    for prefix in ("gan_train: ", f"{config_file}: "):
        if line.startswith(prefix):
            line = line[len(prefix):]
    return line


def resolve_config(gan_train: str, config: dict, cwd: str) -> tuple[Optional[dict], Optional[str]]:
    """(the config as gan_train --dry-run resolves it, None), or (None, its error)."""
    with tempfile.TemporaryDirectory(prefix="gan_sweep_") as tmp:
        path = os.path.join(tmp, "config.json")
        with open(path, "w") as f:
            json.dump(config, f)
        r = subprocess.run([gan_train, "--config", path, "--dry-run"], cwd=cwd, capture_output=True, text=True,
                           timeout=600)
    if r.returncode != 0:
        return None, _error_line(r.stderr + r.stdout, path)
    return json.loads(r.stdout), None


@dataclass
class SegmentResult:
    exit_code: int          # negative: killed by that signal
    reason: str             # gan_train's error line, or how it died
    cpu_seconds: float


class GanTrainProcess:
    """One gan_train run of a trial: `gan_train --config FILE --steps N`, output appended to `log`."""

    def __init__(self, gan_train: str, config_file: Path, steps: int, cwd: str, threads: int, log: Path,
                 pass_fds: tuple = ()):
        env = dict(os.environ)
        if threads > 0:
            env["GANTRY_NUM_THREADS"] = str(threads)
        env.setdefault("OMP_WAIT_POLICY", "passive")  # trials share the cores
        self._log_start = log.stat().st_size if log.exists() else 0
        self._log = log
        self._config_file = str(config_file)
        with open(log, "a") as out:
            out.write(f"== gan_sweep: gan_train --steps {steps} (pid {os.getpid()}, {threads or 'all'} threads)\n")
            out.flush()
            self._cpu_before = self._children_cpu()
            self.process = subprocess.Popen([gan_train, "--config", str(config_file), "--steps", str(steps)], cwd=cwd,
                                            env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            pass_fds=pass_fds, preexec_fn=die_with_parent, start_new_session=True)

    @staticmethod
    def _children_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def stop(self) -> None:
        """Asks for a polite stop (gan_train ignores a repeated SIGTERM)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait(self) -> SegmentResult:
        code = self.process.wait()
        cpu = self._children_cpu() - self._cpu_before
        with open(self._log) as f:
            f.seek(self._log_start)
            output = f.read()
        if code < 0:
            reason = f"gan_train was killed by {signal.Signals(-code).name}"
        elif code == 0:
            reason = ""
        else:
            reason = _error_line(output, self._config_file)
        return SegmentResult(code, reason, cpu)
