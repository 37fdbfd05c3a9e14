"""xad.distributed in one process (a world of size 1), on every backend, and
DistributedSampler; tests/test_distributed_mpi.py runs several processes."""

import sys

import numpy as np
import pytest

import xad
from xad import nn

pytest.importorskip("mpi4py", reason="the mpi extra is not installed: pip install 'xad[mpi]'")
dist = xad.distributed


@pytest.fixture(autouse=True, scope="module")
def world():
    dist.init("mpi")
    assert dist.is_initialized() and dist.world_size() == 1 and dist.rank() == 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_collectives_of_one_rank_are_identities(xb, dtype):
    a = np.arange(12).reshape(3, 4).astype(dtype)
    for op in ["sum", "max"] + (["mean"] if "float" in dtype else []):
        t = xad.tensor(a)
        out = dist.all_reduce(t, op=op)
        assert out.backend is xb and out.dtype.name == dtype
        np.testing.assert_array_equal(out.numpy(), a)
        np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(dist.broadcast(xad.tensor(a)).numpy(), a)
    (g,) = dist.all_gather(xad.tensor(a))
    np.testing.assert_array_equal(g.numpy(), a)
    np.testing.assert_array_equal(dist.reduce_scatter(xad.tensor(a)).numpy(), a)


def test_collective_errors_name_the_call(xb):
    with pytest.raises(TypeError, match=r"all_reduce: op='mean' needs a floating tensor"):
        dist.all_reduce(xad.tensor([1, 2]), op="mean")
    with pytest.raises(ValueError, match="op must be one of"):
        dist.all_reduce(xad.ones(2), op="min")
    with pytest.raises(ValueError, match=r"broadcast: root must be a rank in \[0, 0\]"):
        dist.broadcast(xad.ones(2), root=1)
    with pytest.raises(TypeError, match="expected an xad tensor"):
        dist.all_gather(np.ones(2))


def test_data_parallel_of_one_rank_matches_the_module(xb):
    xad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)).double()
    ref = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)).double()
    ref.load_state_dict(model.state_dict())
    ddp = dist.DataParallel(model, bucket_mb=1e-4)
    x = xad.randn(4, 3).astype(xad.float64)
    with ddp.no_sync():  # accumulate locally, then one synced step
        ddp(x).sum().backward()
    (ddp(x) ** 2).sum().backward()
    ref(x).sum().backward()
    (ref(x) ** 2).sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert p.grad.backend is xb
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)
    assert all(type(p) is nn.Parameter for p in model.parameters())  # restored after forward


def test_data_parallel_tied_weights_reduce_the_whole_gradient(xb):
    def tied():
        xad.manual_seed(1)
        first, last = nn.Linear(3, 3), nn.Linear(3, 3)
        last.weight = first.weight  # one Parameter used by two modules
        return nn.Sequential(first, nn.Tanh(), last).double()

    model, ref = tied(), tied()
    ddp = dist.DataParallel(model, bucket_mb=1e-5)  # a bucket per parameter
    x = xad.randn(4, 3).astype(xad.float64)
    (ddp(x) ** 2).sum().backward()
    (ref(x) ** 2).sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_data_parallel_unused_parameter_is_named(xb):
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 1), nn.Linear(2, 1)

        def forward(self, x):
            return self.a(x)

    ddp = dist.DataParallel(TwoHeads())
    with pytest.raises(RuntimeError, match=r"b\.weight, b\.bias.*find_unused_parameters=True"):
        ddp(xad.ones(1, 2)).sum().backward()
    ddp = dist.DataParallel(TwoHeads(), find_unused_parameters=True)
    ddp(xad.ones(1, 2)).sum().backward()
    assert ddp.module.b.bias.grad is None  # unused on every rank: untouched, as PyTorch
    with pytest.raises(TypeError, match="DataParallel wraps an xad.nn.Module"):
        dist.DataParallel(lambda x: x)


def test_distributed_sampler_shards_cover_the_data_once_per_epoch():
    ds = list(range(11))
    shards = [list(xad.data.DistributedSampler(ds, num_replicas=3, rank=r, seed=1))
              for r in range(3)]
    assert [len(s) for s in shards] == [4, 4, 4] and set(sum(shards, [])) == set(ds)
    s = xad.data.DistributedSampler(ds, num_replicas=3, rank=0, seed=1)
    first = list(s)
    s.set_epoch(1)
    assert list(s) != first and sorted(first) != first
    dropped = xad.data.DistributedSampler(ds, num_replicas=3, rank=2, drop_last=True)
    assert len(list(dropped)) == len(dropped) == 3
    assert list(xad.data.DistributedSampler(ds, shuffle=False)) == ds  # the group's world
    with pytest.raises(ValueError, match="rank must be in"):
        xad.data.DistributedSampler(ds, num_replicas=2, rank=2)


