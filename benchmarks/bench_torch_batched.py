"""Benchmark of the torch backend's batched bound and ``optimal`` verifier against torch.argsort.

For a batch of B positions at V = 49,152 and 151,936 and n in {2, 4, 8} it
prints the time per batch of

* ``argsort``: one ``torch.argsort`` of the (B, V) float64 rows (the baseline:
  every path sorts or partially sorts the rows once);
* ``bound iid`` / ``bound wor``: :func:`spectheory.torch.bound`, forward only;
* ``bound wor f+b``: forward and backward (the draft-training loss's step);
* ``wor H* (host)``: the part of ``bound wor`` that runs on the host, the
  optimal set by the numpy solver (``solve_bound``), copies included;
* ``optimal``: ``verify("optimal", ...)`` with pre-drawn drafts and uniforms
  (i.i.d. drafts: the verifier that reaches the bound);

each with its ratio to ``argsort`` measured in the same run, interleaved
(argsort, then each path, repeated ``--repeats`` times; ratio = median of the
pairwise ratios), on the device the script finds: CUDA when there is one
(timed with CUDA events after a warm-up), else the CPU.

Rows: softmax(3 z) targets, drafts with logits perturbed by N(0, 1), in
float32 as a model produces them (every path computes in float64).

Run: ``python benchmarks/bench_torch_batched.py`` (``--batch 1 32 256``,
``--vocab``, ``--n``, ``--repeats``; ``--cpu`` to stay on the CPU).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import spectheory.torch as stt
from spectheory.solvers.ot_dual import solve_bound

WOR = "without_replacement"


def _timer(device):
    """A function timing ``fn()`` in seconds on ``device`` (CUDA events there)."""
    if device.type == "cuda":

        def run(fn):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1e3

        return run

    def run(fn):
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    return run


def _rows(B, V, device, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    z = 3.0 * torch.randn(B, V, generator=g)
    p = torch.softmax(z, -1).to(device)
    q = torch.softmax(z + torch.randn(B, V, generator=g), -1).to(device)
    return p, q


def _paths(p, q, n, device, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    d = torch.multinomial(q.double().cpu(), n, replacement=True, generator=g).to(device)
    u = torch.rand(p.shape[0], stt.verifier_uniforms("optimal", n), generator=g,
                   dtype=torch.float64).to(device)  # fmt: skip
    p64 = p.double()
    # float64 rows renormalised, as the torch bound hands them to the numpy solver
    ph, qh = p64 / p64.sum(-1, keepdim=True), q.double() / q.double().sum(-1, keepdim=True)

    def wor_fb():
        logits = torch.log(q.double()).requires_grad_(True)
        a = stt.bound(p, torch.softmax(logits, -1), n, "without_replacement")
        a.sum().backward()

    return {
        "argsort": lambda: torch.argsort(p64, dim=-1),
        "bound iid": lambda: stt.bound(p, q, n, "iid"),
        "bound wor": lambda: stt.bound(p, q, n, "without_replacement"),
        "bound wor f+b": wor_fb,
        # the part of "bound wor" that runs on the host: the optimal set H* by the numpy solver
        "wor H* (host)": lambda: solve_bound(ph.cpu().numpy(), qh.cpu().numpy(), n, WOR),
        "optimal": lambda: stt.verify("optimal", p, q, d, uniforms=u),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 32, 256])
    ap.add_argument("--vocab", type=int, nargs="+", default=[49_152, 151_936])
    ap.add_argument("--n", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpu", action="store_true", help="stay on the CPU")
    args = ap.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
    print(f"device: {name}; torch {torch.__version__}; threads {torch.get_num_threads()}")
    timer = _timer(device)
    head = ("B", "V", "n", "path", "ms/batch", "us/row", "x argsort")
    print("{:>4} {:>7} {:>2} {:<14} {:>10} {:>9} {:>9}".format(*head))
    for V in args.vocab:
        for B in args.batch:
            p, q = _rows(B, V, device, seed=V + B)
            for n in args.n:
                paths = _paths(p, q, n, device, seed=n)
                for fn in paths.values():  # warm-up (compilation, caches, allocator)
                    fn()
                times = {k: [] for k in paths}
                for _ in range(args.repeats):
                    for k, fn in paths.items():
                        times[k].append(timer(fn))
                base = times["argsort"]
                for k, ts in times.items():
                    ratio = statistics.median(t / b for t, b in zip(ts, base))
                    med = statistics.median(ts)
                    print(f"{B:>4} {V:>7} {n:>2} {k:<14} {1e3 * med:>10.3f} "
                          f"{1e6 * med / B:>9.1f} {ratio:>9.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
