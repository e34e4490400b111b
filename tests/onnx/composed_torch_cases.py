"""The ONNX converters smelt composes from its own ops, each as a one-node model with the PyTorch
function that computes the same thing (check_composed_torch.py runs them in f64, forward and gradient).

A case is Case(label, op, attrs, inputs, torch_fn, opset, outputs): `inputs` are (name, array, role) with
role "wrt" (a graph input the gradient is taken for), "feed" (a graph input, not differentiated) or
"init" (an initializer: indices, axes, repeats and the like, which the converters want constant).
`torch_fn` takes the inputs as torch tensors by name and returns the outputs in order (a tensor or a
tuple). Float attributes are stored as f32 in ONNX, so the torch side rounds them the same way (f32()).
Inputs stay away from kinks: clamps, relus and thresholds see values spread wide, and a random value
lands within rounding of a kink with probability ~1e-15."""
from collections import namedtuple

import numpy as np
import torch
import torch.nn.functional as F

Case = namedtuple("Case", "label op attrs inputs torch_fn opset outputs", defaults=(17, ("y",)))


def f32(v):
    return float(np.float32(v))


def unary(label, op, attrs, fn, x, opset=17):
    return Case(label, op, attrs, [("x", x, "wrt")], lambda t: fn(t["x"]), opset)


def activation_cases(rng):
    x = rng.standard_normal((3, 4, 5)) * 3
    selu_a, selu_g = f32(1.67326319217681884765625), f32(1.05070102214813232421875)
    return [
        unary("LeakyRelu alpha=0.1", "LeakyRelu", {"alpha": 0.1}, lambda x: F.leaky_relu(x, f32(0.1)), x),
        unary("Elu alpha=0.7", "Elu", {"alpha": 0.7}, lambda x: F.elu(x, f32(0.7)), x),
        unary("Selu defaults", "Selu", {},
              lambda x: torch.where(x > 0, selu_g * x, selu_g * selu_a * (torch.exp(x) - 1)), x),
        unary("Celu alpha=0.8", "Celu", {"alpha": 0.8}, lambda x: F.celu(x, f32(0.8)), x, opset=12),
        unary("HardSigmoid defaults", "HardSigmoid", {}, lambda x: torch.clamp(f32(0.2) * x + 0.5, 0, 1), x),
        unary("HardSigmoid alpha=0.3 beta=0.4", "HardSigmoid", {"alpha": 0.3, "beta": 0.4},
              lambda x: torch.clamp(f32(0.3) * x + f32(0.4), 0, 1), x),
        unary("HardSwish", "HardSwish", {}, F.hardswish, x),
        unary("Softsign", "Softsign", {}, F.softsign, x),
        unary("Mish", "Mish", {}, F.mish, x, opset=18),
        unary("ThresholdedRelu alpha=0.5", "ThresholdedRelu", {"alpha": 0.5},
              lambda x: torch.where(x > 0.5, x, torch.zeros_like(x)), x),
        unary("Shrink lambd=0.5 bias=0.25", "Shrink", {"lambd": 0.5, "bias": 0.25},
              lambda x: torch.where(x < -0.5, x + 0.25, torch.where(x > 0.5, x - 0.25, torch.zeros_like(x))), x),
        Case("PRelu slope [3,1,1]", "PRelu", {},
             [("x", rng.standard_normal((2, 3, 4, 5)), "wrt"), ("slope", rng.standard_normal((3, 1, 1)), "wrt")],
             lambda t: torch.where(t["x"] < 0, t["x"] * t["slope"], t["x"])),
        unary("Sinh", "Sinh", {}, torch.sinh, x / 3),
        unary("Cosh", "Cosh", {}, torch.cosh, x / 3),
        unary("Asinh", "Asinh", {}, torch.asinh, x),
        unary("Acosh", "Acosh", {}, torch.acosh, 1.1 + np.abs(x)),
        unary("Atanh", "Atanh", {}, torch.atanh, 0.9 * np.tanh(x)),
        Case("Pow, both operands", "Pow", {},
             [("x", 0.5 + np.abs(rng.standard_normal((3, 4))), "wrt"), ("e", rng.standard_normal((4,)), "wrt")],
             lambda t: torch.pow(t["x"], t["e"])),
        Case("Mod fmod=1", "Mod", {"fmod": 1},
             [("x", 3 * rng.standard_normal((3, 4)), "wrt"),
              ("d", rng.choice([-1, 1], (3, 4)) * (0.5 + np.abs(rng.standard_normal((3, 4)))), "feed")],
             lambda t: torch.fmod(t["x"], t["d"])),
        Case("Clip, bounds as initializers", "Clip", {},
             [("x", x, "wrt"), ("lo", np.array(-0.5), "init"), ("hi", np.array(0.75), "init")],
             lambda t: torch.clamp(t["x"], -0.5, 0.75), 13),
        Case("Where", "Where", {},
             [("c", rng.random((3, 4)) > 0.5, "init"), ("a", rng.standard_normal((3, 4)), "wrt"),
              ("b", rng.standard_normal((4,)), "wrt")],
             lambda t: torch.where(t["c"], t["a"], t["b"])),
    ]


