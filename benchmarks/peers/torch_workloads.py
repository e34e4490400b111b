"""The benchmark workloads in PyTorch: eager (Debian's libtorch 1.13 under /usr/bin/python3) or
torch.compile (torch 2.x in a virtualenv; Inductor's C++/OpenMP kernels on the CPU).
  torch_workloads.py --mode eager --threads 1 [--only NAME,...]   prints `NAME MEDIAN_MS` per workload
With --mode compile, mlp_train also prints `mlp_train:compile MS`, its first forward + backward call
(Dynamo tracing, AOTAutograd, Inductor's C++ build); point TORCHINDUCTOR_CACHE_DIR at an empty folder
for a cold compile."""
import torch
import torch.nn as nn
import torch.nn.functional as F

import timing
import torch_models


def build(name):
    """(function, its arguments) for one workload; definitions as in the peers' torch_peer.py."""
    if name == "ew_chain":
        return (lambda x: torch.sigmoid(x * 1.7 + 0.3) * torch.tanh(x) - 0.5 * x), (torch.randn(16 << 20),)
    if name == "softmax_rows":
        return (lambda x: torch.softmax(x, dim=1)), (torch.randn(4096, 4096),)
    if name == "layernorm":
        fn = lambda x, w, b: F.layer_norm(x, (1024,), w, b)
        return fn, (torch.randn(8192, 1024), torch.randn(1024), torch.randn(1024))
    if name in ("gemm2048", "gemm4096"):
        n = int(name[4:])
        return (lambda a, b: a @ b), (torch.randn(n, n), torch.randn(n, n))
    if name == "linear_relu":
        fn = lambda x, w, b: torch.relu(F.linear(x, w, b))
        return fn, (torch.randn(512, 2048), torch.randn(2048, 2048), torch.randn(2048))
    raise KeyError(name)


def mlp_train(compile_it, args):
    """Forward to the mean cross-entropy loss and backward to every parameter's gradient (no optimizer
    step: the smelt workload is the gradient graph)."""
    mlp = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    x, y = torch.randn(256, 784), torch.randint(0, 10, (256,))
    loss_fn = lambda x, y: F.cross_entropy(mlp(x), y)
    if compile_it:
        loss_fn = torch.compile(loss_fn)

    def step():
        for p in mlp.parameters():
            p.grad = None
        loss_fn(x, y).backward()

    if compile_it:
        timing.report("mlp_train:compile", timing.first_call_ms(step))
    timing.report("mlp_train", timing.median_ms(step, args))


def _autocast(fn, x, y, dtype):
    with torch.autocast("cpu", dtype=getattr(torch, {"bf16": "bfloat16", "f16": "float16"}[dtype])):
        return fn(x, y)


def train_step(name, compile_it, autocast=None):
    """One training step of ../shared/peers/torch_peer.py's workloads (forward, loss, backward, the
    optimizer's update). Compiled: the model and loss through torch.compile (AOTAutograd compiles the
    backward too); the optimizer's step stays eager."""
    if name == "mlp_train_step":
        model = torch_models.mlp()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x, y = torch.randn(256, 784), torch.randint(0, 10, (256,))
    else:
        model = torch_models.ResNet18()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x, y = torch.randn(16, 3, 64, 64), torch.randint(0, 1000, (16,))
    loss_fn = lambda x, y: F.cross_entropy(model(x), y)
    if compile_it:
        loss_fn = torch.compile(loss_fn)
    if autocast:
        # Mixed precision as PyTorch users write it: the forward (and so its backward) under autocast; the
        # parameters and the optimizer stay f32.
        inner = loss_fn
        loss_fn = lambda x, y: _autocast(inner, x, y, autocast)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(x, y).backward()
        opt.step()

    return step


def tiny_latency():
    x, w, b = torch.randn(64, 64), torch.randn(64, 64), torch.randn(64)
    return lambda: torch.relu(x @ w + b)


def run_training_workload(name, args):
    """Times one of the training workloads; `NAME:peak_mb` is the process's peak resident memory above
    what it held before the model was built (run one workload per process to compare it)."""
    baseline = timing.resident_mb()
    if name == "tiny_latency":
        fn = tiny_latency()
        if args.mode == "compile":
            fn = torch.compile(fn)
        with torch.no_grad():
            if args.mode == "compile":
                timing.report(name + ":compile", timing.first_call_ms(fn))
            timing.report(name, timing.median_ms(fn, args))
    else:
        step = train_step(name, args.mode == "compile", args.autocast)
        if args.mode == "compile":
            timing.report(name + ":compile", timing.first_call_ms(step))
        timing.report(name, timing.median_ms(step, args))
    timing.report(name + ":peak_mb", timing.peak_mb() - baseline)


def main():
    ap = timing.arguments(__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    ap.add_argument("--autocast", choices=["bf16", "f16"], default=None,
                    help="the training steps' forward under torch.autocast on the CPU in this dtype")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for name in timing.selected(args):
        if name == "mlp_train":
            mlp_train(args.mode == "compile", args)
            continue
        if name in timing.TRAINING:
            run_training_workload(name, args)
            continue
        fn, inputs = build(name)
        # Inference: no autograd state (compiled under no_grad too, since Dynamo recompiles on a change).
        with torch.no_grad():
            if args.mode == "compile":
                fn = torch.compile(fn)
                timing.report(name + ":compile", timing.first_call_ms(lambda: fn(*inputs)))
            timing.report(name, timing.median_ms(lambda: fn(*inputs), args))


if __name__ == "__main__":
    main()
