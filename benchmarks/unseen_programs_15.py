"""A fifteenth sweep of ordinary JAX programs outside `axle bench` (2026-11-29, fourteenth session):
programs whose time is spent inside loops (lax.fori_loop, lax.scan, lax.while_loop) over small and
medium kernels, which the first fourteen sweeps had little of. Explicit PDE and stencil time
stepping (3-D FTCS heat with zero-flux faces, a 4th-order acoustic wave with a Ricker source, a
sponge and a receiver line recorded by scan, Gray-Scott reaction-diffusion with a 9-point Laplacian,
a D2Q9 lid-driven cavity in channel-last layout with moving-wall bounce-back, 2-D viscous Burgers
with first-order upwinding, WENO5-JS with Lax-Friedrichs splitting and SSP-RK3 for 1-D Burgers,
Kuramoto-Sivashinsky by ETDRK4 in rfft space, linear shallow water on an Arakawa C-grid with
Coriolis), iterative solvers (3-D red-black Gauss-Seidel, vmapped Jacobi-preconditioned CG with a
variable-coefficient matrix-free operator and a tolerance while_loop, a Dirichlet multigrid V-cycle
with strided-conv full weighting and lhs-dilated-conv bilinear prolongation, restarted GMRES(30)
with CGS2 Arnoldi and a QR least-squares solve, Jacobi sweeps in a residual-checked while_loop),
ODE / SDE integrators (RK4 of a Lorenz-96 ensemble, velocity-Verlet Lennard-Jones MD over a top_k
neighbour table, an Euler-Maruyama Ornstein-Uhlenbeck ensemble with in-loop random normals, an
adaptive Dormand-Prince while_loop with accept / reject on Van der Pol oscillators), particle
methods (weakly compressible SPH steps with artificial viscosity, 1-D electrostatic particle-in-cell
with CIC scatter-add deposition and an FFT field solve), cellular automata (a probabilistic forest
fire on int8 cells, a 4-state Potts Metropolis checkerboard with an acceptance table, Conway's life
on a 1024^2 bool grid with dead borders), optimization loops (L-BFGS with a ring-buffer two-loop
recursion and an Armijo while_loop on logistic regression, 100 Adam steps of an MLP in a fori_loop,
ADMM for a multi-response lasso with a cached Cholesky, projected gradient for a box-constrained
QP), while_loops with data-dependent termination (Newton for Kepler's equation, water-filling by
bisection), image processing in loops (Perona-Malik diffusion, projected Landweber deblurring by
convolutions, morphological reconstruction by geodesic dilation until stable) and sequence
recurrences (a 2-layer bf16 LSTM scan at batch 64, a GRU's gradient through scan at batch 64, a
linear recurrence by associative_scan, Viterbi decoding with a reverse-scan backtrack).

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_15.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax import lax
import ml_dtypes

import unseen_programs as U

R, f32, unif, ints, key, pkey, mlp_params, mlp = U.helpers(15)
P, prog = U.sweep()
BF = ml_dtypes.bfloat16
NHWC = ("NHWC", "HWIO", "NHWC")
tm = jax.tree_util.tree_map
def conv(x, w, stride=(1, 1), pad="SAME", **kw):
    return lax.conv_general_dilated(x, w, stride, pad, dimension_numbers=NHWC, **kw)
def roll4(u): return jnp.roll(u, 1, -1) + jnp.roll(u, -1, -1) + jnp.roll(u, 1, -2) + jnp.roll(u, -1, -2)
def lap0(u):  # 5-point Laplacian over the last two axes, zero Dirichlet boundary, unscaled
    p = jnp.pad(u, [(0, 0)] * (u.ndim - 2) + [(1, 1), (1, 1)])
    return p[..., :-2, 1:-1] + p[..., 2:, 1:-1] + p[..., 1:-1, :-2] + p[..., 1:-1, 2:] - 4 * u
def smooth_field(*s, sigma=6.0):  # Gaussian-filtered noise over the last two axes, scaled to [0, 1]
    x = R.standard_normal(s)
    ky, kx = np.fft.fftfreq(s[-2])[:, None], np.fft.fftfreq(s[-1])[None]
    x = np.real(np.fft.ifft2(np.fft.fft2(x) * np.exp(-2 * (np.pi * sigma) ** 2 * (kx ** 2 + ky ** 2))))
    x = (x - x.min()) / (x.max() - x.min())
    return x.astype(np.float32)


# --- explicit PDE and stencil time stepping ----------------------------------------------------

@prog("heat_ftcs_3d_neumann")
def _():
    N, ST, r = 64, 60, 1 / 7
    def f(u):  # explicit FTCS heat on a 64^3 grid, 7-point stencil, zero-flux faces by edge padding
        def step(_, u):
            p = jnp.pad(u, 1, mode="edge")
            lap = (p[:-2, 1:-1, 1:-1] + p[2:, 1:-1, 1:-1] + p[1:-1, :-2, 1:-1] + p[1:-1, 2:, 1:-1]
                   + p[1:-1, 1:-1, :-2] + p[1:-1, 1:-1, 2:] - 6 * u)
            return u + r * lap
        return lax.fori_loop(0, ST, step, u)
    return f, (unif(0, 1, N, N, N),)

@prog("seismic_wave_4th_sponge")
def _():
    N, T, sy, sx = 256, 250, 8, 128
    cf = [-1 / 12, 4 / 3, -5 / 2, 4 / 3, -1 / 12]
    ii = np.arange(N)
    cour = np.where(ii < 100, 0.25, np.where(ii < 180, 0.33, 0.42))[:, None] + unif(-0.01, 0.01, N, N)  # layered c dt / dx
    d = np.minimum(np.minimum(ii, N - 1 - ii)[:, None], np.minimum(ii, N - 1 - ii)[None])
    damp = np.exp(-(0.015 * np.maximum(24 - d, 0)) ** 2).astype(np.float32)
    a = (np.pi * 0.03 * (np.arange(T) - 40)) ** 2
    wav = ((1 - 2 * a) * np.exp(-a)).astype(np.float32)
    def f(c2, damp, wav):  # 2nd order in time, 4th order in space, Ricker source injection, sponge, receiver line as scan outputs
        def lap4(u):
            p = jnp.pad(u, 2)
            return sum(cf[k] * (p[k:k + N, 2:-2] + p[2:-2, k:k + N]) for k in range(5))
        def step(c, w):
            u, up = c
            un = (2 * u - up + c2 * lap4(u)).at[sy, sx].add(w)
            return (un * damp, u * damp), un[6, ::2]
        (u, _), rec = lax.scan(step, (jnp.zeros((N, N)), jnp.zeros((N, N))), wav)
        return u, rec
    return f, ((cour ** 2).astype(np.float32), damp, wav)

@prog("gray_scott_rd")
def _():
    N, ST, Du, Dv, F, k = 192, 150, 1.0, 0.5, 0.055, 0.062
    def f(u, v):  # Gray-Scott reaction-diffusion, 9-point Laplacian (edges 0.2, corners 0.05) by rolls, periodic, dt = 1
        def lap(a):
            dg = sum(jnp.roll(a, (dy, dx), (0, 1)) for dy in (-1, 1) for dx in (-1, 1))
            return 0.2 * roll4(a) + 0.05 * dg - a
        def step(_, c):
            u, v = c
            uvv = u * v * v
            return u + Du * lap(u) - uvv + F * (1 - u), v + Dv * lap(v) + uvv - (F + k) * v
        return lax.fori_loop(0, ST, step, (u, v))
    u, v = np.ones((N, N), np.float32), np.zeros((N, N), np.float32)
    for y, x in ints(10, N - 20, 24, 2):
        u[y:y + 10, x:x + 10] = 0.5; v[y:y + 10, x:x + 10] = 0.25
    return f, ((u + unif(-0.01, 0.01, N, N)).astype(np.float32), (v + unif(0, 0.01, N, N)).astype(np.float32))

@prog("lbm_d2q9_lid_cavity")
def _():
    N, ST, tau, Ul = 128, 100, 0.6, 0.1
    cx = np.array([0, 1, 0, -1, 0, 1, -1, -1, 1], np.float32); cy = np.array([0, 0, 1, 0, -1, 1, 1, -1, -1], np.float32)
    w = np.array([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4, np.float32)
    opp = np.array([0, 3, 4, 1, 2, 7, 8, 5, 6])
    ii = np.arange(N)
    solid = ((ii[:, None] == 0) | (ii[:, None] == N - 1) | (ii[None] == 0) | (ii[None] == N - 1))
    lid = np.zeros((N, N), bool); lid[N - 1, 1:-1] = True
    lidterm = np.where(lid[..., None], 6 * w * cx * Ul, 0).astype(np.float32)
    def f(fin):  # BGK collision on [y, x, q] populations, full-way bounce-back at walls, moving-lid momentum term, streaming by rolls
        def step(_, f):
            rho = f.sum(-1)
            ux, uy = (f @ cx) / rho, (f @ cy) / rho
            cu = 3 * (ux[..., None] * cx + uy[..., None] * cy)
            feq = rho[..., None] * w * (1 + cu + 0.5 * cu * cu - 1.5 * (ux * ux + uy * uy)[..., None])
            fp = jnp.where(solid[..., None], f[..., opp] + lidterm, f - (f - feq) / tau)
            return jnp.stack([jnp.roll(fp[..., q], (int(cy[q]), int(cx[q])), (0, 1)) for q in range(9)], -1)
        f = lax.fori_loop(0, ST, step, fin)
        rho = f.sum(-1)
        return f, (f @ cx) / rho, (f @ cy) / rho
    return f, ((np.tile(w, (N, N, 1)) * (1 + unif(-0.01, 0.01, N, N, 9))).astype(np.float32),)

@prog("burgers_upwind_2d")
def _():
    N, ST, nu = 256, 200, 0.002
    dx = 1 / N; dt = 0.2 * dx
    def f(u, v):  # viscous 2-D Burgers: first-order upwind advection chosen by the sign of the velocity, central diffusion, periodic
        def up(q, a, ax):
            return jnp.where(a > 0, q - jnp.roll(q, 1, ax), jnp.roll(q, -1, ax) - q) / dx
        def step(_, c):
            u, v = c
            du = -(u * up(u, u, 1) + v * up(u, v, 0)) + nu * (roll4(u) - 4 * u) / dx ** 2
            dv = -(u * up(v, u, 1) + v * up(v, v, 0)) + nu * (roll4(v) - 4 * v) / dx ** 2
            return u + dt * du, v + dt * dv
        return lax.fori_loop(0, ST, step, (u, v))
    return f, ((2 * smooth_field(N, N, sigma=12) - 1), (2 * smooth_field(N, N, sigma=12) - 1))

@prog("weno5_burgers_rk3")
def _():
    B, N, ST = 32, 512, 150
    dx = 2 * np.pi / N; dt = 0.25 * dx
    x = np.arange(N) * dx
    u0 = (np.sin(x[None] + unif(0, 6.28, B, 1)) + 0.5 * np.sin(2 * x[None] + unif(0, 6.28, B, 1))).astype(np.float32)
    def weno(a, b, c, d, e):  # WENO5-JS reconstruction at the right face of c from c's five-cell stencil
        b0 = 13 / 12 * (a - 2 * b + c) ** 2 + 0.25 * (a - 4 * b + 3 * c) ** 2
        b1 = 13 / 12 * (b - 2 * c + d) ** 2 + 0.25 * (b - d) ** 2
        b2 = 13 / 12 * (c - 2 * d + e) ** 2 + 0.25 * (3 * c - 4 * d + e) ** 2
        a0, a1, a2 = 0.1 / (1e-6 + b0) ** 2, 0.6 / (1e-6 + b1) ** 2, 0.3 / (1e-6 + b2) ** 2
        q0, q1, q2 = (2 * a - 7 * b + 11 * c) / 6, (-b + 5 * c + 2 * d) / 6, (2 * c + 5 * d - e) / 6
        return (a0 * q0 + a1 * q1 + a2 * q2) / (a0 + a1 + a2)
    def f(u):  # 1-D Burgers, global Lax-Friedrichs flux splitting per row, WENO5 faces by rolls, SSP-RK3, 200 steps
        r = lambda q, s: jnp.roll(q, s, -1)
        def L(u):
            al = jnp.max(jnp.abs(u), -1, keepdims=True)
            fp, fm = 0.5 * (0.5 * u * u + al * u), 0.5 * (0.5 * u * u - al * u)
            F = weno(r(fp, 2), r(fp, 1), fp, r(fp, -1), r(fp, -2)) + weno(r(fm, -3), r(fm, -2), r(fm, -1), fm, r(fm, 1))
            return -(F - r(F, 1)) / dx
        def step(_, u):
            u1 = u + dt * L(u)
            u2 = 0.75 * u + 0.25 * (u1 + dt * L(u1))
            return u / 3 + 2 / 3 * (u2 + dt * L(u2))
        return lax.fori_loop(0, ST, step, u)
    return f, (u0,)

@prog("kuramoto_sivashinsky_etdrk4")
def _():
    B, N, L, h, ST = 16, 128, 32 * np.pi, 0.25, 60
    k = np.arange(N // 2 + 1) * 2 * np.pi / L
    Lk = k ** 2 - k ** 4
    E, E2 = np.exp(h * Lk), np.exp(h * Lk / 2)
    r = np.exp(1j * np.pi * (np.arange(1, 33) - 0.5) / 32)
    LR = h * Lk[:, None] + r[None]
    Q = h * np.real(np.mean((np.exp(LR / 2) - 1) / LR, 1))
    f1 = h * np.real(np.mean((-4 - LR + np.exp(LR) * (4 - 3 * LR + LR ** 2)) / LR ** 3, 1))
    f2 = h * np.real(np.mean((2 + LR + np.exp(LR) * (-2 + LR)) / LR ** 3, 1))
    f3 = h * np.real(np.mean((-4 - 3 * LR - LR ** 2 + np.exp(LR) * (4 - LR)) / LR ** 3, 1))
    co = np.stack([E, E2, Q, f1, f2, f3]).astype(np.float32)
    xg = L * np.arange(N) / N
    u0 = (np.cos(xg / 16) * (1 + np.sin(xg / 16)))[None] + f32(B, N, scale=0.01)
    def f(u, co):  # Kassam-Trefethen ETDRK4 for u_t = -u u_x - u_xx - u_xxxx, state in rfft space, nonlinear term by irfft / rfft
        E, E2, Q, f1, f2, f3 = co
        g = -0.5j * jnp.asarray(k, jnp.float32)
        Nl = lambda v: g * jnp.fft.rfft(jnp.fft.irfft(v, n=N) ** 2)
        def step(_, v):
            Nv = Nl(v); a = E2 * v + Q * Nv
            Na = Nl(a); b = E2 * v + Q * Na
            Nb = Nl(b); c = E2 * a + Q * (2 * Nb - Nv)
            Nc = Nl(c)
            return E * v + Nv * f1 + 2 * (Na + Nb) * f2 + Nc * f3
        return jnp.fft.irfft(lax.fori_loop(0, ST, step, jnp.fft.rfft(u)), n=N)
    return f, (u0.astype(np.float32), co)

@prog("shallow_water_cgrid_coriolis")
def _():
    N, ST, a, b, fc = 256, 200, 0.3, 0.3, 0.02  # g dt / dx, H dt / dx, f dt
    yy, xx = np.mgrid[0:N, 0:N]
    eta0 = sum(np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * s ** 2)) for cy, cx, s in zip(ints(30, N - 30, 6), ints(30, N - 30, 6), unif(5, 15, 6)))
    def f(eta, u, v):  # linear rotating shallow water on a periodic Arakawa C-grid: forward-backward stepping, 4-point Coriolis averages
        def step(_, c):
            eta, u, v = c
            eta = eta - b * (u - jnp.roll(u, 1, 1) + v - jnp.roll(v, 1, 0))
            vb = 0.25 * (v + jnp.roll(v, -1, 1) + jnp.roll(v, 1, 0) + jnp.roll(jnp.roll(v, 1, 0), -1, 1))
            u = u + fc * vb - a * (jnp.roll(eta, -1, 1) - eta)
            ub = 0.25 * (u + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(jnp.roll(u, 1, 1), -1, 0))
            v = v - fc * ub - a * (jnp.roll(eta, -1, 0) - eta)
            return eta, u, v
        return lax.fori_loop(0, ST, step, (eta, u, v))
    return f, (eta0.astype(np.float32), np.zeros((N, N), np.float32), np.zeros((N, N), np.float32))


# --- iterative solvers --------------------------------------------------------------------------

@prog("rbgs_poisson_3d")
def _():
    N, IT = 64, 30
    ii = np.arange(N)
    red = (ii[:, None, None] + ii[None, :, None] + ii[None, None]) % 2 == 0
    def f(rhs, u):  # 3-D Dirichlet Poisson by red-black Gauss-Seidel: each colour a masked 7-point update of the interior
        h2 = 1.0 / (N + 1) ** 2
        def half(u, m):
            inner = u[1:-1, 1:-1, 1:-1]
            gs = (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1]
                  + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] + h2 * rhs) / 6
            return u.at[1:-1, 1:-1, 1:-1].set(jnp.where(m, gs, inner))
        u = lax.fori_loop(0, IT, lambda i, u: half(half(u, red), ~red), u)
        return u
    u0 = np.zeros((N + 2,) * 3, np.float32); u0[0] = 1
    return f, (unif(-1, 1, N, N, N) * 50, u0)

@prog("pcg_varcoeff_vmap_while")
def _():
    B, N = 4, 96
    def A(u, k):  # -div(k grad u), arithmetic face coefficients, zero Dirichlet
        p, kp = jnp.pad(u, 1), jnp.pad(k, 1, mode="edge")
        ke, kw = 0.5 * (k + kp[1:-1, 2:]), 0.5 * (k + kp[1:-1, :-2])
        kn, ks = 0.5 * (k + kp[:-2, 1:-1]), 0.5 * (k + kp[2:, 1:-1])
        return (ke + kw + kn + ks) * u - ke * p[1:-1, 2:] - kw * p[1:-1, :-2] - kn * p[:-2, 1:-1] - ks * p[2:, 1:-1], ke + kw + kn + ks
    def solve(k, b):  # Jacobi-preconditioned CG until |r| < 1e-5 |b| (vmapped: the batch runs until all have converged)
        Minv = 1 / A(b, k)[1]
        bb = jnp.sum(b * b)
        def cond(s): return (s[5] < 500) & (s[4] > 1e-10 * bb)
        def body(s):
            x, r, p, rz, rr, i = s
            Ap = A(p, k)[0]
            al = rz / jnp.sum(p * Ap)
            x, r = x + al * p, r - al * Ap
            z = Minv * r; rzn = jnp.sum(r * z)
            return x, r, z + rzn / rz * p, rzn, jnp.sum(r * r), i + 1
        z = Minv * b
        s = lax.while_loop(cond, body, (jnp.zeros_like(b), b, z, jnp.sum(b * z), bb, 0))
        return s[0], s[5]
    def f(k, b):
        x, it = jax.vmap(solve)(k, b)
        return x
    return f, (np.exp(2 * smooth_field(B, N, N, sigma=8) - 1).astype(np.float32), f32(B, N, N))

@prog("multigrid_dirichlet_conv")
def _():
    B, n0, CY = 4, 255, 5
    fw = np.outer([1, 2, 1], [1, 2, 1]).astype(np.float32)
    RK, PK = (fw / 16)[:, :, None, None], (fw / 4)[:, :, None, None]
    masks = {}
    n = n0
    while n >= 7:
        ii = np.arange(n); masks[n] = (ii[:, None] + ii[None]) % 2 == 0; n //= 2
    def rbgs(u, f, h, sweeps):
        def half(u, m): return jnp.where(m, 0.25 * (lap0(u) + 4 * u + h * h * f), u)
        m = masks[u.shape[-1]]
        return lax.fori_loop(0, sweeps, lambda i, u: half(half(u, m), ~m), u)
    def vcycle(u, f, h):  # red-black GS smoothing, full weighting by a stride-2 conv, bilinear prolongation by an lhs-dilated conv
        u = rbgs(u, f, h, 2)
        if u.shape[-1] == 7: return rbgs(u, f, h, 20)
        r = f + lap0(u) / h ** 2
        rc = conv(r[..., None], RK, (2, 2), "VALID")[..., 0]
        e = vcycle(jnp.zeros_like(rc), rc, 2 * h)
        u = u + conv(e[..., None], PK, (1, 1), [(2, 2), (2, 2)], lhs_dilation=(2, 2))[..., 0]
        return rbgs(u, f, h, 2)
    def f(rhs):  # -lap u = f on the unit square with zero boundary values, 255^2 interior nodes, CY V-cycles in a fori_loop
        h = 1 / (n0 + 1)
        u = lax.fori_loop(0, CY, lambda i, u: vcycle(u, rhs, h), jnp.zeros_like(rhs))
        return u
    return f, (f32(B, n0, n0) * 10,)

@prog("gmres_restarted_cgs2")
def _():
    n, m, RS, c = 96, 30, 4, 0.6
    def A(x):  # convection-diffusion -lap u + c (u_x + 0.5 u_y), central differences, zero Dirichlet
        u = x.reshape(n, n); p = jnp.pad(u, 1)
        return (-lap0(u) + c * 0.5 * (p[1:-1, 2:] - p[1:-1, :-2]) + 0.5 * c * 0.5 * (p[2:, 1:-1] - p[:-2, 1:-1])).reshape(-1)
    def cycle(x, b):  # one GMRES(m) cycle: Arnoldi with classical Gram-Schmidt twice (masked rows), least squares by QR
        r = b - A(x); beta = jnp.linalg.norm(r)
        V = jnp.zeros((m + 1, n * n)).at[0].set(r / beta); H = jnp.zeros((m + 1, m))
        def arnoldi(j, c):
            V, H = c
            w = A(V[j]); mask = jnp.arange(m + 1) <= j
            h1 = (V @ w) * mask; w = w - h1 @ V
            h2 = (V @ w) * mask; w = w - h2 @ V
            hn = jnp.linalg.norm(w)
            return V.at[j + 1].set(w / jnp.maximum(hn, 1e-30)), H.at[:, j].set((h1 + h2).at[j + 1].set(hn))
        V, H = lax.fori_loop(0, m, arnoldi, (V, H))
        Q, Rr = jnp.linalg.qr(H)
        y = jsp.linalg.solve_triangular(Rr, beta * Q[0])
        return x + y @ V[:m]
    def f(b):
        x = lax.fori_loop(0, RS, lambda i, x: cycle(x, b), jnp.zeros_like(b))
        return x, jnp.linalg.norm(b - A(x)) / jnp.linalg.norm(b)
    return f, (f32(n * n),)

@prog("jacobi_while_residual")
def _():
    N = 64
    def f(rhs):  # Jacobi for -lap u = f, 50 sweeps per check, while the residual is above 1% of the initial one
        h2 = 1 / (N + 1) ** 2
        res = lambda u: jnp.sqrt(jnp.sum((rhs + lap0(u) / h2) ** 2))
        r0 = res(jnp.zeros_like(rhs))
        def body(c):
            u, r, it = c
            u = lax.fori_loop(0, 50, lambda i, u: 0.25 * (lap0(u) + 4 * u + h2 * rhs), u)
            return u, res(u), it + 1
        u, r, it = lax.while_loop(lambda c: (c[1] > 1e-2 * r0) & (c[2] < 200), body, (jnp.zeros_like(rhs), r0, 0))
        return u, it
    return f, (smooth_field(N, N, sigma=3) * 100,)


# --- ODE and SDE integrators ------------------------------------------------------------------

@prog("lorenz96_rk4_ensemble")
def _():
    B, K, ST, dt, F = 32, 1024, 100, 0.01, 8.0
    def f(x):  # Lorenz-96 (x_{i+1} - x_{i-2}) x_{i-1} - x_i + F by rolls, classical RK4, 32 members of 1024 variables
        def L96(x): return (jnp.roll(x, -1, -1) - jnp.roll(x, 2, -1)) * jnp.roll(x, 1, -1) - x + F
        def step(_, x):
            k1 = L96(x); k2 = L96(x + dt / 2 * k1); k3 = L96(x + dt / 2 * k2); k4 = L96(x + dt * k3)
            return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return lax.fori_loop(0, ST, step, x)
    def l96(x): return (np.roll(x, -1, -1) - np.roll(x, 2, -1)) * np.roll(x, 1, -1) - x + F
    x = F + f32(B, K, scale=0.5).astype(np.float64)
    for _ in range(500):  # spin up onto the attractor (float64 NumPy RK4), so the benchmarked horizon is not a transient
        k1 = l96(x); k2 = l96(x + dt / 2 * k1); k3 = l96(x + dt / 2 * k2); k4 = l96(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return f, (x.astype(np.float32),)

@prog("md_lj_verlet_nlist")
def _():
    n1, K, rc, dt, ST = 10, 64, 2.0, 0.003, 40
    N = n1 ** 3; L = (N / 0.8) ** (1 / 3)
    lat = (np.stack(np.meshgrid(*[np.arange(n1)] * 3, indexing="ij"), -1).reshape(-1, 3) + 0.5) * (L / n1)
    v0 = f32(N, 3, scale=0.7); v0 -= v0.mean(0)
    def f(x, v):  # neighbour table once by top_k of minimum-image distances, then velocity Verlet with a cut LJ force over it
        mi = lambda d: d - L * jnp.round(d / L)
        d = mi(x[:, None] - x[None]); r2 = jnp.where(jnp.eye(N, dtype=bool), jnp.inf, jnp.sum(d * d, -1))
        nb = lax.top_k(-r2, K)[1]
        def force(x):
            d = mi(x[:, None] - x[nb]); r2 = jnp.sum(d * d, -1)
            i6 = (1 / r2) ** 3
            return jnp.sum(jnp.where(r2 < rc * rc, 24 * i6 * (2 * i6 - 1) / r2, 0)[..., None] * d, 1)
        def step(_, c):
            x, v, a = c
            v = v + 0.5 * dt * a; x = x + dt * v; a = force(x)
            return x, v + 0.5 * dt * a, a
        x, v, _ = lax.fori_loop(0, ST, step, (x, v, force(x)))
        return x, v
    return f, ((lat + f32(N, 3, scale=0.03)).astype(np.float32), v0)

@prog("euler_maruyama_ou")
def _():
    Pn, D, ST, dt = 1024, 32, 100, 0.01
    M = f32(D, D, scale=D ** -0.5)
    A = (M @ M.T + 0.5 * np.eye(D) + (M - M.T) * 0.5).astype(np.float32)
    def f(x0, A, S, k):  # dX = -A X dt + S dW, normals drawn per step by fold_in, running second moment
        def step(i, c):
            x, m2 = c
            dw = jax.random.normal(jax.random.fold_in(pkey(k), i), x.shape) * np.sqrt(dt)
            x = x - dt * x @ A.T + dw @ S.T
            return x, m2 + x * x
        x, m2 = lax.fori_loop(0, ST, step, (x0, jnp.zeros_like(x0)))
        return x, m2 / ST
    return f, (f32(Pn, D), A, f32(D, D, scale=0.3), key(7))

@prog("dopri5_adaptive_vdp")
def _():
    B, T, rtol, atol = 1024, 10.0, 1e-5, 1e-6
    c2, c3, c4, c5 = 1 / 5, 3 / 10, 4 / 5, 8 / 9
    a = [[1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9], [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656], [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]]
    e = [71 / 57600, 0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40]
    def f(y0, mu):  # hand-written Dormand-Prince 5(4) with one step size for the batch, accept / reject, in a while_loop to T
        def fn(y): return jnp.stack([y[:, 1], mu * (1 - y[:, 0] ** 2) * y[:, 1] - y[:, 0]], -1)
        def body(c):
            y, t, h, n = c
            h = jnp.minimum(h, T - t)
            ks = [fn(y)]
            for row in a:
                ks.append(fn(y + h * sum(ai * ki for ai, ki in zip(row, ks) if ai)))
            y5 = y + h * sum(ai * ki for ai, ki in zip(a[-1], ks) if ai)
            err = h * sum(ei * ki for ei, ki in zip(e, ks) if ei)
            en = jnp.sqrt(jnp.mean((err / (atol + rtol * jnp.maximum(jnp.abs(y), jnp.abs(y5)))) ** 2))
            ok = en <= 1
            fac = jnp.clip(0.9 * en ** -0.2, 0.2, 5.0)
            return jnp.where(ok, y5, y), jnp.where(ok, t + h, t), h * fac, n + 1
        y, t, h, n = lax.while_loop(lambda c: (c[1] < T) & (c[3] < 5000), body, (y0, jnp.float32(0), jnp.float32(0.01), 0))
        return y
    return f, (f32(B, 2), unif(0.5, 3, B))

@prog("sph_wcsph_steps")
def _():
    n1, ST, dt, g, c0 = 24, 10, 2e-4, 9.81, 20.0
    dx = 0.01; h = 1.3 * dx; m = 1000 * dx * dx; Wb = 1.0
    sig = 10 / (7 * np.pi * h * h)
    pos = (np.stack(np.meshgrid(np.arange(n1), np.arange(n1), indexing="ij"), -1).reshape(-1, 2) + 0.5) * dx + f32(n1 * n1, 2, scale=1e-4)
    def f(x, v):  # weakly compressible SPH, all pairs: cubic-spline density, linear EOS, pressure + Monaghan viscosity, wall reflection
        def kern(q): return sig * jnp.where(q < 1, 1 - 1.5 * q ** 2 + 0.75 * q ** 3, jnp.where(q < 2, 0.25 * (2 - q) ** 3, 0.0))
        def dkern(q): return sig / h * jnp.where(q < 1, -3 * q + 2.25 * q ** 2, jnp.where(q < 2, -0.75 * (2 - q) ** 2, 0.0))
        def step(_, c):
            x, v = c
            d = x[:, None] - x[None]; r = jnp.sqrt(jnp.sum(d * d, -1) + 1e-12); q = r / h
            rho = kern(q) @ jnp.full((x.shape[0],), m)
            p = c0 * c0 * (rho - 1000.0)
            dv = v[:, None] - v[None]; vr = jnp.sum(dv * d, -1)
            mu = h * vr / (r * r + 0.01 * h * h)
            pi = jnp.where(vr < 0, -0.1 * c0 * mu / (0.5 * (rho[:, None] + rho[None])), 0.0)
            coef = -m * (p[:, None] / rho[:, None] ** 2 + p[None] / rho[None] ** 2 + pi) * dkern(q) / r
            a = jnp.sum(coef[..., None] * d, 1) - jnp.array([0.0, g])
            v = v + dt * a; x = x + dt * v
            lo, hi = x < 0, x > Wb
            return jnp.where(lo, -x, jnp.where(hi, 2 * Wb - x, x)), jnp.where(lo | hi, -0.5 * v, v)
        return lax.fori_loop(0, ST, step, (x, v))
    return f, (pos.astype(np.float32), np.zeros((n1 * n1, 2), np.float32))

@prog("pic_1d_two_stream")
def _():
    Np, Ng, L, ST, dt = 1 << 16, 512, 50.0, 50, 0.1
    dx = L / Ng
    kk = 2 * np.pi * np.fft.rfftfreq(Ng, dx)
    k2inv = np.where(kk == 0, 0, 1 / np.where(kk == 0, 1, kk) ** 2).astype(np.float32)
    x0 = R.random(Np) * L
    v0 = np.where(np.arange(Np) % 2 == 0, 1.0, -1.0) + 0.05 * R.standard_normal(Np) + 0.01 * np.sin(2 * np.pi * x0 / L)
    def f(x, v):  # electrostatic PIC: CIC deposition by scatter-adds, Poisson by rfft, E gathered back with CIC weights, leapfrog push
        def weights(x):
            gx = x / dx; i = jnp.floor(gx).astype(jnp.int32); w = gx - i
            return i % Ng, (i + 1) % Ng, w
        def step(c, _):
            x, v = c
            i0, i1, w = weights(x)
            ne = (jnp.zeros(Ng).at[i0].add(1 - w).at[i1].add(w)) * (Ng / Np)
            phik = jnp.fft.rfft(1 - ne) * k2inv
            E = jnp.fft.irfft(-1j * jnp.asarray(kk, jnp.float32) * phik, n=Ng)
            v = v - dt * (E[i0] * (1 - w) + E[i1] * w)
            return ((x + dt * v) % L, v), (0.5 * jnp.sum(E * E) * dx, ne)
        (x, v), (energy, ne) = lax.scan(step, (x, v), None, length=ST)
        return v, energy, ne[-1]
    return f, (x0.astype(np.float32), v0.astype(np.float32))


# --- cellular automata ------------------------------------------------------------------------

@prog("forest_fire_ca_int8")
def _():
    N, ST, pg, pl = 512, 25, 0.02, 2e-6
    def f(s, k):  # Drossel-Schwabl forest fire: fire spreads to 4-neighbours (dead border), lightning and regrowth by in-loop uniforms
        def step(i, s):
            u = jax.random.uniform(jax.random.fold_in(pkey(k), i), s.shape)
            b = jnp.pad(s == 2, 1)
            nb = b[:-2, 1:-1] | b[2:, 1:-1] | b[1:-1, :-2] | b[1:-1, 2:]
            new = jnp.where(s == 2, 0, jnp.where(s == 1, jnp.where(nb | (u < pl), 2, 1), jnp.where(u < pg, 1, 0)))
            return new.astype(jnp.int8)
        s = lax.fori_loop(0, ST, step, s)
        return s, jnp.sum(s == 1)
    s = (R.random((N, N)) < 0.55).astype(np.int8); s[R.random((N, N)) < 1e-4] = 2
    return f, (s, key(11))

@prog("potts_q4_checkerboard")
def _():
    N, q, ST, beta = 256, 4, 20, 1.0
    ii = np.arange(N); par = (ii[:, None] + ii[None]) % 2
    table = np.minimum(np.exp(beta * np.arange(-4, 5)), 1).astype(np.float32)
    def f(s, k, table):  # Metropolis on a periodic 4-state Potts model: random new state per site, acceptance from a table by dE
        def half(s, colour, kk):
            k1, k2 = jax.random.split(kk)
            prop = (s + jax.random.randint(k1, s.shape, 1, q)) % q
            nbs = [jnp.roll(s, sh, ax) for sh in (1, -1) for ax in (0, 1)]
            dE = sum((nb == prop).astype(jnp.int32) - (nb == s).astype(jnp.int32) for nb in nbs)
            acc = jax.random.uniform(k2, s.shape) < table[dE + 4]
            return jnp.where((par == colour) & acc, prop, s)
        def step(i, s):
            ka, kb = jax.random.split(jax.random.fold_in(pkey(k), i))
            return half(half(s, 0, ka), 1, kb)
        s = lax.fori_loop(0, ST, step, s)
        return s, sum(jnp.sum(s == jnp.roll(s, 1, ax)) for ax in (0, 1))
    return f, (ints(0, q, N, N), key(12), table)

@prog("life_bool_1024_border")
def _():
    N, ST = 1024, 60
    def f(g):  # Conway's life on a bool grid with a dead border: neighbour counts in int8 from 8 padded slices
        def step(_, g):
            p = jnp.pad(g, 1).astype(jnp.int8)
            n = sum(p[1 + dy:N + 1 + dy, 1 + dx:N + 1 + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)
            return (n == 3) | (g & (n == 2))
        return lax.fori_loop(0, ST, step, g)
    return f, (R.random((N, N)) < 0.35,)


# --- optimization loops -----------------------------------------------------------------------

@prog("lbfgs_logreg_armijo")
def _():
    n, d, m, IT, lam = 4096, 256, 8, 30, 1e-2
    X = f32(n, d) / 4; wt = f32(d)
    y = (R.random(n) < 1 / (1 + np.exp(-X @ wt))).astype(np.float32)
    def loss(w, X, y): z = X @ w; return jnp.mean(jax.nn.softplus(z) - y * z) + 0.5 * lam * w @ w
    def f(X, y):  # L-BFGS: ring-buffer history, two-loop recursion by fori_loops, Armijo backtracking in a while_loop
        vg = jax.value_and_grad(loss)
        def direction(g, S, Y, k):
            cnt = jnp.minimum(k, m)
            rho = 1 / jnp.where(jnp.arange(m) < cnt, jnp.sum(S * Y, -1), 1.0)
            def bwd(j, c):
                q, al = c; i = (k - 1 - j) % m
                a = rho[i] * S[i] @ q
                return jnp.where(j < cnt, q - a * Y[i], q), al.at[i].set(jnp.where(j < cnt, a, 0.0))
            q, al = lax.fori_loop(0, m, bwd, (g, jnp.zeros(m)))
            nw = (k - 1) % m
            r = q * jnp.where(k > 0, S[nw] @ Y[nw] / (Y[nw] @ Y[nw]), 1.0)
            def fwd(j, r):
                i = (k - cnt + j) % m
                return jnp.where(j < cnt, r + S[i] * (al[i] - rho[i] * Y[i] @ r), r)
            return lax.fori_loop(0, m, fwd, r)
        def step(_, c):
            w, fw, g, S, Y, k = c
            p = -direction(g, S, Y, k); gp = g @ p
            a = lax.while_loop(lambda a: (loss(w + a * p, X, y) > fw + 1e-4 * a * gp) & (a > 1e-4), lambda a: 0.5 * a, jnp.float32(1.0))
            wn = w + a * p; fn, gn = vg(wn, X, y)
            return wn, fn, gn, S.at[k % m].set(wn - w), Y.at[k % m].set(gn - g), k + 1
        w0 = jnp.zeros(d); f0, g0 = vg(w0, X, y)
        w, fw, g, *_ = lax.fori_loop(0, IT, step, (w0, f0, g0, jnp.zeros((m, d)), jnp.zeros((m, d)), 0))
        return w, fw
    return f, (X, y)

@prog("adam_mlp_fori_100")
def _():
    B, ST = 256, 100
    X = f32(B, 16); y = np.sin(X @ f32(16, scale=0.5)) + 0.1 * f32(B)
    def f(p, X, y):  # full-batch Adam with bias correction on a 16-128-128-1 tanh MLP, 100 steps in a fori_loop
        lossf = lambda p: jnp.mean((mlp(p, X, jnp.tanh)[:, 0] - y) ** 2)
        def step(i, c):
            p, m, v = c; g = jax.grad(lossf)(p); t = i + 1
            m = tm(lambda m, g: 0.9 * m + 0.1 * g, m, g); v = tm(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
            p = tm(lambda p, m, v: p - 1e-3 * (m / (1 - 0.9 ** t)) / (jnp.sqrt(v / (1 - 0.999 ** t)) + 1e-8), p, m, v)
            return p, m, v
        z = tm(jnp.zeros_like, p)
        p, _, _ = lax.fori_loop(0, ST, step, (p, z, z))
        return p, lossf(p)
    return f, (mlp_params(16, 128, 128, 1), X, y.astype(np.float32))

@prog("admm_lasso_multi")
def _():
    m, n, K, IT, rho, lam = 1024, 256, 16, 200, 1.0, 0.1
    A = (f32(m, n) / np.sqrt(m)).astype(np.float32); xt = f32(n, K) * (R.random((n, K)) < 0.1)
    def f(A, b):  # ADMM for min 1/2 |Ax - b|^2 + lam |x|_1 per column: x by a cached Cholesky (two triangular solves), soft threshold
        Atb = A.T @ b; cf = jsp.linalg.cho_factor(A.T @ A + rho * jnp.eye(n))
        def step(_, s):
            x, z, u = s
            x = jsp.linalg.cho_solve(cf, Atb + rho * (z - u))
            z = jnp.sign(x + u) * jnp.maximum(jnp.abs(x + u) - lam / rho, 0)
            return x, z, u + x - z
        x, z, u = lax.fori_loop(0, IT, step, (jnp.zeros((n, K)), jnp.zeros((n, K)), jnp.zeros((n, K))))
        return z, 0.5 * jnp.sum((A @ z - b) ** 2, 0) + lam * jnp.sum(jnp.abs(z), 0)
    return f, (A, (A @ xt + 0.01 * f32(m, K)).astype(np.float32))

@prog("box_qp_projected_grad")
def _():
    n, K, IT = 512, 8, 300
    M = f32(n, n) / np.sqrt(n); Q = (M.T @ M + 0.1 * np.eye(n)).astype(np.float32)
    Lc = float(np.linalg.eigvalsh(Q.astype(np.float64)).max())
    def f(Q, c):  # min 1/2 x'Qx - c'x over the box [0, 1]^n for 8 right-hand sides: gradient steps of 1/L, projection by clip
        x = lax.fori_loop(0, IT, lambda i, x: jnp.clip(x - (Q @ x - c) / Lc, 0.0, 1.0), jnp.zeros_like(c))
        return x, jnp.sum(x * (0.5 * Q @ x - c), 0)
    return f, (Q, f32(n, K))


# --- while_loops with data-dependent termination --------------------------------------------

@prog("kepler_newton_while")
def _():
    N = 1 << 17
    def f(M, e):  # Newton on E - e sin E = M for all orbits at once, until the largest residual is below 1e-6, then positions
        def body(c):
            E, it = c
            return E - (E - e * jnp.sin(E) - M) / (1 - e * jnp.cos(E)), it + 1
        cond = lambda c: (jnp.max(jnp.abs(c[0] - e * jnp.sin(c[0]) - M)) > 1e-6) & (c[1] < 50)
        E, it = lax.while_loop(cond, body, (jnp.where(e > 0.8, jnp.pi * jnp.sign(M), M), 0))
        return jnp.cos(E) - e, jnp.sqrt(1 - e * e) * jnp.sin(E), it
    return f, (unif(-np.pi, np.pi, N), unif(0, 0.95, N))

@prog("water_filling_bisection")
def _():
    B, K, Pt = 8192, 64, 10.0
    def f(g):  # per row, bisection on the water level mu with sum max(mu - 1/g, 0) = P until the interval is relatively tiny
        inv = 1 / g
        def body(c):
            lo, hi, it = c; mid = 0.5 * (lo + hi)
            big = jnp.sum(jnp.maximum(mid[:, None] - inv, 0), -1) > Pt
            return jnp.where(big, lo, mid), jnp.where(big, mid, hi), it + 1
        cond = lambda c: (jnp.max((c[1] - c[0]) / c[1]) > 1e-6) & (c[2] < 100)
        lo, hi, it = lax.while_loop(cond, body, (jnp.zeros(B), Pt + jnp.min(inv, -1), 0))
        p = jnp.maximum(0.5 * (lo + hi)[:, None] - inv, 0)
        return p, jnp.sum(jnp.log2(1 + g * p), -1)
    return f, (np.exp(f32(B, K)).astype(np.float32),)


# --- image processing in loops ----------------------------------------------------------------

@prog("perona_malik_diffusion")
def _():
    B, N, IT, K, lam = 2, 256, 50, 0.1, 0.2
    clean = np.kron(R.random((B, 8, 8)), np.ones((N // 8, N // 8)))
    def f(img):  # anisotropic diffusion with g = exp(-(d/K)^2) on the four one-sided differences, zero-flux borders
        def step(_, u):
            p = jnp.pad(u, ((0, 0), (1, 1), (1, 1)), mode="edge")
            ds = [p[:, :-2, 1:-1] - u, p[:, 2:, 1:-1] - u, p[:, 1:-1, :-2] - u, p[:, 1:-1, 2:] - u]
            return u + lam * sum(jnp.exp(-(d / K) ** 2) * d for d in ds)
        return lax.fori_loop(0, IT, step, img)
    return f, ((clean + 0.05 * R.standard_normal(clean.shape)).astype(np.float32),)

@prog("landweber_deblur_conv")
def _():
    B, N, IT, tau = 1, 128, 20, 1.5
    yy, xx = np.mgrid[-2:3, -2:3]
    k = np.exp(-((xx - 0.6 * yy) ** 2 / 0.8 + (yy + 0.3 * xx) ** 2 / 6.0)) * (1 + 0.3 * (xx > 0)); k /= k.sum()
    img = np.kron(R.random((B, 16, 16)), np.ones((8, 8)))[..., None]
    obs = np.asarray(conv(img.astype(np.float32), k[:, :, None, None].astype(np.float32))) + 0.01 * R.standard_normal(img.shape)
    def f(y, kn, kf):  # projected Landweber: x <- clip(x + tau K^T (y - K x), 0, 1), K and K^T as 5x5 SAME convs in NHWC
        step = lambda i, x: jnp.clip(x + tau * conv(y - conv(x, kn), kf), 0.0, 1.0)
        return lax.fori_loop(0, IT, step, jnp.clip(y, 0.0, 1.0))
    return f, (obs.astype(np.float32), k[:, :, None, None].astype(np.float32), k[::-1, ::-1, None, None].astype(np.float32))

@prog("morph_reconstruction_while")
def _():
    B, N, hd = 2, 192, 0.1
    def f(mask):  # h-dome extraction: reconstruction by dilation (3x3 reduce_window max, min with the mask) until nothing changes
        def body(c):
            m, _, it = c
            m2 = jnp.minimum(lax.reduce_window(m, -jnp.inf, lax.max, (1, 3, 3), (1, 1, 1), "SAME"), mask)
            return m2, jnp.any(m2 != m), it + 1
        m, _, it = lax.while_loop(lambda c: c[1], body, (mask - hd, jnp.array(True), 0))
        return mask - m, it
    return f, (smooth_field(B, N, N, sigma=5),)


# --- sequence recurrences ---------------------------------------------------------------------

@prog("lstm2_bf16_scan_b64")
def _():
    B, T, Din, H = 64, 64, 64, 128
    def cell(x, h, c, W, Uw, b):
        z = jnp.dot(x.astype(jnp.bfloat16), W, preferred_element_type=jnp.float32) + jnp.dot(h.astype(jnp.bfloat16), Uw, preferred_element_type=jnp.float32) + b
        i, fg, o, g = jnp.split(z, 4, -1)
        c = jax.nn.sigmoid(fg) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        return jax.nn.sigmoid(o) * jnp.tanh(c), c
    def f(xs, p):  # 2-layer LSTM, bf16 weights and matmul inputs, f32 state and accumulation, batch 64, scan over 64 steps
        def step(carry, x):
            (h1, c1), (h2, c2) = carry
            h1, c1 = cell(x, h1, c1, *p[0]); h2, c2 = cell(h1, h2, c2, *p[1])
            return ((h1, c1), (h2, c2)), h2
        z = jnp.zeros((B, H))
        return lax.scan(step, ((z, z), (z, z)), xs)[1]
    bw = lambda a: (f32(a, 4 * H, scale=a ** -0.5).astype(BF), f32(H, 4 * H, scale=H ** -0.5).astype(BF), np.zeros(4 * H, np.float32))
    return f, (f32(T, B, Din).astype(BF), [bw(Din), bw(H)])

@prog("gru_scan_grad_b64")
def _():
    B, T, Din, H, O = 64, 48, 64, 128, 8
    def loss(p, xs, ys):  # GRU over 48 steps at batch 64, a linear readout at every step, MSE; gradient through the scan
        W, Uw, b, Wo = p
        def cell(h, x):
            gx = x @ W + b; gh = h @ Uw[:, :2 * H]
            z, r = jax.nn.sigmoid(gx[:, :H] + gh[:, :H]), jax.nn.sigmoid(gx[:, H:2 * H] + gh[:, H:])
            n = jnp.tanh(gx[:, 2 * H:] + (r * h) @ Uw[:, 2 * H:])
            h = (1 - z) * n + z * h
            return h, h @ Wo
        return jnp.mean((lax.scan(cell, jnp.zeros((B, H)), xs)[1] - ys) ** 2)
    p = (f32(Din, 3 * H, scale=Din ** -0.5), f32(H, 3 * H, scale=H ** -0.5), np.zeros(3 * H, np.float32), f32(H, O, scale=H ** -0.5))
    return jax.grad(loss), (p, f32(T, B, Din), f32(T, B, O))

@prog("linear_recurrence_assoc")
def _():
    B, T, D = 8, 4096, 64
    def f(a, b):  # h_t = a_t h_{t-1} + b_t along time by lax.associative_scan on (a, b) pairs
        return lax.associative_scan(lambda l, r: (l[0] * r[0], r[0] * l[1] + r[1]), (a, b), axis=1)[1]
    return f, (unif(0.9, 1.0, B, T, D), f32(B, T, D, scale=0.1))

@prog("viterbi_backtrack")
def _():
    B, T, N = 8, 300, 64
    logA = np.log(np.maximum(R.dirichlet(np.full(N, 0.3), N), 1e-30)).astype(np.float32)
    em = np.log(np.maximum(R.dirichlet(np.full(N, 0.5), (T, B)), 1e-30)).astype(np.float32)
    def f(em, logA, logpi):  # max-product forward scan with argmax back-pointers, then the best path by a reverse scan of gathers
        def fwd(s, e):
            c = s[:, :, None] + logA
            return jnp.max(c, 1) + e, jnp.argmax(c, 1)
        s, bps = lax.scan(fwd, logpi + em[0], em[1:])
        last = jnp.argmax(s, -1)
        def back(st, bp):
            prev = jnp.take_along_axis(bp, st[:, None], 1)[:, 0]
            return prev, prev
        _, path = lax.scan(back, last, bps, reverse=True)
        return jnp.concatenate([path, last[None]]), jnp.max(s, -1)
    return f, (em, logA, np.log(np.full(N, 1 / N)).astype(np.float32))


if __name__ == "__main__":
    U.main(P)