def normalization_cases(rng):
    x = rng.standard_normal((2, 4, 3, 5)) * 2 + 0.5
    c = lambda: rng.standard_normal((4,))  # noqa: E731
    g = lambda: rng.standard_normal((2,))  # noqa: E731
    eps = f32(1e-5)
    # ONNX's LRN sums over [c - floor((size-1)/2), c + ceil((size-1)/2)]; torch's pads size//2 before,
    # (size-1)//2 after: the same windows for an odd size.
    return [
        Case("InstanceNormalization", "InstanceNormalization", {"epsilon": 1e-5},
             [("x", x, "wrt"), ("scale", c(), "wrt"), ("bias", c(), "wrt")],
             lambda t: F.instance_norm(t["x"], weight=t["scale"], bias=t["bias"], eps=eps)),
        Case("GroupNormalization opset 18 (per group)", "GroupNormalization", {"num_groups": 2, "epsilon": 1e-5},
             [("x", x, "wrt"), ("scale", g(), "wrt"), ("bias", g(), "wrt")],
             lambda t: F.group_norm(t["x"], 2, t["scale"].repeat_interleave(2), t["bias"].repeat_interleave(2), eps),
             18),
        Case("GroupNormalization opset 21 (per channel)", "GroupNormalization", {"num_groups": 2, "epsilon": 1e-5},
             [("x", x, "wrt"), ("scale", c(), "wrt"), ("bias", c(), "wrt")],
             lambda t: F.group_norm(t["x"], 2, t["scale"], t["bias"], eps), 21),
        Case("LayerNormalization axis=1", "LayerNormalization", {"axis": 1, "epsilon": 1e-5},
             [("x", x, "wrt"), ("scale", rng.standard_normal((4, 3, 5)), "wrt"),
              ("bias", rng.standard_normal((4, 3, 5)), "wrt")],
             lambda t: F.layer_norm(t["x"], (4, 3, 5), t["scale"], t["bias"], eps)),
        Case("BatchNormalization training_mode=1", "BatchNormalization", {"epsilon": 1e-5, "training_mode": 1},
             [("x", x, "wrt"), ("scale", c(), "wrt"), ("bias", c(), "wrt"), ("mean", c(), "init"),
              ("var", 0.5 + np.abs(c()), "init")],
             lambda t: F.batch_norm(t["x"], None, None, t["scale"], t["bias"], training=True, eps=eps), 15),
        Case("MeanVarianceNormalization", "MeanVarianceNormalization", {}, [("x", x, "wrt")],
             lambda t: (t["x"] - t["x"].mean((0, 2, 3), keepdim=True))
             / (t["x"].var((0, 2, 3), unbiased=False, keepdim=True).sqrt() + 1e-9)),
        Case("LRN size=5", "LRN", {"size": 5, "alpha": 0.01, "beta": 0.75, "bias": 1.5}, [("x", x, "wrt")],
             lambda t: F.local_response_norm(t["x"], 5, alpha=f32(0.01), beta=f32(0.75), k=1.5)),
        Case("Softmax opset 11 (coerced to 2-D)", "Softmax", {"axis": 1},
             [("x", rng.standard_normal((2, 3, 4)), "wrt")],
             lambda t: torch.softmax(t["x"].reshape(2, 12), 1).reshape(2, 3, 4), 11),
        Case("LogSoftmax axis=1", "LogSoftmax", {"axis": 1}, [("x", rng.standard_normal((2, 3, 4)), "wrt")],
             lambda t: torch.log_softmax(t["x"], 1)),
    ]


