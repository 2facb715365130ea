"""The ideal data-parallel step (benchmarks/parallel_runtime.py, issue 11): the MLP 784-512-10 SGD-with-momentum
train step written by hand, NumPy's BLAS (one thread) for the GEMMs and Numba nogil loops for the rest, no
framework at all. On two Python threads, one per core, each thread runs its half-batch forward and backward, then
the least exchange the data allow: it adds the other thread's rows of the hidden weight's gradient into its own
rows (reduce-scatter), updates those rows with momentum, and copies the other's updated rows into its replica
(all-gather). The two barriers are the ones the data force: a thread reads the other's gradient only once it is
complete, and the other's updated rows only once they are written. Against the same step on one thread at full
batch, this is the best any framework can do on this box: what flowlab's 2-device ratio is measured against.
The same step with the exchange shaped as the Plan's boxing (two_thread_steps' ``plan_shaped``) measures what
OneFlow's task graph itself costs, before any framework overhead.

The measurement is the same for both threads: each rank runs on a fresh thread of its own (before, rank 0 ran on
the caller's thread, whose Python state and stack were warm), its buffers first written by itself, and the
one-thread step runs on a fresh thread too. Pinning each to a core (``PIN``, ``os.sched_setaffinity``) is off: on
this shared box it measured worse (2 threads / 1: 0.72x pinned against 0.95x unpinned, interleaved, load 5; a
pinned thread waits for its core while the other is free). The barriers block (a futex), they do not spin."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import numpy as np
from numba import njit

LR, BETA = 0.1, 0.9
IN, HIDDEN, OUT = 784, 512, 10


@njit(nogil=True)  # no cache: the tests load this file under another module name
def _bias_relu(h, b):  # pragma: no cover - compiled
    for i in range(h.shape[0]):
        for j in range(h.shape[1]):
            v = h[i, j] + b[j]
            h[i, j] = v if v > 0.0 else 0.0


@njit(nogil=True)  # no cache: the tests load this file under another module name
def _softmax_xent_grad(logits, b, labels, dlogits, db, scale):  # pragma: no cover - compiled
    """logits += b; dlogits = (softmax - onehot) * scale; db = column sums of dlogits; returns the summed loss."""
    loss = 0.0
    db[:] = 0.0
    for i in range(logits.shape[0]):
        top = -np.inf
        for j in range(logits.shape[1]):
            logits[i, j] += b[j]
            top = max(top, logits[i, j])
        total = 0.0
        for j in range(logits.shape[1]):
            dlogits[i, j] = np.exp(logits[i, j] - top)
            total += dlogits[i, j]
        loss += np.log(total) + top - logits[i, labels[i]]
        for j in range(logits.shape[1]):
            g = (dlogits[i, j] / total - (1.0 if j == labels[i] else 0.0)) * scale
            dlogits[i, j] = g
            db[j] += g
    return loss


@njit(nogil=True)  # no cache: the tests load this file under another module name
def _relu_grad(dh, h, db):  # pragma: no cover - compiled
    """dh *= (h > 0); db = column sums of dh."""
    db[:] = 0.0
    for i in range(dh.shape[0]):
        for j in range(dh.shape[1]):
            if h[i, j] <= 0.0:
                dh[i, j] = 0.0
            db[j] += dh[i, j]


@njit(nogil=True)  # no cache: the tests load this file under another module name
def _momentum(w, v, g, lr, beta):  # pragma: no cover - compiled
    for i in range(w.size):
        v[i] = beta * v[i] - lr * g[i]
        w[i] += v[i]


@njit(nogil=True)  # no cache: the tests load this file under another module name
def _add(a, b, out):  # pragma: no cover - compiled
    for i in range(out.size):
        out[i] = a[i] + b[i]


@njit(nogil=True)  # no cache: the tests load this file under another module name
def _momentum_sum(w, v, g, g_other, lr, beta):  # pragma: no cover - compiled
    """The reduce-scatter's add fused into the update: one pass, no temporary."""
    for i in range(w.size):
        v[i] = beta * v[i] - lr * (g[i] + g_other[i])
        w[i] += v[i]


