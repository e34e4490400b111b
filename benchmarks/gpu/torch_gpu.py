"""PyTorch eager and torch.compile on a CUDA GPU, on the benchmark workloads smelt's GPU check times
(scripts/gpu_check.sh), with the same two clocks smelt bench --device-time reports:
  NAME:device MS   median kernel time with the inputs already on the GPU, between two CUDA events
  NAME:host MS     median wall time from host inputs to host outputs (copy in, run, copy out, wait)
  NAME:compile MS  torch.compile's first call (tracing, Inductor, Triton's build), compile mode only
  copy_bandwidth:GBps X  the card's device-to-device copy (1 GiB, read + write), when asked for
  torch_gpu.py --mode eager|compile [--only NAME,...] [--runs N] [--max-seconds S] [--device cpu]
              [--autocast bf16|f16]
(--autocast: the training steps' forward under torch.autocast in that dtype, f16 with a GradScaler, as
PyTorch users train in mixed precision; their figures are reported as NAME_bf16:host, NAME_f16:host.)
(--device cpu runs the same code on the CPU with wall-clock times: the GPU check's dry run.)
Correctness first: each workload's GPU result is compared with the same function on the CPU (random
inputs) before it is timed, and a mismatch is reported as `NAME:error ...` instead of a time."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import timing  # noqa: E402
import torch_models  # noqa: E402
import torch_workloads  # noqa: E402

GPU_WORKLOADS = ["ew_chain", "softmax_rows", "layernorm", "gemm2048", "gemm4096", "linear_relu", "mlp_train"]
# Through the model API in smelt (benchmarks/native/train_steps.cpp --device cuda): one training step
# (its loss back on the host) or one small layer's call (host in, host out), on the wall clock.
MODEL_WORKLOADS = ["mlp_train_step", "resnet18_train_step", "tiny_latency"]


def mlp_train_fn():
    """The gradient graph of benchmarks/workloads/mlp_train.ir: forward to the mean cross-entropy and
    backward to every parameter (what smelt bench --grad times)."""
    mlp = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    x, y = torch.randn(256, 784), torch.randint(0, 10, (256,))

    def make(model):
        def fn(x, y):
            for p in model.parameters():
                p.grad = None
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss.detach()
        return fn

    return make, mlp, (x, y)


def event_ms(fn, args, budget):
    """Median milliseconds between CUDA events around fn() (the GPU's own clock)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def once():
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    return timed(once, args, budget)


DEVICE = "cuda"


def synchronize():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def wall_ms(fn, args, budget):
    def once():
        t = time.perf_counter()
        fn()
        synchronize()
        return (time.perf_counter() - t) * 1e3

    return timed(once, args, budget)


def timed(once, args, budget):
    start = time.perf_counter()
    for i in range(args.warmup):
        if i > 0 and budget > 0 and time.perf_counter() - start > budget / 4:
            break
        once()
    times = []
    for i in range(max(args.runs, 1)):
        if i >= max(1, args.min_runs) and budget > 0 and time.perf_counter() - start > budget:
            break
        times.append(once())
    return statistics.median(times)


def check(name, got, want):
    """None when the GPU's result matches the CPU's, else what differs."""
    got, want = got.detach().float().cpu(), want.detach().float().cpu()
    if got.shape != want.shape:
        return "shape %s, expected %s" % (tuple(got.shape), tuple(want.shape))
    # TF32 is off (below): f32 products accumulate in f32 on both sides.
    if not torch.allclose(got, want, rtol=2e-3, atol=2e-3):
        return "max abs difference %.3g" % (got - want).abs().max().item()
    return None


def run_model_workload(name, args):
    """A training step ending with its loss on the host, or a tiny layer's host-to-host call: what
    smelt_train_steps times on the same card. `NAME:host MS`."""
    compile_it = args.mode == "compile"
    if name == "tiny_latency":
        x, w, b = torch.randn(64, 64), torch.randn(64, 64, device=DEVICE), torch.randn(64, device=DEVICE)
        fn = lambda x: torch.relu(x @ w + b)
        if compile_it:
            fn = torch.compile(fn)
        with torch.no_grad():
            call = lambda: fn(x.to(DEVICE)).cpu()
            if compile_it:
                t = time.perf_counter()
                call()
                timing.report(name + ":compile", (time.perf_counter() - t) * 1e3)
            timing.report(name + ":host", wall_ms(call, args, args.max_seconds))
        return
    if name == "mlp_train_step":
        model = torch_models.mlp().to(DEVICE)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x, y = torch.randn(256, 784, device=DEVICE), torch.randint(0, 10, (256,), device=DEVICE)
    else:
        model = torch_models.ResNet18().to(DEVICE)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = torch.randn(16, 3, 64, 64, device=DEVICE), torch.randint(0, 1000, (16,), device=DEVICE)
    low = {"bf16": torch.bfloat16, "f16": torch.float16}.get(args.autocast)

    def forward(x, y):
        if low is None:
            return F.cross_entropy(model(x), y)
        with torch.autocast(device_type=DEVICE, dtype=low):
            logits = model(x)
        return F.cross_entropy(logits.float(), y)

    loss_fn = torch.compile(forward) if compile_it else forward
    # f16 scales the loss (PyTorch's GradScaler, whose step reads the overflow flag on the host); bf16 needs none.
    scaler = torch.cuda.amp.GradScaler() if low is torch.float16 and DEVICE == "cuda" else None

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(x, y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss.item()  # the loss back on the host, as smelt's TrainStep::run returns it

    label = name + ("_" + args.autocast if low is not None else "")
    if compile_it:
        t = time.perf_counter()
        step()
        timing.report(label + ":compile", (time.perf_counter() - t) * 1e3)
    timing.report(label + ":host", wall_ms(step, args, args.max_seconds))


def copy_bandwidth(args):
    """The card's device-to-device copy bandwidth, the ceiling of a memory-bound kernel: 1 GiB of f32
    copied between CUDA events, bytes read plus bytes written. `copy_bandwidth:GBps X`."""
    x = torch.randn(1 << 28, device=DEVICE)
    y = torch.empty_like(x)
    ms = event_ms(lambda: y.copy_(x), args, args.max_seconds) if DEVICE == "cuda" else wall_ms(lambda: y.copy_(x), args, args.max_seconds)
    if not torch.equal(x, y):
        print("copy_bandwidth:error the copy differs from its source", flush=True)
        return
    print("copy_bandwidth:GBps %.1f" % (2 * x.numel() * 4 / (ms * 1e6)), flush=True)


def run(name, args):
    if name == "copy_bandwidth":
        return copy_bandwidth(args)
    if name in MODEL_WORKLOADS:
        return run_model_workload(name, args)
    compile_it = args.mode == "compile"
    if name == "mlp_train":
        make, mlp, host = mlp_train_fn()
        want = make(mlp)(*host)
        gpu_model = mlp.to(DEVICE)
        fn = make(gpu_model)
    else:
        fn, host = torch_workloads.build(name)
        with torch.no_grad():
            want = fn(*host)
    dev = [t.to(DEVICE) for t in host]
    if compile_it:
        fn = torch.compile(fn)
        t = time.perf_counter()
        fn(*dev)
        synchronize()
        timing.report(name + ":compile", (time.perf_counter() - t) * 1e3)
    grad = torch.enable_grad() if name == "mlp_train" else torch.no_grad()
    with grad:
        problem = check(name, fn(*dev), want)
        if problem:
            print("%s:error %s" % (name, problem), flush=True)
            return
        on_device = event_ms if DEVICE == "cuda" else wall_ms
        timing.report(name + ":device", on_device(lambda: fn(*dev), args, args.max_seconds / 2))
        timing.report(name + ":host", wall_ms(lambda: fn(*[t.to(DEVICE) for t in host]).cpu(), args, args.max_seconds / 2))


def main():
    ap = timing.arguments(__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--autocast", choices=["bf16", "f16"], default=None)
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch_gpu.py: no CUDA GPU visible to PyTorch")
    # The same arithmetic as smelt's f32 kernels and the CPU reference: no TF32 in products.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    names = [n for n in args.only.split(",") if n] or GPU_WORKLOADS + MODEL_WORKLOADS
    card = torch.cuda.get_device_name(0) if DEVICE == "cuda" else "cpu"
    print("device %s, torch %s, CUDA %s" % (card, torch.__version__, torch.version.cuda), flush=True)
    for name in names:
        try:
            run(name, args)
        except Exception as e:  # one workload's failure must not hide the others' figures
            print("%s:error %s" % (name, str(e).splitlines()[0] if str(e) else type(e).__name__), flush=True)


if __name__ == "__main__":
    main()
