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
        fn, inputs = build(name, key)
        inputs = jax.block_until_ready(inputs)  # random inputs are computed asynchronously
        fn = jax.jit(fn)
        call = lambda: jax.block_until_ready(fn(*inputs))
        timing.report(name + ":compile", timing.first_call_ms(call))
        timing.report(name, timing.median_ms(call, args))


if __name__ == "__main__":
    main()
