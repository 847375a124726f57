"""Specification of the GRPO step: per-role advantages, env-token masking, a real update
through the self-play loop's learner, its checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from spade_trainer.errors import TrainerError
from spade_trainer.learner import Learner, ParameterDelta
from spade_trainer.policy_update import UpdateSettings
from spade_trainer.samples import PolicySample, Role, with_advantages


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


def test_a_sample_with_mismatched_mask_is_refused() -> None:
    with pytest.raises(TrainerError, match="env_mask"):
        PolicySample(Role.agent, [1], [2, 3], [0.0, 0.0], 0.0, "e", env_mask=[1])


# --- real updates on a tiny in-process model --------------------------------------------------


def _logp(model: Any, prompt: list[int], completion: list[int]) -> float:
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits.log_softmax(-1)[0]
    return sum(logits[len(prompt) - 1 + i, t].item() for i, t in enumerate(completion))


def _learner(model: Any, tok: Any, lr: float = 1e-2) -> Learner:
    return Learner(model, tok, UpdateSettings(learning_rate=lr, micro_batch=2), cpu=True, seed=0)


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
    learner = _learner(tiny_model, tok)
    report = learner.step(samples)
    assert _logp(tiny_model, p, good) > before_good
    assert _logp(tiny_model, p, bad) < before_bad
    assert learner.steps == 1 and report.fill["samples"] == 4 and report.fill["nonzero_advantages"] == 4
    assert report.param_delta_l2 is not None and report.param_delta_l2 > 0


def test_environment_tokens_carry_no_gradient(tiny_model: Any, tiny_tokenizer: Any, tmp_path: Path) -> None:
    # the only sample with a non-zero advantage has every completion token masked as environment text
    masked = PolicySample(Role.agent, [5, 6], [7, 8, 9], [0.0] * 3, 1.0, "e", env_mask=[0, 0, 0])
    flat = PolicySample(Role.agent, [5, 6], [7, 8, 9], [0.0] * 3, 0.0, "f", env_mask=[1, 1, 1])
    partner = PolicySample(Role.agent, [5, 6], [7, 8, 10], [0.0] * 3, 0.0, "e", env_mask=[0, 0, 0])
    before = [p.detach().clone() for p in tiny_model.parameters()]
    report = _learner(tiny_model, tiny_tokenizer).step([masked, partner, flat, flat])
    assert report.update.skipped  # no trained token carries signal: no forward or backward pass at all
    assert all(torch.equal(a, b.detach()) for a, b in zip(before, tiny_model.parameters(), strict=True))


# --- the update's weight change ---------------------------------------------------------------


def test_parameter_delta_is_the_l2_norm_of_the_weight_change() -> None:
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


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adamw_s_weight_change_read_from_its_state_is_the_change_itself(weight_decay: float) -> None:
    torch.manual_seed(0)
    layer = torch.nn.Linear(6, 5)
    opt = torch.optim.AdamW(layer.parameters(), lr=1e-2, weight_decay=weight_decay)
    probe = ParameterDelta()
    probe.attach(opt)
    assert len(probe._handles) == 1  # no copy of the weights before the step
    for step in range(3):
        before = [p.detach().clone() for p in layer.parameters()]
        opt.zero_grad()
        (layer(torch.randn(4, 6)) ** 2).sum().backward()
        opt.step()
        diff = [(p.detach() - b).double() for p, b in zip(layer.parameters(), before, strict=True)]
        expected = float(torch.sqrt(sum((d**2).sum() for d in diff)))
        assert probe.last_l2 == pytest.approx(expected, rel=1e-4) and probe.last_l2 > 0
        assert probe.last_max == pytest.approx(max(float(d.abs().max()) for d in diff), rel=1e-4)
        assert probe.steps == step + 1


def test_parameter_delta_refuses_what_is_not_a_torch_optimizer() -> None:
    with pytest.raises(TrainerError, match="not a torch optimizer"):
        ParameterDelta().attach(object())


# --- the learner's checkpoint -------------------------------------------------------------------


def _samples(tok: Any) -> list[PolicySample]:
    p = tok("Guess.", add_special_tokens=False)["input_ids"]
    c = tok("\\boxed{2}", add_special_tokens=False)["input_ids"]
    return [PolicySample(Role.agent, p, c, [0.0] * len(c), r, "env") for r in (1.0, 0.0)]


def test_a_checkpoint_restores_weights_optimizer_steps_and_random_state(tiny_tokenizer: Any, tmp_path: Path) -> None:
    from spade_trainer.tiny import build_tiny_model

    tok = tiny_tokenizer
    first = _learner(build_tiny_model(tok), tok, lr=1e-3)
    first.step(_samples(tok))
    first.save(tmp_path / "checkpoint-1")
    after_save = torch.rand(3)
    first.step(_samples(tok))  # the straight run's second step
    straight = {k: v.detach().clone() for k, v in first.model.state_dict().items()}

    torch.manual_seed(123)  # a fresh process's other random state
    second = _learner(build_tiny_model(tok), tok, lr=1e-3)
    second.load(tmp_path / "checkpoint-1")
    assert second.steps == 1
    assert torch.equal(torch.rand(3), after_save)  # the random state continues where it was saved
    second.step(_samples(tok))
    # the same weights only if the optimizer's moments were restored too
    assert all(torch.allclose(v, straight[k], atol=1e-7) for k, v in second.model.state_dict().items())


def test_a_checkpoint_is_a_model_folder_transformers_loads(tiny_tokenizer: Any, tmp_path: Path) -> None:
    from spade_trainer.tiny import build_tiny_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    learner = _learner(build_tiny_model(tiny_tokenizer), tiny_tokenizer)
    learner.step(_samples(tiny_tokenizer))
    learner.save(tmp_path / "checkpoint-1")
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "checkpoint-1")
    AutoTokenizer.from_pretrained(tmp_path / "checkpoint-1")
    mine = learner.model.state_dict()
    assert all(torch.equal(v, mine[k]) for k, v in loaded.state_dict().items())


def test_a_checkpoint_of_another_model_is_refused(tiny_tokenizer: Any, tmp_path: Path) -> None:
    from spade_trainer.errors import CheckpointError
    from spade_trainer.learner import load_model_folder
    from spade_trainer.tiny import build_tiny_model

    learner = _learner(build_tiny_model(tiny_tokenizer), tiny_tokenizer)
    learner.save(tmp_path / "c")
    other = torch.nn.Linear(3, 3)
    with pytest.raises(CheckpointError, match="does not fit this model"):
        load_model_folder(other, tmp_path / "c")
    with pytest.raises(CheckpointError, match="no model.safetensors"):
        load_model_folder(other, tmp_path)