def index_cases(rng):
    data = rng.standard_normal((4, 3))
    gathered = rng.integers(-4, 4, (3, 2))
    return [
        Case("CumSum exclusive reverse", "CumSum", {"exclusive": 1, "reverse": 1},
             [("x", rng.standard_normal((3, 5)), "wrt"), ("axis", np.array(1), "init")],
             lambda t: t["x"].flip(1).cumsum(1).flip(1) - t["x"]),
        Case("GatherElements, negative indices", "GatherElements", {"axis": 1},
             [("x", rng.standard_normal((3, 4)), "wrt"), ("i", gathered, "init")],
             lambda t: torch.gather(t["x"], 1, torch.tensor(gathered % 4))),
        Case("ScatterElements add", "ScatterElements", {"axis": 0, "reduction": "add"},
             [("x", data, "wrt"), ("i", np.array([[1, 0, 3], [1, 2, 1]]), "init"),
              ("u", rng.standard_normal((2, 3)), "wrt")],
             lambda t: t["x"].scatter_add(0, torch.tensor([[1, 0, 3], [1, 2, 1]]), t["u"]), 16),
        Case("ScatterND", "ScatterND", {},
             [("x", data, "wrt"), ("i", np.array([[3], [1]]), "init"), ("u", rng.standard_normal((2, 3)), "wrt")],
             lambda t: t["x"].index_put((torch.tensor([3, 1]),), t["u"])),
        Case("ScatterND add, repeated index", "ScatterND", {"reduction": "add"},
             [("x", data, "wrt"), ("i", np.array([[3, 1], [0, 2], [3, 1]]), "init"),
              ("u", rng.standard_normal((3,)), "wrt")],
             lambda t: t["x"].index_put((torch.tensor([3, 0, 3]), torch.tensor([1, 2, 1])), t["u"], accumulate=True),
             16),
        Case("GatherND", "GatherND", {},
             [("x", rng.standard_normal((2, 3, 4)), "wrt"), ("i", np.array([[1, 2], [0, 0], [1, 2]]), "init")],
             lambda t: t["x"][torch.tensor([1, 0, 1]), torch.tensor([2, 0, 2])]),
        Case("GatherND batch_dims=1", "GatherND", {"batch_dims": 1},
             [("x", rng.standard_normal((2, 3, 4)), "wrt"), ("i", np.array([[[2], [0]], [[1], [1]]]), "init")],
             lambda t: t["x"][torch.tensor([[0, 0], [1, 1]]), torch.tensor([[2, 0], [1, 1]])]),
        Case("ReverseSequence", "ReverseSequence", {"batch_axis": 1, "time_axis": 0},
             [("x", rng.standard_normal((4, 3, 2)), "wrt"), ("lens", np.array([4, 1, 3]), "init")],
             lambda t: torch.stack([torch.cat([t["x"][:n, b].flip(0), t["x"][n:, b]]) for b, n in
                                    enumerate([4, 1, 3])], 1)),
        Case("Trilu upper k=1", "Trilu", {"upper": 1},
             [("x", rng.standard_normal((2, 4, 5)), "wrt"), ("k", np.array(1), "init")],
             lambda t: torch.triu(t["x"], 1), 14),
        Case("Trilu lower k=-1", "Trilu", {"upper": 0},
             [("x", rng.standard_normal((4, 5)), "wrt"), ("k", np.array(-1), "init")],
             lambda t: torch.tril(t["x"], -1), 14),
        Case("Tile", "Tile", {},
             [("x", rng.standard_normal((2, 3)), "wrt"), ("r", np.array([2, 3]), "init")],
             lambda t: t["x"].repeat(2, 3)),
        Case("Split into 1 and 3", "Split", {"axis": 1},
             [("x", rng.standard_normal((2, 4)), "wrt"), ("s", np.array([1, 3]), "init")],
             lambda t: tuple(torch.split(t["x"], [1, 3], 1)), 13, ("y", "z")),
        Case("Pad reflect", "Pad", {"mode": "reflect"},
             [("x", rng.standard_normal((1, 2, 4, 5)), "wrt"), ("p", np.array([0, 0, 1, 2, 0, 0, 2, 1]), "init")],
             lambda t: F.pad(t["x"], (2, 1, 1, 2), mode="reflect")),
        Case("Pad edge", "Pad", {"mode": "edge"},
             [("x", rng.standard_normal((1, 2, 4, 5)), "wrt"), ("p", np.array([0, 0, 2, 1, 0, 0, 1, 3]), "init")],
             lambda t: F.pad(t["x"], (1, 3, 2, 1), mode="replicate")),
    ]


