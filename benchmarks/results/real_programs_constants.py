import time, numpy as np, jax, jax.numpy as jnp, axle
r = np.random.default_rng(0)
w1, b1, w2 = r.standard_normal((256, 512)).astype(np.float32), r.standard_normal(512).astype(np.float32), r.standard_normal((512, 64)).astype(np.float32)
x = r.standard_normal((128, 256)).astype(np.float32)
closed = lambda a: jnp.tanh(a @ w1 + b1) @ w2
passed = lambda a, p1, q1, p2: jnp.tanh(a @ p1 + q1) @ p2
ec = axle.compile(jax.jit(closed).lower(x).as_text())
ep = axle.compile(jax.jit(passed).lower(x, w1, b1, w2).as_text())
jc = jax.jit(closed); jp = jax.jit(passed)
xj = jnp.asarray(x); w1j, b1j, w2j = map(jnp.asarray, (w1, b1, w2))
def t(f, n=200):
    f(); s = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - s) / n * 1e6
res = {k: [] for k in ("axle closed", "axle args", "xla closed", "xla args")}
for _ in range(7):
    res["axle closed"].append(t(lambda: ec(x)))
    res["axle args"].append(t(lambda: ep(x, w1, b1, w2)))
    res["xla closed"].append(t(lambda: jc(xj).block_until_ready()))
    res["xla args"].append(t(lambda: jp(xj, w1j, b1j, w2j).block_until_ready()))
for k, v in res.items(): print(f"{k:12s} median {np.median(v):8.1f} us  (min {min(v):.1f}, max {max(v):.1f})")
print("match", np.allclose(ec(x), jc(xj), rtol=1e-4, atol=1e-4), np.allclose(ep(x, w1, b1, w2), jc(xj), rtol=1e-4, atol=1e-4))