class Replica:
    """One thread's model replica, momentum buffers, activations and gradients for ``batch`` examples."""

    def __init__(self, params: list[np.ndarray], batch: int) -> None:
        self.params = [p.copy() for p in params]  # w1 (512, 784), b1, w2 (10, 512), b2
        self.velocity = [np.zeros_like(p) for p in params]
        self.grads = [np.empty_like(p) for p in params]
        self.h = np.empty((batch, HIDDEN), np.float32)
        self.logits = np.empty((batch, OUT), np.float32)
        self.dlogits = np.empty((batch, OUT), np.float32)
        self.dh = np.empty((batch, HIDDEN), np.float32)
        self.loss = 0.0
        self.own: np.ndarray | None = None  # two_thread_steps(plan_shaped=True): its rows of w1, apart from w1
        self.touched = False  # two_thread_steps: its arrays first written by its own thread

    def forward_backward(self, x: np.ndarray, y: np.ndarray, scale: float) -> None:
        w1, b1, w2, b2 = self.params
        g1, gb1, g2, gb2 = self.grads
        np.dot(x, w1.T, out=self.h)
        _bias_relu(self.h, b1)
        np.dot(self.h, w2.T, out=self.logits)
        self.loss = _softmax_xent_grad(self.logits, b2, y, self.dlogits, gb2, np.float32(scale))
        np.dot(self.dlogits.T, self.h, out=g2)
        np.dot(self.dlogits, w2, out=self.dh)
        _relu_grad(self.dh, self.h, gb1)
        np.dot(self.dh.T, x, out=g1)


