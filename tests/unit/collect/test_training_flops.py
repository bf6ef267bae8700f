"""The FLOPs `trainprof profile` counts on a user's step: training work only, RNN kernels
priced, checkpointing's recomputation apart (collect/flops.py; issue #37)."""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

from trainprof.collect.flops import TrainingFlopCounter, _cudnn_rnn_forward, counted


def _count(fn) -> TrainingFlopCounter:  # noqa: ANN001
    c = TrainingFlopCounter()
    with c:
        fn()
    return c


def test_an_lstm_on_cpu_is_priced_by_hand():
    torch.manual_seed(0)
    lstm, head = torch.nn.LSTM(32, 48, num_layers=2), torch.nn.Linear(48, 10)
    x = torch.randn(16, 8, 32)  # (T, B, I): 128 rows
    c = _count(lambda: head(lstm(x)[0]).sum().backward())
    # per layer 2·rows·(W_ih + W_hh): layer 0 2·128·(192·32 + 192·48) = 3,932,160,
    # layer 1 2·128·(192·48 + 192·48) = 4,718,592; head 2·128·48·10 = 122,880
    forward = 3_932_160 + 4_718_592 + 122_880
    assert c.parts["forward"] == forward == 8_773_632
    assert c.parts["backward"] == 2 * forward  # data and weight gradients of each, as a matmul's
    total, per_op = counted(c)
    assert total == 3 * forward and per_op["aten.mkldnn_rnn_layer"] == 3_932_160 + 4_718_592


def test_cudnn_rnn_formula_sums_every_layer_and_direction():
    # a bidirectional 1-layer GRU, I=16, H=8: per direction W_ih (24, 16), W_hh (24, 8), biases (24,)
    weights = [[24, 16], [24, 8], [24], [24]] * 2
    assert _cudnn_rnn_forward([10, 4, 16], weights) == 2 * 40 * 2 * (24 * 16 + 24 * 8)


def test_work_without_gradients_is_left_out_and_stated():
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 64)
    x = torch.randn(8, 64)

    def step() -> None:
        model(x).sum().backward()
        with torch.no_grad():  # an evaluation or a generation loop inside the step
            for _ in range(5):
                model(x)
        with torch.inference_mode():
            model(x)

    c = _count(step)
    one = 2 * 8 * 64 * 64  # 65,536
    assert c.parts == {"forward": one, "backward": one, "recompute": 0, "excluded": 6 * one}
    assert counted(c)[0] == 2 * one  # x needs no grad: the backward is the weight gradient only


class _Checkpointed(torch.nn.Module):
    """A model that checkpoints its block, as a GPT checkpoints each Block inside its forward."""

    def __init__(self, reentrant: bool) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32))
        self.reentrant = reentrant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return checkpoint(self.block, x, use_reentrant=self.reentrant)


def test_checkpoint_recomputation_is_hardware_work_not_model_work():
    torch.manual_seed(0)
    x = torch.randn(4, 32, requires_grad=True)
    one = 2 * 4 * 32 * 32  # a Linear's forward
    # reentrant: its forward runs without gradients inside the model's training call (still model work),
    # and the whole block runs again in backward; non-reentrant stops early, once the tensors backward
    # needs are back (torch's default: the last Linear's output is never needed, so it is not re-run)
    for reentrant, recomputed in ((True, 2 * one), (False, one)):
        model = _Checkpointed(reentrant)
        c = _count(lambda model=model: model(x).sum().backward())
        assert c.parts["forward"] == 2 * one and c.parts["recompute"] == recomputed, (reentrant, c.parts)
        assert c.parts["backward"] == 4 * one and c.parts["excluded"] == 0


class _Double(torch.autograd.Function):
    """A custom op: autograd runs its forward without gradients."""

    @staticmethod
    def forward(ctx, x, w):  # noqa: ANN001, ANN205
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, g):  # noqa: ANN001, ANN205
        x, w = ctx.saved_tensors
        return g @ w.T, x.T @ g


class _WithCustomOp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Double.apply(x, self.w)


def test_a_custom_functions_forward_inside_the_model_is_training_work():
    model, x = _WithCustomOp(), torch.randn(8, 16)
    one = 2 * 8 * 16 * 16
    c = _count(lambda: model(x).sum().backward())
    assert c.parts["forward"] == one and c.parts["excluded"] == 0 and c.parts["backward"] == 2 * one


    def infer() -> None:  # the same model called for inference
        with torch.no_grad():
            model(x)

    c = _count(infer)
    assert c.parts["forward"] == 0 and c.parts["excluded"] == one and torch.is_grad_enabled()
