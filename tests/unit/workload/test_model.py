import torch

from trainprof.workload.config import PRESETS
from trainprof.workload.model import GPT


def test_gpt2_124m_has_the_published_parameter_count():
    with torch.device("meta"):
        m = GPT(PRESETS["gpt2-124m"])
    assert m.num_params() == 124_439_808  # GPT-2 small with tied head (nanoGPT: 124.44M)
    assert m.lm_head.weight is m.wte.weight


def test_sdpa_and_manual_attention_agree():
    torch.manual_seed(0)
    cfg = PRESETS["tiny"]
    a = GPT(cfg, attention="sdpa")
    b = GPT(cfg, attention="manual")
    b.load_state_dict(a.state_dict())
    x = torch.randint(0, 256, (2, 32))
    assert torch.allclose(a(x), b(x), atol=1e-5)


def test_checkpointing_changes_nothing_but_memory():
    torch.manual_seed(0)
    cfg = PRESETS["tiny"]
    a = GPT(cfg)
    b = GPT(cfg, checkpointing=True)
    b.load_state_dict(a.state_dict())
    x = torch.randint(0, 256, (2, 32))
    la, lb = a(x, x), b(x, x)
    la.backward()
    lb.backward()
    assert torch.allclose(la, lb)
    assert torch.allclose(a.blocks[0].mlp.fc.weight.grad, b.blocks[0].mlp.fc.weight.grad, atol=1e-6)


def test_initial_loss_is_near_uniform():
    torch.manual_seed(0)
    x, y = torch.randint(0, 256, (2, 4, 64))  # random targets: nothing to predict yet
    loss = float(GPT(PRESETS["tiny"])(x, y).detach())
    assert abs(loss - torch.log(torch.tensor(256.0)).item()) < 0.2