def initial(seed: int = 0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = ((HIDDEN, IN), (HIDDEN,), (OUT, HIDDEN), (OUT,))
    params = [(rng.standard_normal(s) * 0.1).astype(np.float32) for s in shapes]
    x = rng.standard_normal((200, IN)).astype(np.float32)
    y = rng.integers(0, OUT, 200).astype(np.int32)
    return params, x, y


def cores() -> list[int]:
    """The cores this process may run on, in order."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


PIN = False  # True: each thread on a core of its own (measured worse on a shared box: the module's docstring)


def pin(rank: int) -> None:
    """The calling thread on core number ``rank`` of ``cores()`` alone (Linux: pid 0 is the calling thread);
    nothing where there is one core or no affinity call."""
    allowed = cores()
    if PIN and len(allowed) > 1:
        os.sched_setaffinity(0, {allowed[rank % len(allowed)]})


def on_threads(work: list[Callable[[], None]]) -> None:
    """Each of ``work`` on a fresh thread (pinned to its own core where ``PIN``), at once; returns when all are done and
    raises the first failure."""
    failures: list[BaseException] = []

    def run(rank: int) -> None:
        try:
            pin(rank)
            work[rank]()
        except BaseException as err:  # re-raised on the caller's thread
            failures.append(err)

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(len(work))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]


def one_thread_round(rep: Replica, x: np.ndarray, y: np.ndarray, steps: int) -> tuple[float, float]:
    """(wall, thread CPU) seconds per step of ``one_thread_steps`` on a fresh thread (``on_threads``)."""
    out: list[float] = []

    def work() -> None:
        start, c = time.perf_counter(), time.thread_time()
        one_thread_steps(rep, x, y, steps)
        out.extend(((time.perf_counter() - start) / steps, (time.thread_time() - c) / steps))

    on_threads([work])
    return out[0], out[1]


def one_thread_steps(rep: Replica, x: np.ndarray, y: np.ndarray, steps: int) -> None:
    for _ in range(steps):
        rep.forward_backward(x, y, 1.0 / len(x))
        for w, v, g in zip(rep.params, rep.velocity, rep.grads):
            _momentum(w.reshape(-1), v.reshape(-1), g.reshape(-1), LR, BETA)


PHASES = ("forward + backward", "reduce-scatter + update", "all-gather")


def two_thread_steps(reps: list[Replica], x: np.ndarray, y: np.ndarray, steps: int,
                     plan_shaped: bool = False) -> list[dict[str, float]]:
    """``steps`` data-parallel steps on two fresh threads (``on_threads``); per thread,
    its CPU seconds per step in each of PHASES, and in all ("cpu", the barriers' waits included). A replica's
    arrays are first written by its own thread (its first call), as a framework's device thread would.

    ``plan_shaped``: the exchange as the Plan's boxing does it under distributed_split (a thread's rows of w1 kept
    apart, as its S(0) variable; the reduce-scatter's add into a buffer of its own, then the update reading it;
    the all-gather copying both halves, its own too, into the whole weight the forward reads), not the least one:
    the difference is what fusing the add into the update and aliasing the own half could give."""
    half = len(x) // 2
    rows = HIDDEN // 2
    for rank, rep in enumerate(reps):
        if plan_shaped and rep.own is None:
            rep.own = rep.params[0][rank * rows:(rank + 1) * rows].copy()
    barrier = threading.Barrier(2)
    cpu: list[dict[str, float]] = [{}, {}]

    def run(rank: int) -> None:
        me = reps[rank]
        if not me.touched:
            for a in (*me.velocity, *me.grads, me.h, me.logits, me.dlogits, me.dh):
                a.fill(0)
            me.touched = True
        clock = time.thread_time
        start = clock()
        spent = dict.fromkeys(PHASES, 0.0)
        me, other = reps[rank], reps[1 - rank]
        xs, ys = x[rank * half:(rank + 1) * half], y[rank * half:(rank + 1) * half]
        mine, theirs = slice(rank * rows, (rank + 1) * rows), slice((1 - rank) * rows, (2 - rank) * rows)
        w1, v1, g1, g1_other = me.params[0], me.velocity[0], me.grads[0], other.grads[0]
        summed = np.empty((rows, IN), np.float32)
        for _ in range(steps):
            t0 = clock()
            me.forward_backward(xs, ys, 1.0 / len(x))
            t1 = clock()
            barrier.wait()  # the other's gradient is complete
            t2 = clock()
            if plan_shaped:
                _add(g1[mine].reshape(-1), g1_other[mine].reshape(-1), summed.reshape(-1))
                _momentum(me.own.reshape(-1), v1[mine].reshape(-1), summed.reshape(-1), LR, BETA)  # type: ignore[union-attr]
            else:
                _momentum_sum(w1[mine].reshape(-1), v1[mine].reshape(-1), g1[mine].reshape(-1),
                              g1_other[mine].reshape(-1), LR, BETA)
            for w, v, g, g_other in zip(me.params[1:], me.velocity[1:], me.grads[1:], other.grads[1:]):
                _momentum_sum(w.reshape(-1), v.reshape(-1), g.reshape(-1), g_other.reshape(-1), LR, BETA)
            t3 = clock()
            barrier.wait()  # the other's rows are updated
            t4 = clock()
            if plan_shaped:
                np.copyto(w1[mine], me.own)
                np.copyto(w1[theirs], other.own)
            else:
                np.copyto(w1[theirs], other.params[0][theirs])
            t5 = clock()
            for phase, spent_now in zip(PHASES, (t1 - t0, t3 - t2, t5 - t4)):
                spent[phase] += spent_now
        cpu[rank] = {phase: v / steps for phase, v in spent.items()}
        cpu[rank]["cpu"] = (clock() - start) / steps

    on_threads([lambda: run(0), lambda: run(1)])
    return cpu


def _lane_rows(name: str, wall: list[float], lanes: list[list[dict[str, float]]], c1: float
               ) -> tuple[float, float, list[tuple[str, str]]]:
    """(median wall, busier thread's CPU, rows) of one two-thread variant's rounds."""
    lane = [{key: float(np.median([r[k][key] for r in lanes])) for key in lanes[0][k]} for k in range(2)]
    t2, busiest = float(np.median(wall)), max(spent["cpu"] for spent in lane)
    rows = [(f"{name}: wall, CPU per thread", f"{t2 * 1e3:.2f} ms wall; CPU per thread "
             + ", ".join(f"{spent['cpu'] * 1e3:.2f} ms" for spent in lane))]
    rows += [(f"{name}: where thread {k}'s CPU goes",
              " + ".join(f"{phase} {spent[phase] * 1e3:.2f}" for phase in PHASES)
              + f" + barriers and the rest {(spent['cpu'] - sum(spent[p] for p in PHASES)) * 1e3:.2f} ms "
              f"(1-thread CPU / 2: {c1 / 2 * 1e3:.2f})") for k, spent in enumerate(lane)]
    return t2, busiest, rows


class IdealRounds:
    """The hand-written step's rounds, one at a time (``round``), so that the caller interleaves them with its own
    (flowlab's variants, two bare GEMM threads): per round, the one-thread step at batch 200 and the two-thread
    step at 100 each, with the least exchange and with the exchange shaped as the Plan's."""

    def __init__(self, steps: int = 20) -> None:
        params, self.x, self.y = initial()
        self.steps = steps
        self.one = Replica(params, 200)
        self.pairs = {False: [Replica(params, 100), Replica(params, 100)],
                      True: [Replica(params, 100), Replica(params, 100)]}
        one_thread_round(self.one, self.x, self.y, 2)  # compile (or load) the loops, warm the caches
        for shaped, pair in self.pairs.items():
            two_thread_steps(pair, self.x, self.y, 2, plan_shaped=shaped)
        self.wall1: list[float] = []
        self.cpu1: list[float] = []
        self.wall2: dict[bool, list[float]] = {False: [], True: []}
        self.lanes: dict[bool, list[list[dict[str, float]]]] = {False: [], True: []}

    def round(self) -> None:
        wall, cpu = one_thread_round(self.one, self.x, self.y, self.steps)
        self.wall1.append(wall)
        self.cpu1.append(cpu)
        for shaped, pair in self.pairs.items():
            start = time.perf_counter()
            self.lanes[shaped].append(two_thread_steps(pair, self.x, self.y, self.steps, plan_shaped=shaped))
            self.wall2[shaped].append((time.perf_counter() - start) / self.steps)

    def ratios(self, shaped: bool = False) -> list[float]:
        """Per round, the one-thread step's wall / the two-thread step's."""
        return [a / b for a, b in zip(self.wall1, self.wall2[shaped])]

    def rows(self, gemm_pair: float, flowlab: dict[str, tuple[float, float]]) -> list[tuple[str, str]]:
        """Wall per step, each thread's CPU and where it goes, the ratio (median of the rounds' ratios) and the CPU
        bound (1-thread CPU / the busier thread's: the ratio on 2 idle cores), beside ``flowlab``'s (label ->
        (wall ratio, CPU bound)) and two bare GEMM threads' gain."""
        t1, c1 = float(np.median(self.wall1)), float(np.median(self.cpu1))
        # least: the reduce-scatter fused into the update, the all-gather copying the other's rows; Plan-shaped:
        # distributed_split's boxing (an add into a buffer, the update, both halves copied)
        _, busiest, least = _lane_rows("ideal step, 2 threads x batch 100, least exchange", self.wall2[False],
                                       self.lanes[False], c1)
        _, busiest_s, shaped = _lane_rows("ideal step, 2 threads x batch 100, Plan-shaped exchange",
                                          self.wall2[True], self.lanes[True], c1)
        ratio, ratio_s = float(np.median(self.ratios())), float(np.median(self.ratios(True)))
        bound = c1 / busiest
        rows = [("ideal step by hand (BLAS + Numba nogil, no framework), 1 thread, batch 200",
                 f"{t1 * 1e3:.2f} ms wall, {c1 * 1e3:.2f} ms CPU"), *least, *shaped,
                ("ideal step by hand: throughput 2 threads / 1 thread",
                 f"{ratio:.2f}x wall; CPU bound 1-thread CPU / busiest thread {bound:.2f}x; two bare GEMM threads "
                 f"{gemm_pair:.2f}x (this box now)"),
                ("ideal step by hand, Plan-shaped exchange: throughput 2 threads / 1 thread",
                 f"{ratio_s:.2f}x wall; CPU bound {c1 / busiest_s:.2f}x (the Plan's exchange costs "
                 f"{(busiest_s - busiest) * 1e3:+.2f} ms a thread over the least)")]
        rows += [(f"flowlab {label} against the ideal step", f"wall {r:.2f}x / {ratio:.2f}x = {r / ratio:.2f}; "
                  f"CPU bound {b:.2f}x / {bound:.2f}x = {b / bound:.2f} of the ideal")
                 for label, (r, b) in flowlab.items()]
        if bound < 1.6:
            verdict = "out of reach: even the hand-written step's threads, overlapping fully, gain less"
        elif ratio < 1.6:
            verdict = "reachable on 2 idle cores (the CPU bound), not on this box now (two bare GEMM threads " \
                      f"gain {gemm_pair:.2f}x, not 2x)"
        else:
            verdict = "reached by the hand-written step"
        if bound >= 1.6 > c1 / busiest_s:
            verdict += "; with the Plan's boxing shape even a framework costing nothing stays below it"
        rows.append(("ideal step by hand vs the 1.6x target", f"{verdict} ({ratio:.2f}x wall, {bound:.2f}x CPU "
                     f"bound; Plan-shaped {c1 / busiest_s:.2f}x)"))
        return rows
