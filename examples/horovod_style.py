#!/usr/bin/env python3
# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""Horovod-style data-parallel training with mpix_hier, in numpy.

Every rank trains the same MLP (in -> hidden -> hidden -> classes, ReLU,
softmax cross-entropy) on its own synthetic batches (labels from a fixed random
"teacher" network: nothing is downloaded). Gradients are fused the way Horovod
does it: walking the parameters in the order backpropagation produces their
gradients, they are packed into fusion buffers of about --fusion-kb KiB; as
soon as a buffer's last gradient exists, its nonblocking allreduce
(mpix_hier.iallreduce, in fp32 or bf16) is posted and backpropagation goes on
with the next layer, testing the requests in flight between layers (the
library progresses on MPI_Test). Before the optimizer step every request is
waited for, the sums are divided by the number of ranks and unpacked.

Output: the loss (mean over ranks) falling; at the end every rank's parameters
are compared bit for bit with rank 0's (exit status 1 if they differ); with
--trace FILE a Chrome trace (chrome://tracing, ui.perfetto.dev) of compute
(tid 0) and communication per bucket (tid 1), one pid per rank.

    mpiexec -n 4 python3 examples/horovod_style.py --steps 50 --precision bf16 --trace t.json
    # 2 fake nodes x 2 ranks:
    mpiexec -n 2 -env MPIX_HIER_HOSTNAME a python3 examples/horovod_style.py : \\
            -n 2 -env MPIX_HIER_HOSTNAME b python3 examples/horovod_style.py
"""

import argparse
import json
import os
import sys
import time

# one BLAS thread per rank: ranks already use the cores (set before numpy loads)
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

import mpix_hier as mh  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=64, help="samples per rank and step")
    p.add_argument("--inputs", type=int, default=256)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="datatype the gradients are reduced in")
    p.add_argument("--fusion-kb", type=float, default=1024.0,
                   help="fusion buffer size in KiB (of the reduced datatype)")
    p.add_argument("--trace", help="write a Chrome trace JSON here (rank 0 writes it)")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


# ---- bf16 conversion (numpy has no bfloat16): bit patterns in uint16 --------------

def to_bf16(f32, out):
    """Round float32 to bfloat16 (nearest, ties to even) into the uint16 array out."""
    u = f32.view(np.uint32)
    out[...] = ((u + (np.uint32(0x7FFF) + ((u >> 16) & 1))) >> 16).astype(np.uint16)


def from_bf16(u16):
    return (u16.astype(np.uint32) << 16).view(np.float32)


# ---- the model --------------------------------------------------------------------

def init_params(args, rng):
    sizes = [args.inputs, args.hidden, args.hidden, args.classes]
    params = {}
    for i in range(3):
        fan_in = sizes[i]
        params["W%d" % (i + 1)] = (rng.standard_normal((sizes[i], sizes[i + 1]))
                                   * np.sqrt(2.0 / fan_in)).astype(np.float32)
        params["b%d" % (i + 1)] = np.zeros(sizes[i + 1], np.float32)
    return params


# gradients appear in this order during backpropagation
BACKWARD_ORDER = ["W3", "b3", "W2", "b2", "W1", "b1"]


def make_buckets(params, fusion_bytes, elem_bytes):
    """Group parameters (in backward order) into fusion buckets of >= fusion_bytes,
    closing a bucket at a tensor boundary, as Horovod's fusion buffer does."""
    buckets, cur, cur_bytes = [], [], 0
    for name in BACKWARD_ORDER:
        cur.append(name)
        cur_bytes += params[name].size * elem_bytes
        if cur_bytes >= fusion_bytes:
            buckets.append(cur)
            cur, cur_bytes = [], 0
    if cur:
        buckets.append(cur)
    return buckets


class Tracer:
    """Chrome trace events ("X": complete events, microseconds) of this rank."""

    def __init__(self, rank, t0):
        self.rank, self.t0, self.events = rank, t0, []

    def now(self):
        return (time.perf_counter() - self.t0) * 1e6

    def add(self, name, tid, start_us, end_us, **args):
        self.events.append({"name": name, "ph": "X", "pid": self.rank, "tid": tid,
                            "ts": round(start_us, 3), "dur": round(max(end_us - start_us, 0.0), 3),
                            "cat": "compute" if tid == 0 else "communication", "args": args})


class BucketReducer:
    """Packs gradients into fusion buffers and allreduces each bucket as soon as
    it is complete (nonblocking), overlapping with the rest of backpropagation."""

    def __init__(self, params, buckets, precision, size, tracer):
        self.buckets, self.precision, self.size, self.tracer = buckets, precision, size, tracer
        self.owner = {n: k for k, names in enumerate(buckets) for n in names}
        dt = np.uint16 if precision == "bf16" else np.float32
        self.buffers, self.offsets = [], []
        for names in buckets:
            offs, total = {}, 0
            for n in names:
                offs[n] = (total, params[n].size)
                total += params[n].size
            self.buffers.append(np.empty(total, dt))
            self.offsets.append(offs)

    def start_step(self):
        self.filled = [0] * len(self.buckets)
        self.inflight = {}  # bucket -> (request, post time)
        self.done_at = {}

    def add_grad(self, name, grad):
        k = self.owner[name]
        off, n = self.offsets[k][name]
        dst = self.buffers[k][off:off + n]
        if self.precision == "bf16":
            to_bf16(grad.reshape(-1), dst)
        else:
            dst[...] = grad.reshape(-1)
        self.filled[k] += 1
        if self.filled[k] == len(self.buckets[k]):
            # in place; bf16 buffers are uint16 bit patterns reduced as MPIX bfloat16
            req = mh.iallreduce(self.buffers[k],
                                dtype="bfloat16" if self.precision == "bf16" else None)
            self.inflight[k] = (req, self.tracer.now())

    def poll(self):
        """Progress the collectives in flight (MPI_Test) and note completions."""
        for k, (req, t) in list(self.inflight.items()):
            if k not in self.done_at and req.test():
                self.done_at[k] = self.tracer.now()

    def finish(self, grads_out):
        """Wait for every bucket, average, unpack into grads_out."""
        for k, (req, t_post) in sorted(self.inflight.items()):
            req.wait()
            t_done = self.done_at.get(k, self.tracer.now())
            buf = self.buffers[k]
            self.tracer.add("allreduce bucket %d" % k, 1, t_post, t_done,
                            bytes=int(buf.nbytes), precision=self.precision,
                            tensors=self.buckets[k])
            vals = from_bf16(buf) if self.precision == "bf16" else buf
            for name, (off, n) in self.offsets[k].items():
                grads_out[name] = (vals[off:off + n] / self.size).reshape(grads_out[name].shape)


def forward_backward(params, X, y, reducer, tracer):
    """Loss of the batch; gradients go to the reducer as soon as they exist."""
    t = tracer.now()
    h1 = np.maximum(X @ params["W1"] + params["b1"], 0)
    h2 = np.maximum(h1 @ params["W2"] + params["b2"], 0)
    logits = h2 @ params["W3"] + params["b3"]
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    B = X.shape[0]
    loss = float(-np.log(p[np.arange(B), y] + 1e-12).mean())
    t2 = tracer.now()
    tracer.add("forward", 0, t, t2)

    # backward, layer by layer; after each layer its gradients are handed over
    t = t2
    d = p
    d[np.arange(B), y] -= 1.0
    d /= B
    inputs = {3: h2, 2: h1, 1: X}  # each layer's input
    for layer in (3, 2, 1):
        x = inputs[layer]
        reducer.add_grad("W%d" % layer, x.T @ d)
        reducer.add_grad("b%d" % layer, d.sum(axis=0))
        if layer > 1:  # the gradient of the layer's input (after the ReLU below it)
            d = (d @ params["W%d" % layer].T) * (x > 0)
        tracer.add("backward layer %d" % layer, 0, t, tracer.now())
        reducer.poll()
        t = tracer.now()
    return loss


def main():
    args = parse_args()
    comm = mh.COMM_WORLD
    rank, size = comm.rank, comm.size

    # the data: a fixed teacher (same on all ranks), batches different per rank
    teacher = np.random.default_rng(12345).standard_normal((args.inputs, args.classes))
    data_rng = np.random.default_rng(1000 + 7919 * rank + args.seed)
    params = init_params(args, np.random.default_rng(args.seed + 100 * rank))
    for name in BACKWARD_ORDER:  # like hvd.broadcast_parameters: start from rank 0's
        mh.bcast(params[name], root=0)

    elem = 2 if args.precision == "bf16" else 4
    buckets = make_buckets(params, args.fusion_kb * 1024, elem)
    comm.barrier()
    tracer = Tracer(rank, time.perf_counter())
    reducer = BucketReducer(params, buckets, args.precision, size, tracer)
    grads = {n: np.empty_like(v) for n, v in params.items()}
    if rank == 0:
        nparams = sum(v.size for v in params.values())
        print("horovod_style: %d ranks, %d parameters, %s gradients, %d buckets: %s"
              % (size, nparams, args.precision, len(buckets),
                 " | ".join("+".join(b) for b in buckets)))
        print(mh.describe().rstrip())

    losses = []
    for step in range(args.steps):
        X = data_rng.standard_normal((args.batch, args.inputs)).astype(np.float32)
        y = np.argmax(X @ teacher, axis=1)
        reducer.start_step()
        loss = forward_backward(params, X, y, reducer, tracer)
        t = tracer.now()
        reducer.finish(grads)
        tracer.add("wait for allreduce", 0, t, tracer.now())
        t = tracer.now()
        for name in params:
            params[name] -= args.lr * grads[name]
        tracer.add("optimizer step", 0, t, tracer.now())
        mean_loss = mh.allreduce(np.array([loss]), np.empty(1))[0] / size
        losses.append(float(mean_loss))
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            print("step %4d  loss %.4f" % (step, mean_loss), flush=True)

    # every rank must hold rank 0's parameters, bit for bit
    same = 1
    for name in BACKWARD_ORDER:
        ref = params[name].copy()
        mh.bcast(ref, root=0)
        same &= int(ref.tobytes() == params[name].tobytes())
    all_same = int(mh.allreduce(np.array([same], np.int32), op="min")[0])

    if args.trace:
        # every rank's events to rank 0 (allgatherv of the JSON bytes)
        mine = np.frombuffer(json.dumps(tracer.events).encode(), np.uint8)
        everything = mh.allgatherv(mine)
        counts = mh.allgather(np.array([mine.size], np.int64))
        if rank == 0:
            events, off = [], 0
            for r, n in enumerate(counts):
                events += json.loads(everything[off:off + n].tobytes().decode())
                off += n
            meta = [{"name": "thread_name", "ph": "M", "pid": r, "tid": tid,
                     "args": {"name": label}}
                    for r in range(size) for tid, label in ((0, "compute"), (1, "communication"))]
            meta += [{"name": "process_name", "ph": "M", "pid": r, "args": {"name": "rank %d" % r}}
                     for r in range(size)]
            with open(args.trace, "w") as f:
                json.dump({"traceEvents": meta + events, "displayTimeUnit": "ms",
                           "otherData": {"ranks": size, "precision": args.precision,
                                         "buckets": buckets, "losses": losses,
                                         "params_identical": bool(all_same)}}, f)
            print("trace: %s (%d events)" % (args.trace, len(events)))

    if rank == 0:
        print("loss %.4f -> %.4f; parameters identical on all ranks: %s"
              % (losses[0], losses[-1], "yes" if all_same else "NO"))
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