def test_data_loader_takes_a_sampler(xb):
    ds = xad.data.TensorDataset(xad.arange(6.0), xad.arange(6))
    sampler = xad.data.DistributedSampler(ds, num_replicas=2, rank=1, shuffle=False)
    batches = [(a.tolist(), b.tolist()) for a, b in
               xad.data.DataLoader(ds, batch_size=2, sampler=sampler)]
    assert batches == [([1.0, 3.0], [1, 3]), ([5.0], [5])]
    with pytest.raises(ValueError, match="sampler and shuffle=True are exclusive"):
        xad.data.DataLoader(ds, sampler=sampler, shuffle=True)


def test_without_mpi4py_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(ImportError, match=r"pip install 'xad\[mpi\]'"):
        dist.mpi_comm.load_mpi()


def test_nccl_needs_a_backend_with_a_transport():
    saved = dist.world._state["comm"]
    dist.world._state["comm"] = None
    try:
        with pytest.raises(ValueError, match="has no NCCL transport; NCCL needs CuPy"):
            dist.init("nccl")
    finally:
        dist.world._state["comm"] = saved


def _pair(seed=0):
    xad.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).double()
    ref = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).double()
    ref.load_state_dict(model.state_dict())
    return model, ref


def _same_grads(model, ref):
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_data_parallel_several_forwards_before_one_backward(xb):
    """Two forwards then one backward through both (a siamese loss) sum both gradients;
    before, the second forward reset the step and one pass's gradient was kept."""
    model, ref = _pair()
    ddp = dist.DataParallel(model, bucket_mb=1e-4)
    a, b = xad.randn(2, 3).astype(xad.float64), xad.randn(5, 3).astype(xad.float64)
    for m in (ddp, ref):
        (m(a).sum() + (m(b) ** 2).sum()).backward()
    _same_grads(model, ref)
    ddp(a).sum()  # an output never backpropagated only joins the next step
    for m in (ddp, ref):
        out = m(b)
        with xad.no_grad():
            m(a)  # evaluation between a forward and its backward leaves the step open
        (out ** 3).sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_data_parallel_refuses_a_backward_through_an_averaged_forward(xb):
    model, _ = _pair()
    ddp = dist.DataParallel(model)
    loss = ddp(xad.ones(2, 3).astype(xad.float64)).sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match=r"already averaged.*call the model again.*no_sync"):
        loss.backward()
    ddp(xad.ones(2, 3).astype(xad.float64)).sum().backward()  # the next step works


def test_data_parallel_keeps_gradient_shares_outside_its_forward(xb):
    """An L2 term on the parameters in the loss, and a use before the owning module's
    call: their gradient shares were dropped (the averaged bucket replaced the leaf's)."""
    class Early(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 1).double()

        def forward(self, x):
            return (self.lin.weight ** 2).sum() * 3 + self.lin(x).sum()

    xad.manual_seed(2)
    model, ref = Early(), Early()
    ref.load_state_dict(model.state_dict())
    ddp = dist.DataParallel(model)
    x = xad.randn(4, 3).astype(xad.float64)
    for m, params in ((ddp, model.parameters()), (ref, ref.parameters())):
        (m(x) + sum((p ** 2).sum() for p in params) * 0.1).backward()
    _same_grads(model, ref)


def test_init_checks_its_timeout():
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        dist.init(timeout=0)