def loss_cases(rng):
    logits = rng.standard_normal((3, 5, 2))
    labels = np.array([[1, 4], [0, 2], [3, 3]])
    labels_ignored = np.array([[1, 4], [-1, 2], [3, -1]])
    w = 0.5 + rng.random(5)
    return [
        Case("SoftmaxCrossEntropyLoss sum", "SoftmaxCrossEntropyLoss", {"reduction": "sum"},
             [("x", logits, "wrt"), ("t", labels, "init")],
             lambda t: F.cross_entropy(t["x"], torch.tensor(labels), reduction="sum"), 13),
        Case("SoftmaxCrossEntropyLoss mean, weights, ignore_index", "SoftmaxCrossEntropyLoss",
             {"reduction": "mean", "ignore_index": -1},
             [("x", logits, "wrt"), ("t", labels_ignored, "init"), ("w", w, "init")],
             lambda t: F.cross_entropy(t["x"], torch.tensor(labels_ignored), weight=torch.tensor(w), ignore_index=-1),
             13),
        Case("NegativeLogLikelihoodLoss mean, weights, ignore_index", "NegativeLogLikelihoodLoss",
             {"reduction": "mean", "ignore_index": -1},
             [("x", logits, "wrt"), ("t", labels_ignored, "init"), ("w", w, "init")],
             lambda t: F.nll_loss(t["x"], torch.tensor(labels_ignored), weight=torch.tensor(w), ignore_index=-1), 13),
        Case("NegativeLogLikelihoodLoss none", "NegativeLogLikelihoodLoss", {"reduction": "none"},
             [("x", logits, "wrt"), ("t", labels, "init")],
             lambda t: F.nll_loss(t["x"], torch.tensor(labels), reduction="none"), 13),
    ]


