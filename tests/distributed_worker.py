"""Run under ``mpiexec -n N`` by tests/test_distributed_mpi.py (one launch, many checks).

``python distributed_worker.py MODE``: ``mpi`` and ``nccl`` (the stand-in NCCL
communicator of nccl_standin.py) check every collective against its definition, DataParallel
training against one process on the concatenated batches, ``no_sync``, unused parameters,
checkpoint resume, DistributedSampler, a checkpointed region, float16 near its top,
SyncBatchNorm, a compiled step, and that ranks which disagree (dtype, shape, op, root, call,
model) all get an error naming them; ``mpi`` also trains against torch's
DistributedDataParallel (gloo) and checks bfloat16 on torch and JAX. ``fuzz:FIRST:COUNT``
runs tests/distributed_fuzz_cases.py's cases. The other modes end the job early, each its own
way, and must not hang: ``fail`` (rank 1 raises), ``exit`` (rank 1 calls ``sys.exit(0)``
while rank 0 waits in a barrier), ``uneven`` (rank 1 has one batch fewer and ends normally)
and ``timeout`` (rank 1 sleeps past rank 0's ``init(timeout=1)``: the watchdog ends it).
"""

import os
import sys
import tempfile
import time

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(__file__))
import xad  # noqa: E402
import xad.distributed as dist  # noqa: E402
from xad import nn  # noqa: E402

W = MPI.COMM_WORLD
R, N = W.Get_rank(), W.Get_size()


def data(seed, shape, dtype):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return (rng.standard_normal(shape) * 10).astype(dtype)


def check_collectives(backend):
    xad.set_backend(backend)
    shapes = [(), (5,), (3, 4), (2, 3, 2)]
    for k, (shape, dtype) in enumerate((s, d) for s in shapes
                                       for d in ["float32", "float64", "int32", "int64"]):
        mine = [data(1000 * k + r, shape, dtype) for r in range(N)]
        tol = dict(rtol=1e-5, atol=1e-4) if dtype == "float32" else dict(rtol=1e-12, atol=0)
        for op, want in [("sum", np.sum(mine, 0)), ("max", np.max(mine, 0)),
                         ("mean", np.mean(mine, 0))]:
            if op == "mean" and "int" in dtype:
                continue
            t = xad.tensor(mine[R])
            out = dist.all_reduce(t, op=op)
            np.testing.assert_allclose(out.numpy(), want.astype(dtype), **tol)
            np.testing.assert_allclose(t.numpy(), out.numpy())  # written into the argument
            assert out.dtype.name == dtype
        t = xad.tensor(mine[R])
        np.testing.assert_array_equal(dist.broadcast(t, root=N - 1).numpy(), mine[N - 1])
        np.testing.assert_array_equal(t.numpy(), mine[N - 1])
        got = dist.all_gather(xad.tensor(mine[R]))
        assert len(got) == N
        for r in range(N):
            np.testing.assert_array_equal(got[r].numpy(), mine[r])
        big = [data(7 + 1000 * k + r, (2 * N, *shape), dtype) for r in range(N)]
        rs = dist.reduce_scatter(xad.tensor(big[R]))
        np.testing.assert_allclose(rs.numpy(), np.sum(big, 0)[2 * R:2 * R + 2], **tol)
    flags = [data(5 + r, (6,), "bool") for r in range(N)]
    got = dist.all_reduce(xad.tensor(flags[R]), op="max").numpy()
    np.testing.assert_array_equal(got, np.any(flags, 0))
    xad.set_backend("numpy")


def make_model(seed):
    xad.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(),
                         nn.Linear(8, 1)).double()


def batches(steps, B=10):
    rng = np.random.default_rng(42)
    return [(rng.standard_normal((B, 4)), rng.standard_normal((B, 1))) for _ in range(steps)]


def shard(x):
    return np.array_split(x, N)[R]  # uneven for N=3: 4, 3, 3 of 10


def train(model, opt, data_, scale):
    for x, y in data_:
        opt.zero_grad()
        out = model(xad.tensor(x))
        loss = ((out - xad.tensor(y)) ** 2).sum() * scale
        loss.backward()
        opt.step()


