"""Measure the two ceilings once on the device: copy bandwidth and cuBLAS matmul rates."""

import torch
import triton.testing as tt

torch.manual_seed(0)
x = torch.randn(2**30 // 4 * 4, device="cuda")  # 4 GiB
y = torch.empty_like(x)
ms = tt.do_bench(lambda: y.copy_(x), return_mode="median")
print(f"copy: {2 * x.numel() * 4 / ms / 1e6:.0f} GB/s (read+write, 4 GiB)")
x = y = None  # free 8 GiB before the matmuls
for dtype, n, tf32 in ((torch.bfloat16, 8192, False), (torch.float16, 8192, False),
                       (torch.float32, 4096, True), (torch.float32, 4096, False)):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(n, n, device="cuda").to(dtype)
    b = torch.randn(n, n, device="cuda").to(dtype)
    ms = tt.do_bench(lambda: a @ b, return_mode="median")
    name = "tf32" if tf32 else str(dtype).removeprefix("torch.")
    print(f"cuBLAS {name} {n}^3: {2 * n**3 / ms / 1e9:.0f} TFLOP/s")
a = torch.randn(8192, 8192, device="cuda").to(torch.float8_e4m3fn)
b = torch.randn(8192, 8192, device="cuda").to(torch.float8_e4m3fn).t().contiguous().t()
one = torch.ones((), device="cuda")
ms = tt.do_bench(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                          out_dtype=torch.bfloat16), return_mode="median")
print(f"cuBLASLt fp8 8192^3: {2 * 8192**3 / ms / 1e9:.0f} TFLOP/s")
