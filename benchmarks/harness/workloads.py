"""The workloads and their targets. Definitions match /work/shared/peers/torch_peer.py; the smelt side
of each is an IR file in benchmarks/workloads/ (or, for the training workloads, the model API in
benchmarks/native/train_steps.cpp), the peers' in benchmarks/peers/."""
from dataclasses import dataclass, field
from typing import Optional

MB = 1 << 20


@dataclass(frozen=True)
class Target:
    """One goal: `metric` compared with `op` ('>=' or '<=') against `threshold`."""
    metric: str
    op: str
    threshold: float
    label: str  # how the report states it, e.g. ">= 10x libtorch"

    def met(self, value):
        return value >= self.threshold if self.op == ">=" else value <= self.threshold


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str
    ir: str                       # file in benchmarks/workloads/
    min_bytes: Optional[int] = None  # fewest bytes moved: each input read once, each output written once
    flops: Optional[int] = None
    grad: str = ""                # smelt bench --grad NAMES
    targets: tuple = field(default_factory=tuple)
    # Timed through the model API by benchmarks/native/train_steps.cpp (smelt_train_steps --only NAME)
    # instead of `smelt bench` on an IR file; every contender also reports its peak memory.
    native: bool = False


def _f32_bytes(*counts):
    return 4 * sum(counts)


WORKLOADS = [
    Workload("ew_chain", "y = sigmoid(x*1.7+0.3)*tanh(x) - 0.5*x, 16M f32", "ew_chain.ir",
             min_bytes=_f32_bytes(16 * MB, 16 * MB),
             targets=(Target("speedup_libtorch", ">=", 10, ">= 10x libtorch"),
                      Target("stream_pct", ">=", 85, ">= 85% of STREAM copy"),
                      Target("fresh_over_reused", "<=", 1.2, "new outputs every run <= 1.2x reused outputs"))),
    Workload("softmax_rows", "softmax over rows, 4096x4096 f32", "softmax_rows.ir",
             min_bytes=_f32_bytes(4096 * 4096, 4096 * 4096),
             targets=(Target("stream_pct", ">=", 80, ">= 80% of STREAM copy"),
                      Target("speedup_libtorch", ">=", 2.5, ">= 2.5x libtorch"))),
    Workload("layernorm", "layer_norm over 8192x1024 f32 with weight and bias", "layernorm.ir",
             min_bytes=_f32_bytes(8192 * 1024, 1024, 1024, 8192 * 1024),
             targets=(Target("stream_pct", ">=", 80, ">= 80% of STREAM copy"),
                      Target("speedup_libtorch", ">=", 2, ">= 2x libtorch"))),
    Workload("gemm2048", "C = A @ B, 2048x2048x2048 f32", "gemm2048.ir", flops=2 * 2048 ** 3,
             targets=(Target("best_gemm_pct", ">=", 95, ">= 95% of the best BLAS"),)),
    Workload("linear_relu", "relu(X @ W^T + b), X 512x2048, W 2048x2048", "linear_relu.ir",
             flops=2 * 512 * 2048 * 2048,
             targets=(Target("speedup_libtorch", ">=", 1.1, ">= 1.1x libtorch"),)),
    Workload("mlp_train", "MLP 784-1024-1024-10, batch 256: cross-entropy loss and every parameter's "
             "gradient", "mlp_train.ir", grad="w1,b1,w2,b2,w3,b3",
             targets=(Target("cold_compile_ms", "<=", 2000, "cold compile <= 2 s"),
                      Target("warm_compile_ms", "<=", 50, "warm start (disk cache) <= 50 ms"))),
    Workload("mlp_train_step", "One training step of the MLP 784-1024-1024-10, batch 256: forward, cross-entropy, "
             "backward and Adam's update (smelt: nn::TrainStep, one compiled graph)", "", native=True,
             targets=(Target("speedup_libtorch", ">=", 1.5, ">= 1.5x libtorch"),
                      Target("memory_ratio_libtorch", "<=", 0.7, "peak memory <= 0.7x libtorch's"),
                      Target("speedup_torch_compile", ">=", 1, ">= torch.compile"),
                      Target("speedup_jax", ">=", 1, ">= jax.jit"))),
    Workload("resnet18_train_step", "One training step of ResNet-18 (torchvision's), batch 16 of 3x64x64, 1000 "
             "classes: forward with batch norm in training form, cross-entropy, backward, SGD with momentum 0.9",
             "", native=True,
             targets=(Target("speedup_libtorch", ">=", 1.2, ">= 1.2x libtorch"),
                      Target("speedup_torch_compile", ">=", 1, ">= torch.compile"),
                      Target("speedup_jax", ">=", 1, ">= jax.jit"))),
    Workload("tiny_latency", "relu(x @ w + b) at 64x64 per call (smelt: a compiled nn::Predictor)", "",
             native=True, targets=(Target("speedup_libtorch", ">=", 2, "per call <= 0.5x libtorch's"),)),
]

BY_NAME = {w.name: w for w in WORKLOADS}