def params(m):
    return [p.numpy().copy() for p in m.parameters()]


def check_equivalence(overlap):
    data_ = batches(20)
    ddp = dist.DataParallel(make_model(R), bucket_mb=5e-4, overlap=overlap)  # several buckets
    assert len(ddp._reducer.buckets) > 2
    ref = make_model(99)
    ref.load_state_dict(ddp.module.state_dict())  # rank 0's start, broadcast by DataParallel
    opt = xad.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    train(ddp, opt, [(shard(x), shard(y)) for x, y in data_], N / 10)
    train(ref, xad.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9), data_, 1 / 10)
    for a, b in zip(params(ddp), params(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)
    gathered = W.allgather(params(ddp))
    for other in gathered:
        for a, b in zip(other, params(ddp)):
            np.testing.assert_array_equal(a, b)  # every replica the same


def check_no_sync():
    (x1, y1), (x2, y2) = batches(2)
    ddp = dist.DataParallel(make_model(3), bucket_mb=5e-4)
    ref = make_model(99)
    ref.load_state_dict(ddp.module.state_dict())
    with ddp.no_sync():
        ((ddp(xad.tensor(shard(x1))) - xad.tensor(shard(y1))) ** 2).sum().backward()
    local = params_grads(ddp)
    ((ddp(xad.tensor(shard(x2))) - xad.tensor(shard(y2))) ** 2).sum().backward()
    for x, y in [(x1, y1), (x2, y2)]:
        ((ref(xad.tensor(x)) - xad.tensor(y)) ** 2).sum().backward()
    for a, b in zip(params_grads(ddp), params_grads(ref)):
        np.testing.assert_allclose(a * N, b, rtol=1e-9)  # averaged: sum over ranks / N
    if N > 1:  # inside no_sync nothing was communicated: the ranks differed
        assert any(not np.allclose(a, b) for a, b in zip(local, W.bcast(local, root=0))) \
            or R == 0


def params_grads(m):
    return [p.grad.numpy().copy() for p in m.parameters()]


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 1), nn.Linear(3, 1)
        self.use_b = False

    def forward(self, x):
        return self.a(x) + self.b(x) if self.use_b else self.a(x)


def check_unused():
    """A head unused on every rank keeps ``.grad`` None (before: zeros, which momentum and
    weight decay then applied); one used on rank 0 only averages with the others' zeros."""
    ddp = dist.DataParallel(TwoHeads(), find_unused_parameters=True)
    ddp(xad.ones(2, 3)).sum().backward()
    assert ddp.module.b.weight.grad is None
    np.testing.assert_allclose(ddp.module.a.bias.grad.numpy(), [2.0])
    ddp.module.zero_grad()
    ddp.module.use_b = R == 0
    ddp(xad.ones(2, 3)).sum().backward()
    np.testing.assert_allclose(ddp.module.b.bias.grad.numpy(), [2.0 / N])
    strict = dist.DataParallel(TwoHeads())
    try:
        strict(xad.ones(2, 3)).sum().backward()
    except RuntimeError as e:
        assert "b.weight" in str(e) and "find_unused_parameters=True" in str(e), e
    else:
        raise AssertionError("an unused parameter should raise without find_unused")


def check_resume():
    data_ = [(shard(x), shard(y)) for x, y in batches(20)]
    path = W.bcast(os.path.join(tempfile.mkdtemp(), "ckpt.xad") if R == 0 else None)
    ddp = dist.DataParallel(make_model(5))
    opt = xad.optim.Adam(ddp.parameters(), lr=0.01)
    train(ddp, opt, data_[:10], 1.0)
    dist.save({"model": ddp.module.state_dict(), "opt": opt.state_dict()}, path)
    train(ddp, opt, data_[10:], 1.0)
    ckpt = xad.load(path)
    again = dist.DataParallel(make_model(77))
    again.module.load_state_dict(ckpt["model"])
    opt2 = xad.optim.Adam(again.parameters(), lr=0.01)
    opt2.load_state_dict(ckpt["opt"])
    train(again, opt2, data_[10:], 1.0)
    for a, b in zip(params(ddp), params(again)):
        np.testing.assert_array_equal(a, b)