def spatial_cases(rng):
    img = rng.standard_normal((1, 2, 3, 4))
    grid = rng.uniform(-1.2, 1.2, (1, 5, 4, 2))
    empty = np.zeros((0,))

    def resize(label, attrs, scales, torch_kwargs, opset=13):
        return Case(label, "Resize", attrs,
                    [("x", img, "wrt"), ("roi", empty, "init"), ("scales", np.array(scales, dtype=float), "init")],
                    lambda t: F.interpolate(t["x"], **torch_kwargs), opset)

    def grid_sample(mode, padding, align):
        return Case(f"GridSample {mode} {padding} align_corners={align}", "GridSample",
                    {"mode": mode, "padding_mode": padding, "align_corners": align},
                    [("x", img, "wrt"), ("g", grid, "wrt" if mode == "bilinear" else "feed")],
                    lambda t: F.grid_sample(t["x"], t["g"], mode=mode, padding_mode=padding, align_corners=bool(align)),
                    16)

    return [
        resize("Resize linear half_pixel x2", {"mode": "linear"}, [1, 1, 2, 2],
               {"scale_factor": 2, "mode": "bilinear", "align_corners": False}),
        resize("Resize linear align_corners x2", {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
               [1, 1, 2, 2], {"scale_factor": 2, "mode": "bilinear", "align_corners": True}),
        resize("Resize cubic half_pixel x2", {"mode": "cubic"}, [1, 1, 2, 2],
               {"scale_factor": 2, "mode": "bicubic", "align_corners": False}),
        resize("Resize nearest asymmetric floor x3", {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                                      "nearest_mode": "floor"}, [1, 1, 3, 3],
               {"scale_factor": 3, "mode": "nearest"}),
        grid_sample("bilinear", "zeros", 0),
        grid_sample("bilinear", "border", 1),
        grid_sample("bilinear", "reflection", 0),
        grid_sample("nearest", "zeros", 1),
        Case("DepthToSpace CRD", "DepthToSpace", {"blocksize": 2, "mode": "CRD"},
             [("x", rng.standard_normal((1, 8, 2, 3)), "wrt")], lambda t: F.pixel_shuffle(t["x"], 2)),
        Case("DepthToSpace DCR", "DepthToSpace", {"blocksize": 2},
             [("x", rng.standard_normal((1, 8, 2, 3)), "wrt")],
             lambda t: t["x"].reshape(1, 2, 2, 2, 2, 3).permute(0, 3, 4, 1, 5, 2).reshape(1, 2, 4, 6)),
        Case("SpaceToDepth", "SpaceToDepth", {"blocksize": 2},
             [("x", rng.standard_normal((1, 2, 4, 6)), "wrt")],
             lambda t: t["x"].reshape(1, 2, 2, 2, 3, 2).permute(0, 3, 5, 1, 2, 4).reshape(1, 8, 2, 3)),
        Case("MaxPool with Indices, padded, ceil_mode", "MaxPool",
             {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
             [("x", rng.standard_normal((2, 2, 6, 7)), "wrt")], max_pool_with_flat_indices, 12, ("y", "i")),
        Case("AveragePool count_include_pad=0, ceil_mode", "AveragePool",
             {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
             [("x", rng.standard_normal((1, 2, 6, 7)), "wrt")],
             lambda t: F.avg_pool2d(t["x"], (3, 2), 2, 1, ceil_mode=True, count_include_pad=False), 19),
        Case("ConvTranspose groups=2 dilation=2 output_padding=1", "ConvTranspose",
             {"group": 2, "dilations": [2, 2], "strides": [2, 2], "output_padding": [1, 1], "pads": [1, 1, 1, 1]},
             [("x", rng.standard_normal((1, 4, 3, 4)), "wrt"), ("w", rng.standard_normal((4, 3, 3, 3)), "wrt"),
              ("b", rng.standard_normal((6,)), "wrt")],
             lambda t: F.conv_transpose2d(t["x"], t["w"], t["b"], stride=2, padding=1, output_padding=1, groups=2,
                                          dilation=2)),
        Case("Gemm transA transB alpha beta", "Gemm", {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 1.5},
             [("a", rng.standard_normal((4, 3)), "wrt"), ("b", rng.standard_normal((5, 4)), "wrt"),
              ("c", rng.standard_normal((5,)), "wrt")],
             lambda t: 0.5 * t["a"].T @ t["b"].T + 1.5 * t["c"]),
    ]


def max_pool_with_flat_indices(t):
    # ONNX's Indices index the whole tensor (row-major, storage_order 0); torch's each (n, c) plane.
    y, i = F.max_pool2d(t["x"], 3, 2, 1, ceil_mode=True, return_indices=True)
    n, c, h, w = t["x"].shape
    plane = torch.arange(n * c).reshape(n, c, 1, 1) * (h * w)
    return y, i + plane


def all_cases(rng):
    return activation_cases(rng) + normalization_cases(rng) + index_cases(rng) + loss_cases(rng) + spatial_cases(rng)
