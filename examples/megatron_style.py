#!/usr/bin/env python3
# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""A Megatron-style 3D-parallel step with mpix_hier, in numpy.

Ranks form tensor-parallel (tp), pipeline (pp) and data-parallel (dp) groups.
With the default placement (mpix_hier.split_parallel) the machine decides: tp
inside the NVLink island / node, pp across nodes of one leaf, dp along the
rails. --naive builds the same group sizes from the rank order instead (tp =
consecutive ranks, then pp, then dp: what Megatron's initialize_model_parallel
does with the ranks it is given), which puts tp groups across nodes whenever
the launcher places ranks round robin.

A step: every stage receives its activations from the one before (MPI_Recv on
the pp group), runs its layers, each ending with the tensor-parallel allreduce
of the partial sums (fp16 or bf16, as a row-parallel linear layer), and sends
them on in the same precision (MPI_Send); then the data-parallel allreduce of the gradients (one
fused fp32 buffer). Values are small integers, exact in both half types. The
script prints which level each group spans, the time per step (a demo: time
real machines, not fake nodes on one host), and checks every value (exit
status 1 if one is wrong).

    mpiexec -n 8 python3 examples/megatron_style.py --tp 2 --pp 2
    # 2 fake nodes x 4 ranks, the ranks placed round robin (rank r on node r % 2):
    mpiexec -n 8 -env MXH_NODES 2 python3 examples/megatron_style.py --tp 4 --pp 2 --naive
"""

import argparse
import ctypes
import os
import sys
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

# MXH_NODES=N: fake N nodes, rank r on node r % N (before the library reads it)
if os.environ.get("MXH_NODES") and "PMI_RANK" in os.environ:
    os.environ["MPIX_HIER_HOSTNAME"] = "node%d" % (int(os.environ["PMI_RANK"]) %
                                                  int(os.environ["MXH_NODES"]))

import numpy as np  # noqa: E402

import mpix_hier as mh  # noqa: E402
from mpix_hier import _lib  # noqa: E402  (MPI_Send/MPI_Recv for the pipeline)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tp", type=int, default=2, help="tensor-parallel size")
    p.add_argument("--pp", type=int, default=2, help="pipeline stages")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--layers", type=int, default=4, help="layers per stage")
    p.add_argument("--elements", type=int, default=1 << 16, help="activation elements")
    p.add_argument("--grad-mib", type=float, default=4.0, help="gradient MiB per rank")
    p.add_argument("--precision", choices=["fp16", "bf16"], default="bf16")
    p.add_argument("--naive", action="store_true", help="groups from the rank order")
    return p.parse_args()


def naive_groups(world, sizes):
    """One communicator per dimension from the rank order (innermost first)."""
    rank, out, stride = world.rank, [], 1
    for d, n in enumerate(sizes):
        digit = (rank // stride) % n
        color = rank - digit * stride  # the other digits
        out.append(world.split(color, digit))
        stride *= n
    return out


def level_of(comm):
    """The outermost level a group's ranks span, from its description."""
    text = mh.describe(comm)
    first = text.splitlines()[0] if text else ""
    return first


def p2p(fn, buf, peer, comm):
    """MPI_Send or MPI_Recv of @buf's bytes with @peer of the pipeline group."""
    lib = _lib.lib
    args = [ctypes.c_void_p(buf.ctypes.data), buf.nbytes, _lib.DATATYPES["byte"], peer, 7,
            comm.handle]
    if fn == "recv":
        args.append(ctypes.byref(_lib.MPI_Status(0, 0, 0, 0, 0)))
    _lib.check(getattr(lib, "MPI_Send" if fn == "send" else "MPI_Recv")(*args), "MPI_" + fn)


def to_half(values, precision):
    """float32 values (small integers: exact) as fp16, or bf16 bit patterns (uint16)."""
    if precision == "fp16":
        return values.astype(np.float16)
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_half(buf, precision):
    if precision == "fp16":
        return buf.astype(np.float32)
    return (buf.astype(np.uint32) << 16).view(np.float32)


def main():
    a = parse_args()
    world = mh.COMM_WORLD
    size, rank = world.size, world.rank
    if size % (a.tp * a.pp):
        if rank == 0:
            print("world size %d is not a multiple of tp x pp = %d" % (size, a.tp * a.pp))
        return 2
    dp_size = size // (a.tp * a.pp)
    sizes = [a.tp, a.pp, dp_size]
    if a.naive:
        tp, pp, dp = naive_groups(world, sizes)
    else:
        tp, pp, dp = mh.split_parallel(sizes, world)
        text = mh.describe_parallel(sizes, world)
        if rank == 0:
            print("# placement by mpix_hier:\n# " + text.strip().replace("\n", "\n# "))
    for name, g in (("tp", tp), ("pp", pp), ("dp", dp)):
        first = level_of(g)
        if rank == 0:
            print("# %s group of rank 0: %d ranks; %s" % (name, g.size, first))
    dtype = None if a.precision == "fp16" else "bfloat16"
    grad = np.zeros(int(a.grad_mib * (1 << 20)) // 4, dtype=np.float32)
    act = np.zeros(a.elements, dtype=np.float32)
    stage, ok, t_steps = pp.rank, True, []
    for step in range(a.steps):
        world.barrier()
        t0 = time.perf_counter()
        # forward: stage 0 starts from step + 1, each stage adds one per layer
        # activations travel between stages in the training precision, as in Megatron
        if stage == 0:
            act[:] = step + 1
        else:
            half = to_half(act, a.precision)
            p2p("recv", half, stage - 1, pp)
            act = from_half(half, a.precision).copy()
        for _ in range(a.layers):
            # a row-parallel linear layer: each tp rank holds a partial sum (act / tp
            # would be inexact; act on one rank, 1 on the others, sum known)
            part = act + 1 if tp.rank == 0 else np.zeros_like(act)
            buf = to_half(part, a.precision)
            mh.allreduce(buf, op="sum", comm=tp, dtype=dtype)
            act = from_half(buf, a.precision).copy()
        want = step + 1 + a.layers * (stage + 1)
        ok &= bool(np.all(act == want))
        if stage < pp.size - 1:
            p2p("send", to_half(act, a.precision), stage + 1, pp)
        # the data-parallel gradient allreduce (fp32)
        grad[:] = dp.rank + step
        mh.allreduce(grad, op="sum", comm=dp)
        ok &= bool(np.all(grad == dp.size * step + dp.size * (dp.size - 1) // 2))
        t_steps.append(time.perf_counter() - t0)
    ok_all = np.array([1 if ok else 0], dtype=np.int32)
    mh.allreduce(ok_all, op="min", comm=world)
    t = np.array([np.median(t_steps)], dtype=np.float64)
    mh.allreduce(t, op="max", comm=world)
    if rank == 0:
        print("# %s order: tp=%d pp=%d dp=%d, %s, step %.3f ms (median of %d, max over ranks); "
              "values %s" % ("naive" if a.naive else "placed", a.tp, a.pp, dp_size, a.precision,
                             t[0] * 1e3, a.steps, "exact" if ok_all[0] else "WRONG"))
    for g in (tp, pp, dp):
        g.free()
    return 0 if ok_all[0] else 1


if __name__ == "__main__":
    sys.exit(main())