def check_sampler():
    ds = xad.data.TensorDataset(xad.arange(10.0))
    sampler = xad.data.DistributedSampler(ds, seed=3)
    sampler.set_epoch(2)
    mine = [float(v) for (b,) in xad.data.DataLoader(ds, batch_size=2, sampler=sampler)
            for v in b.tolist()]
    every = [v for part in W.allgather(mine) for v in part]
    assert len(every) == N * -(-10 // N) and set(every) == set(map(float, range(10))), every


class Checkpointed(nn.Module):
    def __init__(self, seed):
        super().__init__()
        self.inner, self.head = make_model(seed), nn.Linear(1, 1).double()

    def forward(self, x):
        return self.head(xad.checkpoint(self.inner, x))


def check_checkpoint():
    """A checkpointed region in the wrapper's forward trains as one process (before, the
    re-run in backward raised: it built a graph without the wrapper's identities)."""
    (x, y), = batches(1)
    ddp = dist.DataParallel(Checkpointed(R), bucket_mb=5e-4)
    ref = Checkpointed(99)
    ref.load_state_dict(ddp.module.state_dict())
    for m, xs, ys, scale in ((ddp, shard(x), shard(y), N / 10), (ref, x, y, 1 / 10)):
        ((m(xad.tensor(xs)) - xad.tensor(ys)) ** 2).sum().mul(scale).backward()
    for a, b in zip(params_grads(ddp), params_grads(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-15)


def bn_model(seed, conv):
    xad.manual_seed(seed)
    if conv:
        return nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3, momentum=None), nn.Tanh(),
                             nn.Flatten(), nn.Linear(12, 1)).double()
    return nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.Tanh(),
                         nn.Linear(5, 1)).double()


def check_sync_batchnorm():
    """DataParallel over SyncBatchNorm trains as one process's BatchNorm on the global batch
    (parameters and running statistics), uneven shards included; eval mode agrees too."""
    rng = np.random.default_rng(8)
    for conv in (False, True):
        ddp = dist.DataParallel(dist.SyncBatchNorm.convert_sync_batchnorm(bn_model(R, conv)))
        ref = bn_model(99, conv)
        ref.load_state_dict(ddp.module.state_dict())
        opts = [xad.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (ddp, ref)]
        for _ in range(3):
            x = rng.standard_normal((10, 2, 4, 4) if conv else (10, 4))
            for m, o, xs, scale in ((ddp, opts[0], shard(x), N / 10), (ref, opts[1], x, 0.1)):
                o.zero_grad()
                (m(xad.tensor(xs)) ** 2).sum().mul(scale).backward()
                o.step()
        got, want = ddp.module.state_dict(), ref.state_dict()
        for k in want:
            np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-9,
                                       atol=1e-12, err_msg=k)
        ddp.eval()
        ref.eval()
        np.testing.assert_allclose(ddp(xad.tensor(shard(x))).numpy(),
                                   ref(xad.tensor(shard(x))).numpy(), rtol=1e-12)
    sync, plain = dist.SyncBatchNorm(4), nn.BatchNorm1d(4)  # autocast: float32, as BatchNorm
    x = rng.standard_normal((9, 4))
    with xad.amp.autocast(dtype=xad.float16):
        got = sync(xad.tensor(shard(x)).astype(xad.float16))
        want = plain(xad.tensor(x).astype(xad.float16))
    assert got.dtype == want.dtype == xad.float32, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), shard(want.numpy()), rtol=1e-5, atol=1e-5)


def _torch_ddp():
    """torch.distributed over gloo beside MPI (rank 0 picks a free port)."""
    import socket

    import torch.distributed as tdist
    if not tdist.is_initialized():
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = W.bcast(sock.getsockname()[1] if R == 0 else None)
        tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=R,
                                 world_size=N)


