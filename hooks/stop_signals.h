// Stop signals for a polite stop.
//
// Note [polite stop]: SIGTERM (Slurm, Kubernetes and cloud preemption send it before SIGKILL),
// SIGINT (Ctrl-C) and SIGUSR1 (Slurm's --signal=USR1@T) only record that a stop was asked for.
// GracefulStopHook, on every worker, turns that (or the wall-clock limit) into a stop request,
// which the estimator all-reduces at the step boundary, so every rank stops after the same step
// even when only one rank got the signal. CheckpointHook saves that step (it always saves a run
// that ends before its last step), every rank waits for the file, and gan_train exits with
// kStoppedExitCode. A second SIGINT aborts at once (the default action: exit 130); a repeated
// SIGTERM or SIGUSR1 is ignored, so a scheduler's follow-up TERM does not cut the save short.
#pragma once

namespace gantry::hooks {

// sysexits.h's EX_TEMPFAIL: "temporary failure, retry" -- the run stopped before train.steps
// with its state saved; running the same command again continues it (docs/config.md).
inline constexpr int kStoppedExitCode = 75;

// Note [stop signals off the compute threads]: oneDNN's JIT GEMM kernels (libdnnl before 3.11.1,
// oneDNN issue #4845) point rsp into the heap while they run, so a signal handled on a thread inside
// one writes its frame over heap memory: the process aborts later in malloc (seen in CI: Slurm's
// SIGUSR1 during a convolution's weight gradient). So the stop signals are blocked on the thread
// that installs them, before it starts any other (OpenMP's and the replicas' threads inherit the
// mask), and one thread of their own takes them with sigwait. Call it first in main(). Another
// signal with a handler (a sampling profiler's SIGPROF) would need the same.
//
// Installs the handling of SIGTERM, SIGINT and SIGUSR1 (idempotent).
void install_stop_signal_handlers();

// The first stop signal received since install (SIGTERM, SIGINT or SIGUSR1), or 0.
int received_stop_signal();

// "SIGTERM", "SIGINT", "SIGUSR1" or "signal N".
const char* stop_signal_name(int signal);

}  // namespace gantry::hooks
