"""The benchmark workloads in JAX, each under jax.jit (XLA's CPU backend), in a virtualenv.
  jax_workloads.py [--only NAME,...]   prints `NAME MEDIAN_MS` per workload, and `NAME:compile MS` for
its first call (tracing and XLA compilation; JAX keeps no compilation cache on disk unless asked)."""
import jax
import jax.numpy as jnp

import timing


def layer_norm(x, w, b, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * w + b


def linear(x, w, b):
    """torch.nn.Linear's layout: w is [out, in]."""
    return x @ w.T + b


def mlp_loss(params, x, labels):
    """Mean cross-entropy of the 784-1024-1024-10 MLP."""
    (w1, b1), (w2, b2), (w3, b3) = params
    h = jax.nn.relu(linear(x, w1, b1))
    h = jax.nn.relu(linear(h, w2, b2))
    logp = jax.nn.log_softmax(linear(h, w3, b3), axis=1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def cross_entropy(logits, labels):
    logp = jax.nn.log_softmax(logits, axis=1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


def mlp_train_step_fn():
    """mlp_train_step: the MLP's loss, gradients and Adam's update (torch.optim.Adam's algorithm, lr 1e-3)
    in one jitted function; parameters and optimizer state are donated, so XLA may update them in place."""
    def step(params, m, v, t, x, labels):
        loss, grads = jax.value_and_grad(mlp_loss)(params, x, labels)
        b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        t = t + 1
        step_size = lr / (1 - b1 ** t)
        correction2 = jnp.sqrt(1 - b2 ** t)
        params = jax.tree_util.tree_map(lambda p, m, v: p - step_size * m / (jnp.sqrt(v) / correction2 + eps),
                                        params, m, v)
        return params, m, v, t, loss
    return jax.jit(step, donate_argnums=(0, 1, 2))


# ResNet-18 as torchvision builds it, NCHW, batch norm in training form (batch statistics; running
# statistics updated with momentum 0.1, as PyTorch does), SGD with momentum 0.9.
def conv(x, w, stride, pad):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad), (pad, pad)],
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))


def batch_norm(x, p, state):
    mean = jnp.mean(x, axis=(0, 2, 3))
    var = jnp.var(x, axis=(0, 2, 3))
    y = (x - mean[None, :, None, None]) * jax.lax.rsqrt(var[None, :, None, None] + 1e-5)
    n = x.shape[0] * x.shape[2] * x.shape[3]
    new_state = (0.9 * state[0] + 0.1 * mean, 0.9 * state[1] + 0.1 * var * n / (n - 1))
    return y * p[0][None, :, None, None] + p[1][None, :, None, None], new_state


def resnet18_init(key, classes=1000):
    keys = iter(jax.random.split(key, 64))
    def conv_w(cout, cin, k):  # kaiming_normal_, fan_out, relu
        return jax.random.normal(next(keys), (cout, cin, k, k), jnp.float32) * (2.0 / (cout * k * k)) ** 0.5
    def bn(c):
        return (jnp.ones(c, jnp.float32), jnp.zeros(c, jnp.float32)), (jnp.zeros(c, jnp.float32), jnp.ones(c, jnp.float32))
    params, state = {"conv1": conv_w(64, 3, 7)}, {}
    params["bn1"], state["bn1"] = bn(64)
    cin = 64
    for stage in range(4):
        width = 64 << stage
        for block in range(2):
            name = "layer%d.%d" % (stage + 1, block)
            stride = 2 if stage > 0 and block == 0 else 1
            params[name + ".conv1"] = conv_w(width, cin, 3)
            params[name + ".bn1"], state[name + ".bn1"] = bn(width)
            params[name + ".conv2"] = conv_w(width, width, 3)
            params[name + ".bn2"], state[name + ".bn2"] = bn(width)
            if stride != 1 or cin != width:
                params[name + ".down"] = conv_w(width, cin, 1)
                params[name + ".downbn"], state[name + ".downbn"] = bn(width)
            cin = width
    bound = 512 ** -0.5
    params["fc"] = (jax.random.uniform(next(keys), (classes, 512), jnp.float32, -bound, bound),
                    jax.random.uniform(next(keys), (classes,), jnp.float32, -bound, bound))
    return params, state


def resnet18_loss(params, state, x, labels):
    new_state = {}
    def bn(v, name):
        y, new_state[name] = batch_norm(v, params[name], state[name])
        return y
    h = jax.nn.relu(bn(conv(x, params["conv1"], 2, 3), "bn1"))
    h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 3, 3), (1, 1, 2, 2), [(0, 0), (0, 0), (1, 1), (1, 1)])
    for stage in range(4):
        for block in range(2):
            name = "layer%d.%d" % (stage + 1, block)
            stride = 2 if stage > 0 and block == 0 else 1
            out = jax.nn.relu(bn(conv(h, params[name + ".conv1"], stride, 1), name + ".bn1"))
            out = bn(conv(out, params[name + ".conv2"], 1, 1), name + ".bn2")
            short = bn(conv(h, params[name + ".down"], stride, 0), name + ".downbn") if name + ".down" in params else h
            h = jax.nn.relu(out + short)
    w, b = params["fc"]
    return cross_entropy(linear(jnp.mean(h, axis=(2, 3)), w, b), labels), new_state


