"""Triton 3.6's CUDA launcher in Python, as source text for stand-ins: a compiled kernel's
launcher of the form kernels/launch_direct.py's `Direct.of` accepts, without a GPU
(scripts/plan_time.py --first; tests/kernels/test_launch.py). No imports, no work: exec it
in a namespace with `_BASE_ARGS_FORMAT_LEN` (13); a test may replace the namespace's
`make_tensordesc_arg` after the exec (the functions read it from there)."""

# triton 3.6's CUDA launcher in Python (backends/nvidia/driver.py): the wrapper that
# expands each descriptor into its tensor map before the C launch (3.6's closure over
# launcher, tensordesc_indices, tensordesc_meta; here given the indices), its
# make_tensordesc_arg (3.6's body; the C cuTensorMapEncodeTiled a tuple) and
# CudaLauncher's call (`Runner`): the form kernels/launch_direct.py's Direct.of accepts.
LAUNCHER_36 = """
def wrap_handle_tensordesc(launcher, tensordesc_indices, tensordesc_meta):
    def inner(*args):
        final_args = list(args[:_BASE_ARGS_FORMAT_LEN])
        tensordesc_idx = 0
        for i, arg in enumerate(args[_BASE_ARGS_FORMAT_LEN:]):
            if i in tensordesc_indices:
                final_args.extend(make_tensordesc_arg(arg, tensordesc_meta[tensordesc_idx]))
                tensordesc_idx += 1
            else:
                final_args.append(arg)
        return launcher(*final_args)
    return inner

def make_tensordesc_arg(arg, metadata):
    if metadata is None:
        return [arg.base, *arg.shape, *arg.strides]
    swizzle = metadata["swizzle"]
    elem_size = metadata["elem_size"]
    elem_type = metadata["elem_type"]
    block_size = metadata["block_size"]
    fp4_padded = metadata["fp4_padded"]
    shape = arg.shape
    strides = arg.strides
    assert strides[-1] == 1
    padding = 1 if arg.padding == "nan" else 0
    if fp4_padded:
        shape = list(shape)
        shape[-1] *= 2
    cu_tensor_map = (arg.base.data_ptr(), swizzle, elem_size, elem_type, block_size,
                     shape, strides, padding)
    return [cu_tensor_map, *shape, *strides]

class Runner:
    global_scratch_size = profile_scratch_size = 0
    launch_cooperative_grid, launch_pdl = False, False

    def __init__(self, launch):
        self.launch = launch

    def __call__(self, gridX, gridY, gridZ, stream, function, *args):
        self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid,
                    self.launch_pdl, None, None, *args)
"""
