# bench/cublas_sgemm.py: cuBLAS float32 SGEMM (TF32 off) at 4096^3 through PyTorch, the
# ceiling kloop's gemm is compared with. Cold L2 between repetitions, CUDA events, median.
import statistics, torch
torch.backends.cuda.matmul.allow_tf32 = False
n = 4096
a = torch.rand(n, n, device="cuda") * 2 - 1
b = torch.randn(n, n, device="cuda")
flush = torch.empty(2 * 60 * 2**20 // 4, device="cuda")
times = []
for i in range(30):
    flush.fill_(1.0)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); c = a @ b; e.record(); torch.cuda.synchronize()
    if i >= 5: times.append(s.elapsed_time(e))
ref = a.double() @ b.double()
err = ((c.double() - ref).norm() / ref.norm()).item()
med = statistics.median(times)
print(f"cuBLAS sgemm 4096^3: median {med:.3f} ms, {2*n**3/med/1e9:.1f} TFLOP/s, rel err {err:.2e}")
