"""Benchmark of the torch backend's chain and multi-draft kernels against their baselines.

Two operations, each at batch sizes B, vocabularies V = 49,152 and 151,936:

* chain speculative sampling (``spectheory.torch.chain_speculative_sampling``),
  gamma in {4, 8}: inputs draft (B, gamma, V), target (B, gamma + 1, V);
* multi-draft RRS, i.i.d. and without replacement
  (``spectheory.torch.recursive_rejection_sampling``), n = 4 drafts: (B, V).

Inputs are float32 rows (softmax(3 z) targets, drafts perturbed by N(0, 1)),
as a model produces them; every path computes in float64.  Calls run with
``validate=False`` (no input checks, no host synchronisation) and with
pre-drawn uniforms, so that only the operation itself is timed.

What is compared depends on the machine, and the script says which:

* CUDA: the fused Triton kernel against the plain torch implementation (same
  function, vectorised torch ops), both on the GPU, timed with CUDA events
  after a warm-up (median of repeats); FlashInfer's
  ``chain_speculative_sampling`` too when ``import flashinfer`` works.
* CPU: Triton would run interpreted (numpy underneath), which measures
  nothing, so the comparison is the plain torch batched path against a
  per-row Python loop over the numpy reference verifiers (the registry's
  ``sd`` chained over positions, ``rrs``, ``rrs_wor``, with
  ``RandomCoins``).  The reference is timed on at most ``--ref-rows`` rows and
  scaled to B (its cost is linear in the rows).  CPU times are the fastest of
  several runs (torch: 5, reference: 2, after a warm-up), GPU times the median.

Run: ``python benchmarks/bench_torch_kernels.py`` (``--quick``: B in {1, 16},
V = 49,152, gamma = 4 only; ``--batch``, ``--vocab``, ``--gamma`` pick the grid;
``--threads 1 --isolate`` on a shared CPU).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from functools import partial

import torch

import spectheory as stt
from spectheory._validate import as_distribution
from spectheory.coins import RandomCoins
from spectheory.torch import chain_speculative_sampling, recursive_rejection_sampling
from spectheory.verifiers import REGISTRY, sd


def chain_inputs(B, gamma, V, device, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    z = 3.0 * torch.randn((B, gamma + 1, V), generator=g)
    p = torch.softmax(z, dim=-1)
    q = torch.softmax(z[:, :gamma] + torch.randn((B, gamma, V), generator=g), dim=-1)
    x = torch.multinomial(q.reshape(-1, V), 1, generator=g).reshape(B, gamma)
    u = torch.rand((B, gamma + 1), generator=g, dtype=torch.float64)
    return p.to(device), q.to(device), x.to(device), u.to(device)


def rrs_inputs(B, n, V, sampling, device, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    z = 3.0 * torch.randn((B, V), generator=g)
    p = torch.softmax(z, dim=-1)
    q = torch.softmax(z + torch.randn((B, V), generator=g), dim=-1)
    d = torch.multinomial(q, n, replacement=sampling == "iid", generator=g)
    u = torch.rand((B, n + 1), generator=g, dtype=torch.float64)
    return p.to(device), q.to(device), d.to(device), u.to(device)


def checked(t):
    """Rows as the numpy reference takes them: float64, checked and renormalised."""
    return as_distribution(t.reshape(-1, t.shape[-1]), "rows")[0].reshape(t.shape)


def time_cuda(fn, repeats):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def time_cpu(fn, repeats):
    """Fastest of ``repeats`` runs after a warm-up: on a shared CPU the minimum is the
    run least disturbed by other processes (as :mod:`timeit` recommends)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def chain_reference_rows(p, q, x, rows, seed=0):
    """Per-row loop: the registry's sd chained over the positions, RandomCoins."""
    coins = RandomCoins(seed)
    for b in range(rows):
        gamma = x.shape[1]
        for i in range(gamma):
            if sd(p[b, i], q[b, i], (int(x[b, i]),), coins) != x[b, i]:
                break
        else:
            coins.categorical(p[b, gamma])


def flashinfer_chain():
    try:
        import flashinfer.sampling as fs
    except ImportError:
        return None
    return fs.chain_speculative_sampling


def run_chain(Bs, Vs, gammas, device, repeats, ref_rows):
    fi = flashinfer_chain() if device.type == "cuda" else None
    for V in Vs:
        for gamma in gammas:
            for B in Bs:
                p, q, x, u = chain_inputs(B, gamma, V, device)
                call = partial(chain_speculative_sampling, p, q, x, uniforms=u, validate=False)
                head = f"chain    V={V:>7} gamma={gamma} B={B:>4}"
                if device.type == "cuda":
                    t_f = time_cuda(partial(call, backend="triton"), repeats)
                    t_t = time_cuda(partial(call, backend="torch"), repeats)
                    line = (
                        f"{head}  triton {t_f * 1e6:9.1f} us  torch {t_t * 1e6:9.1f} us  "
                        f"torch/triton {t_t / t_f:6.2f}x"
                    )
                    if fi is not None:  # FlashInfer's letters: draft first (docs/theory.md §0)
                        t_fi = time_cuda(partial(fi, q, x.int(), p), repeats)
                        line += f"  flashinfer {t_fi * 1e6:9.1f} us  fi/triton {t_fi / t_f:5.2f}x"
                    print(line, flush=True)
                else:
                    t_t = time_cpu(partial(call, backend="torch"), repeats)
                    k = min(B, ref_rows)
                    pn, qn = checked(p[:k]), checked(q[:k])  # float64, renormalised, as verify()
                    xn = x.numpy()
                    t_r = time_cpu(partial(chain_reference_rows, pn, qn, xn, k), 2) * B / k
                    print(
                        f"{head}  torch {t_t * 1e3:9.2f} ms  numpy-per-row {t_r * 1e3:10.2f} ms  "
                        f"numpy/torch {t_r / t_t:7.1f}x",
                        flush=True,
                    )


