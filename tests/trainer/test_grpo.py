"""Specification of the GRPO step: per-role advantages, env-token masking, a real TRL update."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from spade_trainer.errors import TrainerError
from spade_trainer.samples import PolicySample, Role, fit_to_capacity, with_advantages

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def _sample(role: Role, reward: float, group: str, n: int = 3, mask: list[int] | None = None) -> PolicySample:
    return PolicySample(role, [5, 6], [7] * n, [0.0] * n, reward, group, env_mask=mask)


def test_designer_advantages_are_centred_per_skill_without_std_division() -> None:
    out = with_advantages([_sample(Role.designer, r, g) for r, g in [(1.0, "a"), (0.0, "a"), (0.4, "b"), (0.2, "b")]])
    assert [s.advantage for s in out] == pytest.approx([0.5, -0.5, 0.1, -0.1])


def test_agent_advantages_are_normalised_per_environment() -> None:
    out = with_advantages([_sample(Role.agent, r, g) for r, g in [(1.0, "e"), (0.0, "e"), (0.5, "f"), (0.5, "f")]])
    assert [s.advantage for s in out][:2] == pytest.approx([1.0, -1.0], abs=1e-3)
    assert [s.advantage for s in out][2:] == [0.0, 0.0]


def test_roles_never_share_a_group() -> None:
    out = with_advantages([_sample(Role.designer, 1.0, "x"), _sample(Role.agent, 0.0, "x")])
    assert [s.advantage for s in out] == [0.0, 0.0]  # each alone in its own role's group


@given(st.lists(st.floats(-1, 1), min_size=1, max_size=12), st.integers(1, 16))
def test_fitting_to_capacity_pads_with_zero_advantage_or_drops_the_weakest(advs: list[float], cap: int) -> None:
    samples = [PolicySample(Role.agent, [1], [2] * (i + 1), [0.0] * (i + 1), 0.0, "e", advantage=a)
               for i, a in enumerate(advs)]
    out, padded, dropped, _ = fit_to_capacity(samples, cap)
    assert len(out) == cap and padded == max(0, cap - len(advs)) and dropped == max(0, len(advs) - cap)
    assert all(s.advantage == 0.0 for s in out[len(out) - padded:])
    if dropped:
        kept = sorted(abs(s.advantage) for s in out)
        lost = sorted(abs(a) for a in advs)[:dropped]
        assert max(lost) <= min(kept) + 1e-12


def test_a_sample_with_mismatched_mask_is_refused() -> None:
    with pytest.raises(TrainerError, match="env_mask"):
        PolicySample(Role.agent, [1], [2, 3], [0.0, 0.0], 0.0, "e", env_mask=[1])


# --- real TRL updates on a tiny in-process model -------------------------------------------


def _logp(model: Any, prompt: list[int], completion: list[int]) -> float:
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits.log_softmax(-1)[0]
    return sum(logits[len(prompt) - 1 + i, t].item() for i, t in enumerate(completion))


def _train(model: Any, tok: Any, samples: list[PolicySample], tmp: Path, lr: float = 1e-2) -> Any:
    from spade_trainer.grpo import UpdateShape, build_trainer, grpo_config

    shape = UpdateShape.for_samples(len(samples), 2)
    trainer = build_trainer(model, tok, lambda _t: samples, grpo_config(str(tmp), shape, max_steps=1, learning_rate=lr))
    trainer.train()
    return trainer


def test_one_update_raises_the_better_sample_and_lowers_the_worse(tiny_model: Any, tiny_tokenizer: Any,
                                                                   tmp_path: Path) -> None:
    tok = tiny_tokenizer
    p = tok("design a game", add_special_tokens=False)["input_ids"]
    good = tok("class GoodEnv:", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    bad = tok("print(1)", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    agent_p = tok("Guess.", add_special_tokens=False)["input_ids"]
    agent_c = tok("\\boxed{2}", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    samples = [
        PolicySample(Role.designer, p, good, [0.0] * len(good), 0.9, "skill"),
        PolicySample(Role.designer, p, bad, [0.0] * len(bad), 0.1, "skill"),
        PolicySample(Role.agent, agent_p, agent_c, [0.0] * len(agent_c), 1.0, "env", env_mask=[1] * len(agent_c)),
        PolicySample(Role.agent, agent_p, agent_c[:1], [0.0], 0.0, "env", env_mask=[1]),
    ]
    before_good, before_bad = _logp(tiny_model, p, good), _logp(tiny_model, p, bad)
    trainer = _train(tiny_model, tok, samples, tmp_path)
    assert _logp(tiny_model, p, good) > before_good
    assert _logp(tiny_model, p, bad) < before_bad
    assert trainer.state.global_step == 1


def test_environment_tokens_carry_no_gradient(tiny_model: Any, tiny_tokenizer: Any, tmp_path: Path) -> None:
    # the only sample with a non-zero advantage has every completion token masked as environment text
    masked = PolicySample(Role.agent, [5, 6], [7, 8, 9], [0.0] * 3, 1.0, "e", env_mask=[0, 0, 0])
    flat = PolicySample(Role.agent, [5, 6], [7, 8, 9], [0.0] * 3, 0.0, "f", env_mask=[1, 1, 1])
    partner = PolicySample(Role.agent, [5, 6], [7, 8, 10], [0.0] * 3, 0.0, "e", env_mask=[0, 0, 0])
    before = [p.detach().clone() for p in tiny_model.parameters()]
    _train(tiny_model, tiny_tokenizer, [masked, partner, flat, flat], tmp_path)
    assert all(torch.equal(a, b.detach()) for a, b in zip(before, tiny_model.parameters(), strict=True))


# --- the update's weight change ---------------------------------------------------------------


def test_parameter_delta_is_the_l2_norm_of_the_weight_change() -> None:
    from spade_trainer.grpo import ParameterDelta

    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    probe = ParameterDelta()
    probe.attach(opt)
    before = [p.detach().clone() for p in layer.parameters()]
    layer(torch.ones(2, 4)).sum().backward()
    opt.step()
    expected = torch.sqrt(sum(((p.detach() - b) ** 2).sum() for p, b in zip(layer.parameters(), before, strict=True)))
    assert probe.last_l2 == pytest.approx(float(expected), rel=1e-6) and probe.last_l2 > 0
    assert probe.steps == 1
    opt.zero_grad()
    opt.step()  # no gradient: the weights stay put
    assert probe.last_l2 == 0.0 and probe.last_max == 0.0
    probe.detach()
    layer(torch.ones(2, 4)).sum().backward()
    opt.step()
    assert probe.steps == 2  # detached: no longer measuring


def test_parameter_delta_refuses_what_is_not_a_torch_optimizer() -> None:
    from spade_trainer.errors import TrainerError
    from spade_trainer.grpo import ParameterDelta

    with pytest.raises(TrainerError, match="not a torch optimizer"):
        ParameterDelta().attach(object())


def test_the_config_uses_this_transformers_name_for_checkpointing(tmp_path: Path) -> None:
    """Transformers 5 renamed gradient_checkpointing: the old name warned in every run."""
    import dataclasses
    import warnings

    from spade_trainer.grpo import CHECKPOINTING, UpdateShape, grpo_config
    from trl import GRPOConfig

    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    assert CHECKPOINTING in fields
    assert CHECKPOINTING == "activation_checkpointing" or "activation_checkpointing" not in fields
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*checkpointing.* is deprecated", category=FutureWarning)
        config = grpo_config(str(tmp_path), UpdateShape.for_samples(2, 2), max_steps=1)
    assert getattr(config, CHECKPOINTING) is False  # on a CPU: no recomputation
