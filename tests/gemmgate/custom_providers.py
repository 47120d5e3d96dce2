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
