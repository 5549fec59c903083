# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""Every collective of mpix_hier against MPICH's own (mpiref), bit for bit.

Inputs are integer-valued (or small for PROD) so that every reduction order
gives the same bits: the library reduces in its hierarchical order, MPICH in
its own.
"""

import numpy as np
import pytest

import mpix_hier as mh
import mpiref

COUNTS = [0, 1, 13, 4099]
DTYPE_OPS = {
    "float32": ["sum", "prod", "max", "min"],
    "float64": ["sum", "max"],
    "int8": ["sum", "bxor"],
    "int32": ["sum", "prod", "min", "band", "bor"],
    "int64": ["sum", "max"],
    "uint8": ["sum", "max"],
    "uint16": ["sum", "bor"],
    "uint64": ["sum", "min", "bxor"],
    "complex64": ["sum", "prod"],
    "complex128": ["sum"],
    "bool": ["land", "lor", "lxor"],
    "float16": ["sum", "prod", "max", "min"],
    "bfloat16": ["sum", "max", "min"],
}


def bits_equal(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def bits_equal_but_zero_sign(a, b):
    """Bit for bit after turning -0.0 into +0.0 (x + 0.0 does): the sign of a zero
    part of a complex product depends on the order of the multiplications
    (e.g. (-1 * 0) + (0 * 2) is +0.0, (-1 * 0) + (0 * -2) is -0.0)."""
    return bits_equal(np.asarray(a) + 0.0, np.asarray(b) + 0.0)


def make(dtype, n, rank, op="sum", seed=0):
    """Rank-dependent test data of n elements whose reductions are exact.
    bfloat16 comes as uint16 bit patterns (pass dtype="bfloat16")."""
    rng = np.random.default_rng(1000 * seed + 17 * rank + n)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if op == "prod":
        v = rng.choice([1, 2, -1] if not dtype.startswith("uint") else [1, 2], n)
    else:
        v = rng.integers(-30, 31, n) if not dtype.startswith("uint") else rng.integers(0, 61, n)
    if dtype == "bfloat16":
        return mpiref.f32_to_bf16(v.astype(np.float32))
    if dtype.startswith("complex"):
        return (v + 1j * rng.integers(-5, 6, n)).astype(dtype)
    return v.astype(dtype)


def dt_arg(dtype):
    return "bfloat16" if dtype == "bfloat16" else None


CASES = [(d, op) for d, ops in DTYPE_OPS.items() for op in ops]


@pytest.mark.parametrize("n", COUNTS)
@pytest.mark.parametrize("dtype,op", CASES)
def test_allreduce(comm, rank, dtype, op, n):
    same = bits_equal_but_zero_sign if dtype.startswith("complex") and op == "prod" \
        else bits_equal
    x = make(dtype, n, rank, op)
    ref = mpiref.allreduce(x, op, comm, dt_arg(dtype))
    out = np.empty_like(x)
    assert mh.allreduce(x, out, op=op, dtype=dt_arg(dtype)) is out
    assert same(out, ref)
    y = x.copy()  # in place, the short form
    mh.allreduce(y, op=op, dtype=dt_arg(dtype))
    assert same(y, ref)
    z = x.copy()  # in place, MPI's form
    mh.allreduce(mh.IN_PLACE, z, op=op, dtype=dt_arg(dtype))
    assert same(z, ref)


@pytest.mark.parametrize("dtype,op", [("float32", "sum"), ("int32", "max"), ("float16", "sum"),
                                      ("bfloat16", "sum"), ("uint8", "bor")])
@pytest.mark.parametrize("layout", ["uneven", "zeros", "even", "default"])
def test_reduce_scatter(comm, rank, size, dtype, op, layout):
    counts = {"uneven": [3 + 5 * r for r in range(size)],
              "zeros": [0 if r % 2 else 7 for r in range(size)],
              "even": [11] * size,
              "default": None}[layout]
    total = sum(counts) if counts else 5 * size - 1  # default: an even split that is uneven
    x = make(dtype, total, rank, op)
    expect_counts = counts or mh._even_split(total, size)
    if counts is None and size > 1:
        assert expect_counts == [5] * (size - 1) + [4]
    ref = mpiref.reduce_scatter(x, expect_counts, op, comm, dt_arg(dtype))
    out = mh.reduce_scatter(x, recvcounts=counts, op=op, dtype=dt_arg(dtype))
    assert bits_equal(out, ref)
    y = x.copy()  # in place: the input in recvbuf, the result its first block
    mh.reduce_scatter(mh.IN_PLACE, y, recvcounts=counts, op=op, dtype=dt_arg(dtype))
    assert bits_equal(y[:expect_counts[rank]], ref)


@pytest.mark.parametrize("n", [0, 1, 257])
@pytest.mark.parametrize("dtype,op", [("float64", "sum"), ("int16", "min"), ("float16", "max")])
def test_reduce_scatter_block(comm, rank, size, dtype, op, n):
    x = make(dtype, n * size, rank, op)
    ref = mpiref.reduce_scatter(x, [n] * size, op, comm)
    out = mh.reduce_scatter_block(x, op=op)
    assert bits_equal(out, ref)
    r = mh.ireduce_scatter_block(x, np.empty(n, x.dtype), op=op).wait()
    assert bits_equal(r, ref)
    y = x.copy()
    mh.reduce_scatter_block(mh.IN_PLACE, y, op=op)
    assert bits_equal(y[:n], ref)


@pytest.mark.parametrize("n", [0, 1, 1001])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "complex128", "bool"])
def test_allgather(comm, rank, size, dtype, n):
    x = make(dtype, n, rank)
    ref = mpiref.allgather(x, comm)
    assert bits_equal(mh.allgather(x), ref)
    y = np.zeros(n * size, dtype=x.dtype)  # in place: own block at its place
    y[rank * n:(rank + 1) * n] = x
    mh.allgather(mh.IN_PLACE, y)
    assert bits_equal(y, ref)


@pytest.mark.parametrize("dtype", ["float32", "uint8", "float16"])
@pytest.mark.parametrize("layout", ["uneven", "zeros", "gaps"])
def test_allgatherv(comm, rank, size, dtype, layout):
    if size == 1 and layout == "gaps":
        # MPICH 4.0.2's MPI_Allgatherv on one rank writes at offset 0, ignoring displs,
        # and on one rank the library runs MPI's collective: no reference to trust
        pytest.skip("MPICH 4.0.2 MPI_Allgatherv ignores displs on a 1-rank communicator")
    counts = [2 * r + 1 for r in range(size)] if layout != "zeros" else \
        [0 if r % 2 == 0 else 5 for r in range(size)]
    displs = mh._prefix(counts)
    if layout == "gaps":  # holes between the blocks, blocks in reverse order
        displs = [sum(counts[r + 1:]) + 3 * (size - r) for r in range(size)]
    total = max(d + c for d, c in zip(displs, counts))
    x = make(dtype, counts[rank], rank)
    ref = mpiref.allgatherv(x, counts, displs, total, comm)
    out = np.zeros(total, dtype=x.dtype)
    mh.allgatherv(x, out, counts, displs)
    assert bits_equal(out, ref)
    if layout != "gaps":  # counts gathered by the package
        assert bits_equal(mh.allgatherv(x), ref)
    y = np.zeros(total, dtype=x.dtype)
    y[displs[rank]:displs[rank] + counts[rank]] = x
    mh.allgatherv(mh.IN_PLACE, y, counts, displs)
    assert bits_equal(y, ref)


@pytest.mark.parametrize("n", [0, 1, 333])
@pytest.mark.parametrize("dtype", ["float64", "int32", "float16"])
def test_alltoall(comm, rank, size, dtype, n):
    x = make(dtype, n * size, rank)
    ref = mpiref.alltoall(x, comm)
    assert bits_equal(mh.alltoall(x), ref)
    y = x.copy()
    mh.alltoall(mh.IN_PLACE, y)
    assert bits_equal(y, ref)


@pytest.mark.parametrize("dtype", ["float32", "int8", "float16"])
@pytest.mark.parametrize("layout", ["uneven", "zeros"])
def test_alltoallv(comm, rank, size, dtype, layout):
    # rank r sends (r + 2 * j) % 5 elements to rank j (zeros layout: none to odd ranks)
    def cnt(src, dst):
        c = (src + 2 * dst) % 5 + (1 if layout == "uneven" else 0)
        return 0 if layout == "zeros" and dst % 2 else c
    sc = [cnt(rank, j) for j in range(size)]
    rc = [cnt(i, rank) for i in range(size)]
    sd, rd = mh._prefix(sc), mh._prefix(rc)
    x = make(dtype, sum(sc), rank)
    ref = mpiref.alltoallv(x, sc, sd, rc, rd, sum(rc), comm)
    out = np.zeros(sum(rc), dtype=x.dtype)
    mh.alltoallv(x, sc, out, rc, sd, rd)
    assert bits_equal(out, ref)
    assert bits_equal(mh.alltoallv(x, sc), ref)  # recvcounts exchanged by the package
    # in place: same counts both ways (MPI's rule), here the symmetric cnt(i, j) + cnt(j, i)
    sym = [cnt(rank, j) + cnt(j, rank) for j in range(size)]
    y = make(dtype, sum(sym), rank, seed=3)
    ref2 = mpiref.alltoallv(y, sym, mh._prefix(sym), sym, mh._prefix(sym), sum(sym), comm)
    mh.alltoallv(mh.IN_PLACE, None, y, sym)
    assert bits_equal(y, ref2)


@pytest.mark.parametrize("n", [0, 1, 5000])
@pytest.mark.parametrize("dtype", ["float32", "complex64", "uint64", "bfloat16"])
def test_bcast(comm, rank, size, dtype, n):
    for root in range(size):
        x = make(dtype, n, rank, seed=root)
        ref = mpiref.bcast(x, root, comm)
        out = mh.bcast(x, root=root, dtype=dt_arg(dtype))
        assert out is x and bits_equal(x, ref)


@pytest.mark.parametrize("n", [0, 1, 777])
@pytest.mark.parametrize("dtype,op", [("float32", "sum"), ("int64", "prod"), ("float16", "sum"),
                                      ("bfloat16", "max"), ("bool", "lor")])
def test_reduce(comm, rank, size, dtype, op, n):
    for root in range(size):
        x = make(dtype, n, rank, op, seed=root)
        ref = mpiref.reduce(x, op, root, comm, dt_arg(dtype))
        out = mh.reduce(x, op=op, root=root, dtype=dt_arg(dtype))
        if rank == root:
            assert bits_equal(out, ref)
        else:
            assert out is None
        # in place at the root
        y = x.copy()
        got = mh.reduce(mh.IN_PLACE if rank == root else y, y if rank == root else None,
                        op=op, root=root, dtype=dt_arg(dtype))
        if rank == root:
            assert got is y and bits_equal(y, ref)


def test_nonblocking_many_in_flight(comm, rank, size):
    """Seven collectives in flight at once, completed out of posting order, with
    test() polling; temporaries passed only to the call stay alive (the request
    holds them)."""
    n = 3001
    a = make("float32", n, rank)
    b = make("int32", n, rank)
    ref_a = mpiref.allreduce(a, "sum", comm)
    ref_b = mpiref.allreduce(b, "max", comm)
    ref_g = mpiref.allgather(b[:17], comm)
    counts = [r + 1 for r in range(size)]
    ref_rs = mpiref.reduce_scatter(a[:sum(counts)], counts, "sum", comm)
    ref_bc = mpiref.bcast(b[:100], size - 1, comm)
    sc = [(rank + j) % 3 for j in range(size)]
    rc = [(i + rank) % 3 for i in range(size)]
    ref_v = mpiref.alltoallv(b[:sum(sc)], sc, mh._prefix(sc), rc, mh._prefix(rc), sum(rc), comm)
    ref_h = mpiref.allreduce(make("float16", 99, rank), "sum", comm)

    bc = b[:100].copy()
    reqs = [
        mh.iallreduce(a.copy(), np.empty_like(a)),                 # temporaries only
        mh.iallreduce(b.copy(), op="max"),                         # in place on a temporary
        mh.iallgather(b[:17].copy()),
        mh.ireduce_scatter(a[:sum(counts)].copy(), recvcounts=counts),
        mh.ibcast(bc, root=size - 1),
        mh.ialltoallv(b[:sum(sc)].copy(), sc, np.zeros(sum(rc), np.int32), rc),
        mh.iallreduce(make("float16", 99, rank)),
    ]
    polls = 0
    while not reqs[2].test():
        polls += 1
    assert reqs[2].done and reqs[2].test()
    results = [r.wait() for r in reversed(reqs)][::-1]
    assert bits_equal(results[0], ref_a)
    assert bits_equal(results[1], ref_b)
    assert bits_equal(results[2], ref_g)
    assert bits_equal(results[3], ref_rs)
    assert results[4] is bc and bits_equal(bc, ref_bc)
    assert bits_equal(results[5], ref_v)
    assert bits_equal(results[6], ref_h)
    assert all(r.done for r in reqs)
    assert mh.waitall(reqs)[4] is bc  # waiting again returns the same results


def test_nonblocking_dropped_request(comm, rank):
    """A request dropped before completion keeps its buffers until it completes."""
    x = make("float64", 10000, rank)
    ref = mpiref.allreduce(x, "sum", comm)
    out = np.empty_like(x)
    req = mh.iallreduce(x.copy(), out)
    del req  # the temporary input is now referenced only by the package
    y = x.copy()
    mh.allreduce(y)  # a later call progresses (and reclaims) the dropped one
    assert bits_equal(y, ref)
    assert bits_equal(out, ref)


def test_subcommunicators(comm, rank, size):
    """A communicator other than MPI_COMM_WORLD: split by parity, then a dup."""
    sub = comm.split(rank % 2, rank)
    try:
        x = make("int32", 55, rank)
        ref = mpiref.allreduce(x, "sum", sub)
        assert bits_equal(mh.allreduce(x, np.empty_like(x), comm=sub), ref)
        d = sub.dup()
        try:
            assert bits_equal(mh.iallreduce(x, np.empty_like(x), comm=d.handle).wait(), ref)
        finally:
            d.free()
    finally:
        sub.free()


def test_describe(comm, size):
    import os
    text = mh.describe()
    assert text.startswith("hierarchy: %d ranks" % size)
    assert mh.describe(comm) == text
    layout = os.environ.get("MXH_TEST_LAYOUT", "")
    if layout == "2x2":
        assert "2 nodes" in text and "level 1" in text
    elif layout == "1node":
        assert "1 node" in text or "1 level" in text


def test_split_parallel(comm, rank, size):
    import os
    layout = os.environ.get("MXH_TEST_LAYOUT", "")
    per_node = 2 if layout == "2x2" else size  # 2x2: ranks 0, 1 on a; 2, 3 on b
    tp, dp = mh.split_parallel([per_node, 0], comm)
    try:
        assert (tp.size, dp.size) == (per_node, size // per_node)
        assert tp.rank == rank % per_node and dp.rank == rank // per_node
        got = np.zeros(1, dtype=np.int64)
        mh.allreduce(np.array([rank], dtype=np.int64), got, op="sum", comm=tp)
        first = rank - rank % per_node
        assert got[0] == sum(range(first, first + per_node))
        text = mh.describe_parallel([per_node, 0], comm)
        assert text.startswith("dimension 0: %d ranks a group, level node\n" % per_node), text
    finally:
        tp.free()
        dp.free()
    with pytest.raises(mh.MPIXHierError) as e:
        mh.split_parallel([size + 1], comm)
    assert "does not equal" in str(e.value)


def test_reorder(comm, rank, size):
    import os
    from mpix_hier import _lib
    two = os.environ.get("MXH_TEST_LAYOUT", "") == "2x2"  # ranks 0, 1 on a; 2, 3 on b
    # a communicator whose ranks alternate between the nodes (2x2: a b a b), on one node
    # the reverse of COMM_WORLD's order
    key = (rank % 2) * 2 + rank // 2 if two else size - 1 - rank
    mixed = comm.split(0, key)
    re, again = mh.reorder(mixed), mh.reorder(mixed)
    try:
        # the topology order: nodes by their first rank in mixed, a node's ranks in mixed's
        # order: 2x2 gives back COMM_WORLD's order, one node keeps mixed's
        assert (re.size, re.rank) == (size, rank if two else key)
        assert again.rank == re.rank
        got = np.zeros(1, dtype=np.int64)
        mh.allreduce(np.array([rank], dtype=np.int64), got, op="sum", comm=re)
        assert got[0] == size * (size - 1) // 2
    finally:
        for c in (re, again, mixed):
            c.free()
    with pytest.raises(mh.MPIXHierError) as e:
        mh.reorder(_lib.COMM_NULL)
    assert e.value.error_class == 5  # MPI_ERR_COMM


def test_persistent(comm, rank, size):
    """Persistent allreduce, bcast and allgather: 100 starts with new inputs each,
    equal to the blocking calls; inactive wait; free; a freed request refuses."""
    x = np.zeros(7, dtype=np.float64)
    y = np.zeros(7, dtype=np.float64)
    b = np.zeros(5, dtype=np.int32)
    g = np.zeros(3 * size, dtype=np.int16)
    s = np.zeros(3, dtype=np.int16)
    with mh.allreduce_init(x, y, op="sum", comm=comm) as pa, \
            mh.bcast_init(b, root=size - 1, comm=comm) as pb, \
            mh.allgather_init(s, g, comm=comm) as pg:
        assert not pa.active and pa.wait() is y  # inactive: returns at once
        for it in range(100):
            x[:] = np.arange(7) * (rank + 1) + it
            b[:] = it + rank if rank == size - 1 else -1
            s[:] = rank * 10 + it
            pa.start()
            pb.start()
            pg.start()
            if it % 2:
                while not pa.test():
                    pass
            got = pa.wait()
            pb.wait()
            pg.wait()
            want = mh.allreduce(x.copy(), op="sum", comm=comm)
            assert np.array_equal(got, want), it
            assert np.array_equal(b, np.full(5, it + size - 1, dtype=np.int32)), it
            assert np.array_equal(g, np.repeat(np.arange(size) * 10 + it, 3).astype(np.int16))
        handle = pa.handle
    assert handle != 0 and not pa.active
    with pytest.raises(ValueError):
        pa.start()
