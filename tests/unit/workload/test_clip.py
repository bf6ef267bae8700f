"""workload/clip.py's global norm on hand-made layouts, without processes: each simulated
rank's part is taken by `clip_` with torch.distributed.all_reduce replaced by the sum over
the simulated ranks, and every rank's clipped gradients must equal torch's clip_grad_norm_
on the unsplit tensors."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributed.tensor import Partial, Replicate, Shard

from trainprof.workload import clip

W = torch.tensor([[1.0, 2.0], [3.0, 4.0], [0.0, 1.0], [2.0, 0.0]])  # ‖W‖² = 35, rows split over 2 tp ranks
B = torch.tensor([1.0, 2.0])  # replicated: ‖b‖² = 5
E = torch.tensor([3.0, 4.0])  # the tied embedding/head: ‖e‖² = 25


def _param(grad: torch.Tensor, placement=None) -> torch.nn.Parameter:
    p = torch.nn.Parameter(torch.zeros_like(grad))
    p.grad = grad.clone()
    if placement is not None:
        p.grad.placements = (placement,)  # what clip.is_sharded reads of a DTensor gradient
    return p


class _World:
    """Simulated ranks: `clip_` on each, the all_reduce a sum over all of them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parts: list[float] = []
        self.total: float | None = None
        monkeypatch.setattr(torch.distributed, "all_reduce", self._all_reduce)

    def _all_reduce(self, t: torch.Tensor) -> None:
        if self.total is None:
            self.parts.append(float(t))
            raise _Gathered
        t.fill_(self.total)

    def run(self, ranks: list[dict], max_norm: float) -> float:
        for r in ranks:  # first pass: each rank's part of the sum
            with pytest.raises(_Gathered):
                clip.clip_(**r, max_norm=max_norm, device=torch.device("cpu"))
        self.total = sum(self.parts)
        norms = {float(clip.clip_(**r, max_norm=max_norm, device=torch.device("cpu"))) for r in ranks}
        assert len(norms) == 1  # every rank the same norm
        return norms.pop()


class _Gathered(Exception):
    pass


def _tp_rank(i: int, dp: int = 0) -> dict:
    return {"params": [_param(W[2 * i:2 * i + 2], Shard(0)), _param(B, Replicate()), _param(E)],
            "tied": None, "tp_index": i, "dp_index": dp}


def test_tp_shards_summed_replicas_once_and_dp_replicas_not_summed(monkeypatch):
    ranks = [_tp_rank(t, d) for d in range(2) for t in range(2)]  # dp 2 × tp 2
    norm = _World(monkeypatch).run(ranks, max_norm=1.0)
    assert norm == pytest.approx(math.sqrt(35 + 5 + 25))  # not 4·(5 + 25) + 2·35
    full = [_param(W), _param(B), _param(E)]
    torch.nn.utils.clip_grad_norm_(full, 1.0)
    for r in ranks:
        t = r["tp_index"]
        got = [p.grad for p in r["params"]]
        assert torch.equal(got[0], full[0].grad[2 * t:2 * t + 2])
        assert torch.equal(got[1], full[1].grad) and torch.equal(got[2], full[2].grad)


def test_tied_embedding_counted_once_over_the_pipeline(monkeypatch):
    first = {"params": [_param(E), _param(W[:2])], "tied": None, "tp_index": 0, "dp_index": 0}
    e_copy = _param(E)  # the last stage's copy, holding the summed gradient
    last = {"params": [_param(W[2:]), e_copy], "tied": e_copy, "tp_index": 0, "dp_index": 0}
    norm = _World(monkeypatch).run([first, last], max_norm=100.0)
    assert norm == pytest.approx(math.sqrt(25 + 35))
    assert torch.equal(e_copy.grad, E)  # 100 > √60: no clipping (coefficient clamped to 1)


def test_coefficient_is_clip_grad_norms():
    assert float(clip.coefficient(torch.tensor(10.0), 1.0)) == pytest.approx(1 / (10 + 1e-6), rel=1e-7)
    assert float(clip.coefficient(torch.tensor(0.5), 1.0)) == 1.0


def test_a_partial_gradient_is_refused():
    assert clip.is_sharded(_param(W, Shard(1)).grad) and not clip.is_sharded(_param(B, Replicate()).grad)
    with pytest.raises(ValueError, match="Partial"):
        clip.is_sharded(_param(W, Partial()).grad)