def _hooked_model(lib, start):
    """Tied layers, a head only some ranks use, a clamping hook added after wrapping."""
    L = lib.nn

    class M(L.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.head, self.out = (L.Linear(3, 3), L.Linear(3, 3),
                                                   L.Linear(3, 3), L.Linear(3, 1))
            self.b.weight = self.a.weight
            self.use = False

        def forward(self, x):
            h = lib.tanh(self.b(lib.tanh(self.a(x))))
            return self.out(h + self.head(x) if self.use else h)

    m = M().double()
    m.load_state_dict({k: (lib.tensor(v)) for k, v in start.items()}, strict=False)
    return m


def check_against_torch_ddp():
    """xad's DataParallel and torch's DistributedDataParallel (gloo) from the same start on
    the same shards: a head used by some ranks (find_unused_parameters), tied layers,
    no_sync accumulation, an L2 term outside the forward, momentum and weight decay, and a
    clamping hook registered after wrapping, which sees the local gradient in PyTorch
    (before, xad's ran it on the averaged one: 5e-4 apart after four steps)."""
    import torch
    from torch.nn.parallel import DistributedDataParallel
    _torch_ddp()
    rng = np.random.default_rng(R)
    start = {k: rng.standard_normal(s) * 0.5 for k, s in [
        ("a.weight", (3, 3)), ("a.bias", (3,)), ("b.bias", (3,)), ("head.weight", (3, 3)),
        ("head.bias", (3,)), ("out.weight", (1, 3)), ("out.bias", (1,))]}
    data = [np.random.default_rng(3 + i).standard_normal((8, 3)) for i in range(4)]
    final = []
    for lib in (torch, xad):
        m = _hooked_model(lib, start)
        wrap = DistributedDataParallel if lib is torch else dist.DataParallel
        ddp = wrap(m, find_unused_parameters=True)
        m.a.bias.register_hook(lambda g: g.clamp(-0.05, 0.05))
        opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
        for step, x in enumerate(data):
            opt.zero_grad()
            m.use = (step + R) % 3 == 0
            if step == 1:
                with ddp.no_sync():
                    (ddp(lib.tensor(shard(x))) ** 2).sum().backward()
            ((ddp(lib.tensor(shard(x))) ** 2).sum() + (m.out.weight ** 2).sum() * 0.1).backward()
            opt.step()
        final.append({k: v.detach().numpy() for k, v in m.state_dict().items()})
    for k in final[0]:
        np.testing.assert_allclose(final[1][k], final[0][k], rtol=1e-9, atol=1e-12, err_msg=k)


def check_compiled_step():
    """xad.compile of a whole DataParallel training step: the wrapper's hooks make it run
    eagerly (a replay would skip the all-reduces and train each rank alone), so it trains
    as one process."""
    import warnings
    data_ = batches(4)
    ddp = dist.DataParallel(make_model(R), bucket_mb=5e-4)
    ref = make_model(99)
    ref.load_state_dict(ddp.module.state_dict())
    opt = xad.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)

    @xad.compile
    def step(x, y):
        opt.zero_grad()
        ((ddp(x) - y) ** 2).sum().mul(N / 10).backward()
        opt.step()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x, y in data_:
            step(xad.tensor(shard(x)), xad.tensor(shard(y)))
    train(ref, xad.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9), data_, 1 / 10)
    for a, b in zip(params(ddp), params(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def check_float16_range():
    """Each rank's float16 gradient is 40000, the average too; summed before dividing it
    overflowed to inf (float16 stops at 65504): PyTorch's DDP divides first, and so now."""
    lin = nn.Linear(1, 1, bias=False).to(xad.float16)
    ddp = dist.DataParallel(lin)
    ddp(xad.tensor([[40000.0]]).astype(xad.float16)).sum().backward()
    assert lin.weight.grad.tolist() == [[40000.0]], lin.weight.grad.tolist()
    big = xad.tensor([40000.0]).astype(xad.float16)
    assert dist.all_reduce(big, op="mean").tolist() == [40000.0]
    big = xad.full((N,), 40000.0).astype(xad.float16)
    assert dist.reduce_scatter(big, op="mean").tolist() == [40000.0]


def check_half(backend):
    """bfloat16 travels as float32 and comes back bfloat16 (before: torch's came back
    float32 and the gradient hook refused it; JAX's made MPI raise BufferError)."""
    xad.set_backend(backend)
    bf = xad.bfloat16
    t = xad.tensor([R + 0.5, 2.0]).astype(bf)
    got = dist.all_reduce(t)
    assert got.dtype == bf and got.tolist() == [N * N / 2, 2.0 * N], got.tolist()
    t = xad.tensor([R + 0.5, 2.0]).astype(bf)
    assert dist.broadcast(t, root=N - 1).tolist() == [N - 0.5, 2.0]
    assert [g.tolist()[0] for g in dist.all_gather(t)] == [N - 0.5] * N
    (x, _), = batches(1)
    ddp = dist.DataParallel(make_model(R).to(bf), bucket_mb=1e-4)
    ref = make_model(99).to(bf)
    ref.load_state_dict(ddp.module.state_dict())
    (ddp(xad.tensor(shard(x)).astype(bf)) ** 2).sum().backward()
    (ref(xad.tensor(x).astype(bf)) ** 2).sum().backward()
    for p, q in zip(ddp.parameters(), ref.parameters()):
        assert p.grad.dtype == bf
        a, b = (v.grad.astype(xad.float32).numpy() for v in (p, q))
        np.testing.assert_allclose(a * N, b, rtol=0.05, atol=0.05 * np.abs(b).max())
    xad.set_backend("numpy")


def check_broadcast_buffers():
    """Rank 0's running statistics reach every rank at each training forward (momentum 0
    keeps the forward itself from changing them); without the flag they stay each rank's."""
    for flag in (True, False):
        bn = xad.nn.BatchNorm1d(3, momentum=0.0)
        model = dist.DataParallel(bn, broadcast_buffers=flag)
        with xad.no_grad():
            bn.running_mean.fill_(float(dist.rank()))
        model(xad.ones(4, 3)).sum().backward()
        want = 0.0 if flag else float(dist.rank())
        assert bn.running_mean.tolist() == [want] * 3, (flag, bn.running_mean.tolist())


def raises(fn, *words):
    """``fn()`` raises on this rank, with every word in its message."""
    try:
        fn()
    except RuntimeError as e:
        assert all(w in str(e) for w in words), (words, str(e))
    else:
        raise AssertionError(f"no error; expected one naming {words}")


def check_disagreements():
    """Each mismatch raises on every rank, naming the call, what each rank holds and the
    ranks; the group stays usable (they were caught before any data moved). Before: float32
    against float64 gave garbage, a size mismatch MPI's bare "Message truncated"."""
    last = "rank 1" if N == 2 else "ranks 1, 2"
    dtype = "float64" if R else "float32"
    raises(lambda: dist.all_reduce(xad.ones(3, dtype=dtype)), "all_reduce", "rank 0: all_reduce "
           "of a float32 tensor of shape (3,)", f"{last}: all_reduce of a float64 tensor")
    raises(lambda: dist.all_gather(xad.ones(2 + R)), "all_gather", "shape (2,)", "shape (3,)")
    raises(lambda: dist.broadcast(xad.ones(2), root=min(R, 1)), "root=0", "root=1")
    raises(lambda: dist.all_reduce(xad.ones(2), op="max" if R else "sum"), "op='max'")
    call = (lambda: dist.broadcast(xad.ones(2))) if R else dist.barrier
    raises(call, "rank 0: barrier", "broadcast of", "out of step")
    np.testing.assert_array_equal(dist.all_reduce(xad.ones(2)).numpy(), [N, N])
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    model[1].bias.requires_grad_(R == 0)  # before: buckets of different layouts mixed up
    raises(lambda: dist.DataParallel(model), "DataParallel: the ranks hold different models",
           "'1.bias' of shape (1,), float32, requires_grad=True",
           f"{last}: '1.bias' of shape (1,), float32, requires_grad=False")
    raises(lambda: dist.DataParallel(nn.Linear(3, 1 + R)), "'weight' of shape (1, 3)",
           "'weight' of shape (2, 3)")
    dist.world.comm().check = False  # the fast mode: no descriptor, same results
    np.testing.assert_array_equal(dist.all_reduce(xad.ones(2)).numpy(), [N, N])
    dist.world.comm().check = True


def check_several_forwards():
    """Two forwards per backward (a pair loss), an evaluation under no_grad between them and
    the backward (before: the step was disarmed and gradients stayed each rank's own), and
    an L2 term on the parameters in the loss, equal one process on the concatenated
    batches."""
    (x1, _), (x2, _) = batches(2)
    ddp = dist.DataParallel(make_model(R), bucket_mb=5e-4)
    ref = make_model(99)
    ref.load_state_dict(ddp.module.state_dict())
    for m, xs, scale in ((ddp, (shard(x1), shard(x2)), N / 10), (ref, (x1, x2), 1 / 10)):
        a, b = (m(xad.tensor(x)) for x in xs)
        with xad.no_grad():
            m(xad.tensor(xs[0]))
        reg = sum((p ** 2).sum() for p in m.parameters())
        ((a ** 2).sum() * scale + (b ** 3).sum() * scale + reg).backward()
    for a, b in zip(params_grads(ddp), params_grads(ref)):
        np.testing.assert_allclose(a, b, rtol=1e-9)


def leave(mode):
    """End the job early (see the module docstring); every rank must stop, none hang."""
    dist.init("mpi", timeout=1.0 if mode == "timeout" else 600.0)
    if mode == "fail" and R == 1:
        raise ValueError("boom on purpose")
    if mode == "exit" and R == 1:
        sys.exit(0)
    if mode == "timeout" and R == 1:
        time.sleep(60)
    if mode == "uneven":
        ddp = dist.DataParallel(make_model(1))
        for x, y in batches(3 - R, B=4):
            ((ddp(xad.tensor(x)) - xad.tensor(y)) ** 2).sum().backward()
        print(f"rank {R} finished its batches", flush=True)
        return
    dist.barrier()  # would wait forever for rank 1 without the abort


def fuzz(first, count):
    """``count`` cases of distributed_fuzz_cases from seed ``first``, on NumPy."""
    import distributed_fuzz_cases as cases
    dist.init("mpi")
    for seed in range(first, first + count):
        mine, ref = cases.run(cases.draw(seed, N), dist, R, N)
        for k, (a, b) in enumerate(zip(mine, ref)):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=cases.ATOL, err_msg=(
                f"case {seed}: {cases.draw(seed, N)}, parameter {k}"))
        every = W.allgather(mine)
        assert all(np.array_equal(a, b) for other in every for a, b in zip(other, mine))
    print(f"rank {R}/{N} fuzz: {count} cases OK", flush=True)


def main(mode):
    if mode.startswith("fuzz:"):
        return fuzz(*map(int, mode.split(":")[1:]))
    if mode == "nccl":
        import nccl_standin
        xad.get_backend().nccl_transport = nccl_standin.Transport
    if mode in ("fail", "exit", "uneven", "timeout"):
        return leave(mode)
    dist.init(mode)
    check_disagreements()
    check_several_forwards()
    check_collectives("numpy")
    if mode == "mpi":
        check_collectives("array_api_strict")  # the explicit host-copy path
    check_equivalence(overlap=True)
    check_equivalence(overlap=False)
    check_no_sync()
    check_resume()
    check_sampler()
    check_unused()
    check_broadcast_buffers()
    check_checkpoint()
    check_float16_range()
    check_compiled_step()
    check_sync_batchnorm()
    if mode == "mpi":
        check_against_torch_ddp()
        check_half("torch")
        check_half("jax")
    if mode == "nccl":
        import nccl_standin
        names = {name for name, _ in nccl_standin.nccl.calls}
        assert names == {"allReduce", "bcast", "allGather", "reduceScatter"}, names
        assert ("allReduce", 2) in nccl_standin.nccl.calls  # overlapped: the side stream
    print(f"rank {R}/{N} {mode}: ALL OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