class _Heads(nn.Module):
    """Two heads; ``forward`` uses the second only when ``both``."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 2).double(), nn.Linear(3, 2).double()
        self.both = False

    def forward(self, x):
        return self.a(x) + (self.b(x) if self.both else 0)


@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_data_parallel_unused_head_trains_as_one_process(xb, opt):
    """A head unused on every rank keeps ``.grad`` None, so the optimiser skips it as with
    one process; before, it got a zero gradient and momentum / weight decay moved it."""
    xad.manual_seed(3)
    model, ref = _Heads(), _Heads()
    ref.load_state_dict(model.state_dict())
    ddp = dist.DataParallel(model, find_unused_parameters=True, bucket_mb=1e-5)
    make = {"sgd": lambda ps: xad.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.1),
            "adamw": lambda ps: xad.optim.AdamW(ps, lr=0.1)}[opt]
    opts = [make(model.parameters()), make(ref.parameters())]
    x = xad.randn(4, 3).astype(xad.float64)
    for step in range(4):
        for m, o, net in ((ddp, opts[0], model), (ref, opts[1], ref)):
            net.both = step == 1  # the second head trains once, then idles
            o.zero_grad()
            (m(x) ** 2).sum().backward()
            o.step()
    assert model.b.weight.grad is None
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-12, atol=1e-15)


def test_no_half_precision_buffer_reaches_mpi(xb):
    """Open MPI has no float16 datatype (MPI_ERR_TYPE in a GPU machine's image, where
    DataParallel's float16 gradients failed; MPICH here has one as an extension): the host
    buffer is float32, and the result comes back float16."""
    from xad.distributed.mpi_comm import MpiComm, _back
    try:
        xb.dtype(xad.float16)
    except TypeError:
        pytest.skip(f"{xb.name} has no float16")
    a = xb.asarray(np.array([1.5, -2.25], dtype=np.float16), dtype=xb.dtype(xad.float16))
    h = MpiComm._host(xb, a)
    assert h.dtype == np.float32 and h.tolist() == [1.5, -2.25]
    assert _back(xb, h, a.dtype).dtype == a.dtype


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_data_parallel_half_precision_gradients_keep_their_dtype(xb, dtype):
    """bfloat16 on torch and JAX: the gradient came back float32 (torch) or MPI refused
    the buffer (JAX); both raised in backward."""
    d = getattr(xad, dtype)
    try:
        xb.dtype(d)
    except TypeError:
        pytest.skip(f"{xb.name} has no {dtype}")
    xad.manual_seed(4)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).to(d)
    ref = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).to(d)
    ref.load_state_dict(model.state_dict())
    x = xad.randn(5, 3).astype(d)
    (dist.DataParallel(model, bucket_mb=1e-5)(x) ** 2).sum().backward()
    (ref(x) ** 2).sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert p.grad.dtype == d
        np.testing.assert_array_equal(p.grad.astype(xad.float32).numpy(),
                                      q.grad.astype(xad.float32).numpy())
    for op in ("sum", "mean", "max"):  # the collectives too
        t = xad.tensor([1.5, -2.0]).astype(d)
        assert dist.all_reduce(t, op=op).dtype == d
    assert dist.broadcast(t).dtype == d and dist.all_gather(t)[0].dtype == d


class _Checkpointed(nn.Module):
    """A checkpointed region holding the first layer and a tied use of it."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 3).double(), nn.Linear(3, 1).double()

    def forward(self, x):
        inner = xad.checkpoint(lambda z: xad.tanh(self.a(xad.tanh(self.a(z)))), x)
        return self.b(inner)


@pytest.mark.parametrize("find_unused", [False, True])
def test_data_parallel_with_a_checkpointed_region(xb, find_unused):
    """Backward re-runs the region without the wrapper's identities: before, checkpoint
    raised "the function built a different graph"."""
    xad.manual_seed(5)
    model, ref = _Checkpointed(), _Checkpointed()
    ref.load_state_dict(model.state_dict())
    ddp = dist.DataParallel(model, bucket_mb=1e-5, find_unused_parameters=find_unused)
    x = xad.randn(4, 3).astype(xad.float64)
    for _ in range(2):
        for m in (ddp, ref):
            (m(x) ** 2).sum().backward()
    _same_grads(model, ref)
    assert all(type(p) is nn.Parameter for p in model.parameters())


def test_data_parallel_model_on_two_backends(xb):
    """One rank's model split over two backends (devices): a bucket mixed them and the
    concatenation raised a bare TypeError from the first backend's library."""
    class Split(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 2).double().to("array_api_strict")
            self.b = nn.Linear(2, 1).double()

        def forward(self, x):
            return self.b(self.a(x.to("array_api_strict")).to(xb))

    xad.manual_seed(6)
    model, ref = Split(), Split()
    ref.load_state_dict(model.state_dict())
    x = xad.randn(4, 3).astype(xad.float64)
    (dist.DataParallel(model)(x) ** 2).sum().backward()
    (ref(x) ** 2).sum().backward()
    _same_grads(model, ref)
    assert model.a.weight.grad.backend.name == "array_api_strict"
    assert model.b.weight.grad.backend is xb


@pytest.mark.parametrize("conv", [False, True])
def test_sync_batchnorm_of_one_rank_is_batchnorm(xb, conv):
    """One rank: SyncBatchNorm (converted in place of BatchNorm) trains as BatchNorm; the
    ranks' case is tests/distributed_worker.py's check_sync_batchnorm."""

    def make():
        xad.manual_seed(7)
        if conv:
            return nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.Flatten(),
                                 nn.Linear(12, 1)).double()
        return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=None),
                             nn.Linear(4, 1)).double()

    model, ref = dist.SyncBatchNorm.convert_sync_batchnorm(make()), make()
    assert type(model[1]) is dist.SyncBatchNorm and model[1].num_features == ref[1].num_features
    ddp = dist.DataParallel(model)
    x = xad.randn(*((5, 2, 4, 4) if conv else (5, 3))).astype(xad.float64)
    for m in (ddp, ref):
        opt = xad.optim.SGD(m.parameters(), lr=0.1)
        (m(x) ** 2).sum().backward()
        opt.step()
    for (k, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, err_msg=k)
    with pytest.raises(ValueError, match=r"SyncBatchNorm\(4\): expected input of shape"):
        dist.SyncBatchNorm(4)(xad.ones(2, 3))