def rrs_reference_rows(fn, p, q, d, rows, sampling, seed=0):
    """Per-row loop over the registry verifier ``fn`` with RandomCoins."""
    coins = RandomCoins(seed)
    for b in range(rows):
        fn(p[b], q[b], tuple(d[b].tolist()), coins, sampling=sampling)


def run_rrs(Bs, Vs, n, device, repeats, ref_rows, samplings=("iid", "without_replacement")):
    for sampling in samplings:
        name = {"iid": "rrs", "without_replacement": "rrs_wor"}[sampling]
        fn = REGISTRY[name].function
        for V in Vs:
            for B in Bs:
                p, q, d, u = rrs_inputs(B, n, V, sampling, device)
                call = partial(
                    recursive_rejection_sampling, p, q, d, sampling=sampling, uniforms=u,
                    validate=False,
                )  # fmt: skip
                head = f"{name:<8}V={V:>7} n={n}     B={B:>4}"
                if device.type == "cuda":
                    t_f = time_cuda(partial(call, backend="triton"), repeats)
                    t_t = time_cuda(partial(call, backend="torch"), repeats)
                    print(
                        f"{head}  triton {t_f * 1e6:9.1f} us  torch {t_t * 1e6:9.1f} us  "
                        f"torch/triton {t_t / t_f:6.2f}x",
                        flush=True,
                    )
                else:
                    t_t = time_cpu(partial(call, backend="torch"), repeats)
                    k = min(B, ref_rows)
                    pn, qn, dn = checked(p[:k]), checked(q[:k]), d.numpy()
                    ref = partial(rrs_reference_rows, fn, pn, qn, dn, k, sampling)
                    t_r = time_cpu(ref, 2) * B / k
                    print(
                        f"{head}  torch {t_t * 1e3:9.2f} ms  numpy-per-row {t_r * 1e3:10.2f} ms  "
                        f"numpy/torch {t_r / t_t:7.1f}x",
                        flush=True,
                    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batch", type=int, nargs="*", default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--ref-rows", type=int, default=8)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--gamma", type=int, nargs="*", default=None)
    ap.add_argument("--vocab", type=int, nargs="*", default=None)
    ap.add_argument(
        "--isolate",
        action="store_true",
        help="run every configuration in a fresh process (steadier CPU timings)",
    )
    ops = ["chain", "rrs", "rrs_wor"]
    ap.add_argument("--only", choices=ops, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.threads:
        # On a loaded machine, torch's CPU thread pool waits at every op for
        # descheduled workers; one thread measures the work, not the waiting.
        torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    Bs = args.batch or ([1, 16] if args.quick else [1, 4, 16, 64, 256])
    Vs = args.vocab or ([49_152] if args.quick else [49_152, 151_936])
    gammas = args.gamma or ([4] if args.quick else [4, 8])
    repeats = args.repeats or (20 if cuda else 5)
    if args.only:  # one configuration, called by --isolate: no header
        if args.only == "chain":
            run_chain(Bs, Vs, gammas, device, repeats, args.ref_rows)
        else:
            law = "iid" if args.only == "rrs" else "without_replacement"
            run_rrs(Bs, Vs, 4, device, repeats, args.ref_rows, (law,))
        return
    print(f"spectheory {stt.__version__}, torch {torch.__version__}, device {device}")
    if cuda:
        print(f"GPU: {torch.cuda.get_device_name()}")
        print("comparison: fused Triton kernel vs plain torch implementation, same GPU")
        if flashinfer_chain() is None:
            print("flashinfer: not importable here, not compared")
    else:
        print(
            f"no CUDA: Triton would run interpreted, which is not a speed measurement.\n"
            f"comparison: plain torch batched path vs per-row loop over the numpy reference "
            f"(reference timed on <= {args.ref_rows} rows, scaled to B); {torch.get_num_threads()} "
            "torch threads\n"
        )
    if not args.isolate:
        run_chain(Bs, Vs, gammas, device, repeats, args.ref_rows)
        run_rrs(Bs, Vs, 4, device, repeats, args.ref_rows)
        return
    # A fresh process per configuration: the large inputs of one configuration
    # otherwise leave the allocator in a state that slows the next (observed on
    # the CPU: a 2 ms call measured at 200 ms right after a B = 256 one).
    common = [sys.executable, __file__, "--repeats", str(repeats), "--ref-rows", str(args.ref_rows)]
    if args.threads:
        common += ["--threads", str(args.threads)]
    configs = [("chain", V, g, B) for V in Vs for g in gammas for B in Bs]
    configs += [(op, V, gammas[0], B) for op in ("rrs", "rrs_wor") for V in Vs for B in Bs]
    for op, V, g, B in configs:
        cmd = [*common, "--only", op, "--vocab", str(V), "--gamma", str(g), "--batch", str(B)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        print(out, end="", flush=True)


if __name__ == "__main__":
    main()
