"""A GPU provider for the case time limit's GPU tests (imported by path, not collected):
a Triton kernel that never finishes, as a deadlocked kernel would not."""

import torch
import triton
import triton.language as tl


@triton.jit
def _spin(flag_ptr):
    v = tl.load(flag_ptr, volatile=True)
    while v == 0:   # the flag is zero and stays zero: the kernel never ends
        v = tl.load(flag_ptr, volatile=True)


def spin_forever() -> None:
    """Launch the kernel that never ends, and wait for it (in native code)."""
    flag = torch.zeros(1, dtype=torch.int32, device="cuda")
    _spin[(1,)](flag)
    torch.cuda.synchronize()


def spins_on_264_rows(a, b, *, precision=None, out=None, scale_a=None, scale_b=None):
    """Right, except on 264-row cases: a kernel that never ends."""
    if a.shape[0] == 264:
        spin_forever()
    c = a.float() @ b.float()
    return out.copy_(c) if out is not None else c.to(a.dtype)


def sigterm_while_spinning_on_264_rows(a, b, *, precision=None, out=None, scale_a=None,
                                       scale_b=None):
    """Right, except on 264-row cases: the kernel that never ends, and a thread sends the
    process SIGTERM a second after it was launched (the main thread waits in native code
    then: no Python signal handler can run)."""
    import os
    import signal
    import threading
    import time

    if a.shape[0] == 264:
        def kill() -> None:
            time.sleep(1.0)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=kill, daemon=True).start()
        spin_forever()
    c = a.float() @ b.float()
    return out.copy_(c) if out is not None else c.to(a.dtype)
