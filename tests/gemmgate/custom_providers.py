"""GEMMs for `--providers module:function` tests (imported by path, not collected):
each honours the kernels.matmul contract on CPU tensors."""


def correct(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    c = a.double() @ b.double()
    if scale_a is not None:
        c = c * scale_a.double() * scale_b.double()
    return out.copy_(c) if out is not None else c.to(a.dtype)


def wrong(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    return out.copy_(a @ b + 1)  # off by one everywhere: fails the 1e-2 bound


SEEN = []


def hooked(a, b, *, precision=None, out=None, scale_a=None, scale_b=None, choose=None):
    SEEN.append(choose)
    return correct(a, b, precision=precision, out=out)


NOT_CALLABLE = 42


def bad_shape(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    import torch

    return torch.zeros(3, 3, dtype=a.dtype)   # not M x N


CALLS = []


def flaky(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    CALLS.append(1)   # right on its first two calls (the accuracy check), then raises
    if len(CALLS) > 2:
        raise RuntimeError("flaky after two calls")
    return correct(a, b, precision=precision, out=out)


def exits(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    raise SystemExit(0)


def wide(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    return a.double() @ b.double()   # right values, float64: not the mode's output type


def unscaled(a, b, *, precision=None, out=None):
    """The contract without fp8's scales: fine for every mode but fp8."""
    return out.copy_(a.double() @ b.double())


def one_operand(a):
    return a


def hangs(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """A Python loop that does not return (for two minutes: a broken limit fails the
    test as a failed provider, not a CI job that never ends)."""
    import time

    end = time.monotonic() + 120
    while time.monotonic() < end:
        pass
    raise RuntimeError("hangs: the case time limit did not stop it")


def stuck_on_24_rows(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right, except on 24-row cases: blocked in native code (a sleep) for two minutes."""
    import time

    if a.shape[0] == 24:
        time.sleep(120)
    return correct(a, b, precision=precision, out=out)


def sigterm_on_24_rows(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right, except on 24-row cases: the process sends itself SIGTERM (a CI job
    cancelled, `timeout`), then waits for it to land."""
    import os
    import signal
    import time

    if a.shape[0] == 24:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)
    return correct(a, b, precision=precision, out=out)


def sigterm_twice_on_24_rows(a, b, *, precision=None, out=None, scale_a=None,
                             scale_b=None):
    """As `sigterm_on_24_rows`, the SIGTERM sent twice at once, as `timeout` sends it: to
    the command, then to its process group (the second lands after the first's handler
    ran)."""
    import os
    import signal
    import time

    if a.shape[0] == 24:
        try:
            os.kill(os.getpid(), signal.SIGTERM)   # its handler raises here
            time.sleep(60)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)
    return correct(a, b, precision=precision, out=out)


def sigint_on_24_rows(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right, except on 24-row cases: the process sends itself SIGINT (Ctrl-C)."""
    import os
    import signal
    import time

    if a.shape[0] == 24:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(60)
    return correct(a, b, precision=precision, out=out)


def sigterm_in_native_code_on_24_rows(a, b, *, precision=None, out=None, scale_a=None,
                                      scale_b=None, times: int = 1):
    """Right, except on 24-row cases: minutes of native code that holds no GIL (a key
    derivation), and a thread sends the process SIGTERM (`times` times, 1 s apart) a
    second after the measuring thread reached it, so no Python signal handler can run
    until it ends (as a GPU kernel that never ends). The thread waits for the measuring
    one's frame to be on the derivation's line (a loaded machine may hold that thread a
    second before it gets there: the handler would run in Python)."""
    import hashlib
    import os
    import signal
    import sys
    import threading
    import time

    if a.shape[0] == 24:
        here = sys._getframe()
        measuring = threading.get_ident()

        def kill() -> None:
            while True:
                frame = sys._current_frames().get(measuring)
                if frame is here and frame.f_lineno == line:
                    break
                time.sleep(0.01)
            time.sleep(1.0)
            for _ in range(times):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1.0)   # (further apart than stop_signal.SAME_STOP_S)

        line = here.f_lineno + 2
        threading.Thread(target=kill, daemon=True).start()
        hashlib.pbkdf2_hmac("sha256", b"gemmgate", b"stuck", 2_000_000_000)
    return correct(a, b, precision=precision, out=out)


def two_sigterms_in_native_code_on_24_rows(a, b, *, precision=None, out=None,
                                           scale_a=None, scale_b=None):
    """As `sigterm_in_native_code_on_24_rows`, SIGTERM sent twice."""
    return sigterm_in_native_code_on_24_rows(a, b, precision=precision, out=out, times=2)


_RUNS = []   # the `a` of every case run so far (held: no address is reused)


def hangs_when_run_again(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right on a case's first run; a Python loop on its second run (fresh inputs of a
    shape seen before: `check`'s re-measure), for two minutes."""
    if not any(x is a for x in _RUNS):
        _RUNS.append(a)
        if sum(x.shape == a.shape for x in _RUNS) > 1:
            hangs(a, b)
    return correct(a, b, precision=precision, out=out)


_SEEN_TERM = []   # as `_RUNS`, for `sigterm_when_run_again`


def sigterm_when_run_again(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right on a case's first run; on its second (`check`'s re-measure) the process
    sends itself SIGTERM."""
    import os
    import signal
    import time

    if not any(x is a for x in _SEEN_TERM):
        _SEEN_TERM.append(a)
        if sum(x.shape == a.shape for x in _SEEN_TERM) > 1:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(60)
    return correct(a, b, precision=precision, out=out)


FLAKY_N = []


def now_and_then(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right but on every 12th call: fails while timed, and seldom when timed alone."""
    FLAKY_N.append(1)
    if len(FLAKY_N) % 12 == 0:
        raise RuntimeError(f"transient failure on call {len(FLAKY_N)}")
    return correct(a, b, precision=precision, out=out)


def dies_on_32(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Ends its process (as a crash in native code) on a case of M = 32; right elsewhere."""
    import os

    if a.shape[0] == 32:
        os._exit(9)
    return correct(a, b, precision=precision, out=out)


def exits_3_on_32(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Ends its process with code 3 (a native library's exit(3): the code the deadline
    ends a stuck worker with) on a case of M = 32; right elsewhere."""
    import os

    if a.shape[0] == 32:
        os._exit(3)
    return correct(a, b, precision=precision, out=out)


def zeroes_b(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    c = correct(a, b, precision=precision, out=out)   # right, then writes into its input
    b.zero_()
    return c


class Odd(BaseException):
    """Not an Exception: a provider's own control-flow signal."""


def raises_base(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    raise Odd("a provider's own BaseException")


WRITES = []


def writes_later(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    WRITES.append(1)   # leaves its inputs alone on its two checked calls, then writes B
    c = correct(a, b, precision=precision, out=out)
    if len(WRITES) > 2:
        b.add_(1.0)
    return c


def write_then_raise(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    WRITES.append(1)   # right on its two checked calls, then writes B and raises
    if len(WRITES) > 2:
        b.add_(1.0)
        raise RuntimeError("wrote, then raised")
    return correct(a, b, precision=precision, out=out)


SUMS = []


def observer(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    SUMS.append(float(a.sum()) + float(b.sum()))   # what its inputs held, each call
    return correct(a, b, precision=precision, out=out)


def sets_tf32(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right, but leaves torch's fp32 matmuls in tf32 for whoever comes next."""
    import torch

    torch.backends.cuda.matmul.fp32_precision = "tf32"
    return correct(a, b, out=out)


def sets_global_tf32(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right, but sets torch's global fp32 precision: every backend flag left at "none"
    (oneDNN's matmul, on the CPU) reads it."""
    import torch

    torch.backends.fp32_precision = "tf32"
    return correct(a, b, out=out)


TIMED_CALLS = []


def sets_tf32_when_timed(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right; from its third call on (its checked calls are two) it sets tf32 as well."""
    TIMED_CALLS.append(1)
    if len(TIMED_CALLS) > 2:
        return sets_tf32(a, b, out=out)
    return correct(a, b, out=out)


def sets_tf32_after_timing(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right; sets tf32 in the calls judged after its timed ones (as a library that turns
    it on after some number of calls)."""
    import inspect

    if any(f.function == "after_timing" for f in inspect.stack(0)):
        return sets_tf32(a, b, out=out)
    return correct(a, b, out=out)


def like_cublas(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """fp32 inputs rounded to tf32 when torch's flag says tf32, as cuBLAS computes."""
    import torch

    if a.dtype == torch.float32 and torch.backends.cuda.matmul.fp32_precision == "tf32":
        a, b = (x.view(torch.int32).bitwise_and(~0x1FFF).view(torch.float32) for x in (a, b))
    return correct(a, b, out=out)


def fp16_between_blocks(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """fp32 sums inside each K block of 128, the running sum kept in fp16 between blocks
    (an accumulator declared fp16): its whole error passes fp16's band up to K ~ 1024."""
    import torch

    acc = torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype)
    for i in range(0, a.shape[1], 128):
        acc = (acc.float() + a[:, i:i + 128].float() @ b[i:i + 128].float()).to(a.dtype)
    return out.copy_(acc) if out is not None else acc


def returns_a(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Its output is its input A (a square case's shape and type)."""
    return a


def skips_last_row(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Makes its own output (not `out=`) and never writes its last row; a scratch of C's
    size, computed whole, is freed as it returns."""
    import torch

    res = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    full = a @ b
    res[:-1] = full[:-1]
    return res


def transposes_a(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right, then transposes its input A in place (its layout: no value written)."""
    c = correct(a, b, precision=precision, out=out)
    a.t_()
    return c


def unsqueezes_b(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right, then makes its input B 3-D in place (its layout: no value written)."""
    c = correct(a, b, precision=precision, out=out)
    b.unsqueeze_(0)
    return c