def resnet18_train_step_fn():
    def step(params, state, buf, x, labels):
        (loss, state), grads = jax.value_and_grad(resnet18_loss, has_aux=True)(params, state, x, labels)
        buf = jax.tree_util.tree_map(lambda b, g: 0.9 * b + g, buf, grads)
        params = jax.tree_util.tree_map(lambda p, b: p - 0.01 * b, params, buf)
        return params, state, buf, loss
    return jax.jit(step, donate_argnums=(0, 1, 2))


def train_call(name, key):
    """A callable running one training step (state carried from call to call), and the inputs' ready."""
    keys = jax.random.split(key, 4)
    if name == "mlp_train_step":
        sizes = [(1024, 784), (1024, 1024), (10, 1024)]
        params = [(jax.random.uniform(keys[0], s, jnp.float32, -s[1] ** -0.5, s[1] ** -0.5),
                   jnp.zeros(s[0], jnp.float32)) for s in sizes]
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        carried = [params, zeros, jax.tree_util.tree_map(jnp.zeros_like, params), jnp.float32(0)]
        x, labels = jax.random.normal(keys[1], (256, 784), jnp.float32), jax.random.randint(keys[2], (256,), 0, 10)
        fn = mlp_train_step_fn()
    else:
        params, state = resnet18_init(keys[0])
        carried = [params, state, jax.tree_util.tree_map(jnp.zeros_like, params)]
        x = jax.random.normal(keys[1], (16, 3, 64, 64), jnp.float32)
        labels = jax.random.randint(keys[2], (16,), 0, 1000)
        fn = resnet18_train_step_fn()
    x, labels = jax.block_until_ready((x, labels))

    def call():
        out = jax.block_until_ready(fn(*carried, x, labels))
        carried[:] = out[:-1]
    return call


def build(name, key):
    """(function, its arguments) for one workload; definitions as in the peers' torch_peer.py."""
    keys = jax.random.split(key, 8)
    normal = lambda i, *shape: jax.random.normal(keys[i], shape, jnp.float32)
    if name == "ew_chain":
        return (lambda x: jax.nn.sigmoid(x * 1.7 + 0.3) * jnp.tanh(x) - 0.5 * x), (normal(0, 16 << 20),)
    if name == "softmax_rows":
        return (lambda x: jax.nn.softmax(x, axis=1)), (normal(0, 4096, 4096),)
    if name == "layernorm":
        return layer_norm, (normal(0, 8192, 1024), normal(1, 1024), normal(2, 1024))
    if name == "gemm2048":
        return (lambda a, b: a @ b), (normal(0, 2048, 2048), normal(1, 2048, 2048))
    if name == "linear_relu":
        return (lambda x, w, b: jax.nn.relu(linear(x, w, b))), (normal(0, 512, 2048), normal(1, 2048, 2048),
                                                                normal(2, 2048))
    if name == "tiny_latency":
        return (lambda x, w, b: jax.nn.relu(x @ w + b)), (normal(0, 64, 64), normal(1, 64, 64), normal(2, 64))
    if name == "mlp_train":
        sizes = [(1024, 784), (1024, 1024), (10, 1024)]
        params = [(normal(2 * i, *s) * s[1] ** -0.5, jnp.zeros(s[0], jnp.float32)) for i, s in enumerate(sizes)]
        labels = jax.random.randint(keys[7], (256,), 0, 10)
        return jax.grad(mlp_loss), (params, normal(6, 256, 784), labels)
    raise KeyError(name)


def main():
    args = timing.arguments(__doc__.splitlines()[0]).parse_args()
    key = jax.random.PRNGKey(0)
    for name in timing.selected(args):
        baseline = timing.resident_mb()
        if name in ("mlp_train_step", "resnet18_train_step"):
            call = train_call(name, key)
            timing.report(name + ":compile", timing.first_call_ms(call))
            timing.report(name, timing.median_ms(call, args))
            timing.report(name + ":peak_mb", timing.peak_mb() - baseline)
            continue
        fn, inputs = build(name, key)
        inputs = jax.block_until_ready(inputs)  # random inputs are computed asynchronously
        fn = jax.jit(fn)
        call = lambda: jax.block_until_ready(fn(*inputs))
        timing.report(name + ":compile", timing.first_call_ms(call))
        timing.report(name, timing.median_ms(call, args))


if __name__ == "__main__":
    main()
