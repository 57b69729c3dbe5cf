"""Chapter 08: the optimizers match torch.optim, keep the state they should, validate their
hyper-parameters; the loss-curve panel (exercises: test_exercises_optim.py)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from lectorch import optim
from lectorch.models import Cruncher, cruncher_num_parameters
from lectorch.widgets.optim import loss_curves_panel, render_loss_curves

MATCHING = [
    ("sgd", dict(lr=0.05)),
    ("momentum", dict(lr=0.02, momentum=0.9)),
    ("adagrad", dict(lr=0.05)),
    ("rmsprop", dict(lr=0.01, alpha=0.9)),
    ("adam", dict(lr=0.01)),
    ("adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    ("adamw", dict(lr=0.01, weight_decay=0.1)),
]


@pytest.mark.parametrize("name, hyper", MATCHING, ids=[f"{n}-{i}" for i, (n, _) in enumerate(MATCHING)])
def test_matches_torch_optim(name, hyper):
    """Same model, data and seed, 30 steps: parameters allclose to torch.optim's own version."""
    _, ours = optim.train_cruncher(name, steps=30, **hyper)
    _, ref = optim.train_cruncher(lambda ps, **kw: optim.torch_optimizer(name, ps, **kw), steps=30, **hyper)
    _, start = optim.train_cruncher("sgd", steps=1, lr=1e-12)
    for a, b, s in zip(ours.parameters(), ref.parameters(), start.parameters()):
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-7)
        assert not torch.allclose(a, s, atol=1e-4), "the run must actually move the parameters"


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(sorted(optim.OPTIMIZERS)), lr=st.floats(1e-4, 3e-2), seed=st.integers(0, 100))
def test_matches_torch_for_random_settings(name, lr, seed):
    assert optim.compare_with_torch(name, steps=5, seed=seed, lr=lr) <= 1e-6


def test_torch_optimizer_maps_to_the_right_classes():
    p = [nn.Parameter(torch.zeros(2))]
    assert isinstance(optim.torch_optimizer("sgd", p), torch.optim.SGD)
    assert optim.torch_optimizer("momentum", p).defaults["momentum"] == 0.9
    assert isinstance(optim.torch_optimizer("adagrad", p), torch.optim.Adagrad)
    assert optim.torch_optimizer("rmsprop", p, alpha=0.5).defaults["alpha"] == 0.5
    assert type(optim.torch_optimizer("adam", p)) is torch.optim.Adam
    assert optim.torch_optimizer("adamw", p, weight_decay=0.3).defaults["weight_decay"] == 0.3
    with pytest.raises(TypeError, match="weight_decay"):
        optim.torch_optimizer("adam", p, weight_decay=0.1)


def test_adamw_decay_is_decoupled():
    """With a zero gradient Adam's update is 0, AdamW still shrinks the weights by lr·wd."""
    p = nn.Parameter(torch.ones(3))
    opt = optim.AdamW([p], lr=0.1, weight_decay=0.5)
    p.grad = torch.zeros(3)
    opt.step()
    assert torch.allclose(p, torch.full((3,), 0.95))


def test_closure_is_called_and_its_loss_returned():
    model = Cruncher(4, 1)
    x, y = torch.ones(3, 4), torch.zeros(3)
    for name in optim.OPTIMIZERS:
        opt = optim.make_optimizer(name, model.parameters(), lr=0.01)

        def closure():
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss

        loss = opt.step(closure)
        assert isinstance(loss, torch.Tensor) and loss.requires_grad
        assert opt.step() is None


def test_param_groups_have_their_own_hyperparameters():
    a, b = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad = b.grad = torch.ones(2)
    opt.step()
    assert torch.allclose(a, torch.full((2,), 0.9)) and torch.allclose(b, torch.full((2,), 0.5))


def test_parameters_without_gradients_are_skipped():
    a, b = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = torch.ones(2)
    opt.step()
    assert torch.equal(b, torch.ones(2)) and b not in opt.state


@pytest.mark.parametrize("name", sorted(optim.OPTIMIZERS))
def test_state_is_k_times_the_parameters(name):
    model = Cruncher(32, 3)
    opt = optim.make_optimizer(name, model.parameters(), lr=1e-3)
    nn.functional.mse_loss(model(torch.randn(8, 32)), torch.zeros(8)).backward()
    opt.step()
    param_bytes = optim.parameter_bytes(model)
    assert param_bytes == 4 * cruncher_num_parameters(32, 3)
    assert optim.state_bytes(opt) == optim.STATE_TENSORS[name] * param_bytes
    assert optim.state_bytes(opt, include_scalars=False) == optim.STATE_TENSORS[name] * param_bytes


def test_torch_adam_also_keeps_a_step_tensor_per_parameter():
    model = Cruncher(32, 3)
    opt = torch.optim.Adam(model.parameters())
    nn.functional.mse_loss(model(torch.randn(8, 32)), torch.zeros(8)).backward()
    opt.step()
    moments = optim.state_bytes(opt, include_scalars=False)
    assert moments == 2 * optim.parameter_bytes(model)
    assert optim.state_bytes(opt) - moments == 4 * 4  # four parameter tensors, a float32 step each


def test_zero_grad_set_to_none_frees_gradients():
    model = Cruncher(16, 2)
    opt = optim.SGD(model.parameters(), lr=0.1)
    nn.functional.mse_loss(model(torch.randn(4, 16)), torch.zeros(4)).backward()
    assert optim.gradient_bytes(model) == optim.parameter_bytes(model)
    opt.zero_grad(set_to_none=False)
    assert optim.gradient_bytes(model) == optim.parameter_bytes(model)  # zeros, still allocated
    opt.zero_grad(set_to_none=True)
    assert optim.gradient_bytes(model) == 0 and all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("name, bad, err, match", [
    ("sgd", dict(lr=0), ValueError, "lr"),
    ("sgd", dict(lr=-0.1), ValueError, "lr"),
    ("sgd", dict(lr="0.1"), TypeError, "lr"),
    ("momentum", dict(momentum=1.0), ValueError, "momentum"),
    ("momentum", dict(momentum=-0.1), ValueError, "momentum"),
    ("rmsprop", dict(alpha=1.5), ValueError, "alpha"),
    ("adagrad", dict(eps=0), ValueError, "eps"),
    ("adam", dict(betas=(0.9, 1.0)), ValueError, r"betas\[1\]"),
    ("adam", dict(betas=(1.2, 0.9)), ValueError, r"betas\[0\]"),
    ("adam", dict(betas=0.9), TypeError, "betas"),
    ("adamw", dict(weight_decay=-1), ValueError, "weight_decay"),
    ("adam", dict(weight_decay=0.1), TypeError, "weight_decay"),
])
def test_bad_hyperparameters(name, bad, err, match):
    with pytest.raises(err, match=match):
        optim.make_optimizer(name, [nn.Parameter(torch.zeros(2))], **bad)


def test_bad_group_hyperparameters_are_caught_too():
    opt = optim.SGD([nn.Parameter(torch.zeros(2))], lr=0.1)
    with pytest.raises(ValueError, match="lr"):
        opt.add_param_group({"params": [nn.Parameter(torch.zeros(2))], "lr": -1.0})


def test_unknown_optimizer_names():
    with pytest.raises(ValueError, match="adamw"):
        optim.make_optimizer("adamw2", [nn.Parameter(torch.zeros(1))])
    with pytest.raises(ValueError, match="Known"):
        optim.check_optimizer_name("lion")
    with pytest.raises(TypeError, match="optimizer"):
        optim.check_optimizer_name(torch.optim.Adam)
    assert optim.check_optimizer_name(" RMSProp ") == "rmsprop"


def test_bad_sizes_and_arguments():
    with pytest.raises(ValueError, match="steps"):
        optim.train_cruncher("sgd", steps=0)
    with pytest.raises(ValueError, match="dim"):
        optim.regression_problem(dim=0)
    with pytest.raises(ValueError, match="start"):
        optim.trajectory("sgd", optim.rosenbrock, (1.0, 2.0, 3.0), lr=0.1)
    with pytest.raises(TypeError, match="optimizer"):
        optim.state_bytes("adam")


def test_trajectories_reach_the_quadratic_minimum_and_autograd_agrees():
    path = optim.trajectory("adam", optim.ill_conditioned_quadratic, (-4.0, 1.0), steps=300, lr=0.1)
    assert optim.ill_conditioned_quadratic(path[-1]).item() < 1e-4
    slow = optim.trajectory("adam", lambda xy: optim.ill_conditioned_quadratic(xy) * 1, (-4.0, 1.0), steps=20, lr=0.1)
    fast = optim.trajectory("adam", optim.ill_conditioned_quadratic, (-4.0, 1.0), steps=20, lr=0.1)
    assert torch.allclose(slow, fast)
    slow = optim.trajectory("sgd", lambda xy: optim.rosenbrock(xy) * 1, (-1.2, 1.0), steps=20, lr=1e-3)
    fast = optim.trajectory("sgd", optim.rosenbrock, (-1.2, 1.0), steps=20, lr=1e-3)
    assert torch.allclose(slow, fast)


def test_sgd_diverges_above_two_over_the_largest_curvature():
    """On (x² + 25y²)/2 plain SGD is stable only for lr < 2/25."""
    ok = optim.trajectory("sgd", optim.ill_conditioned_quadratic, (1.0, 1.0), steps=60, lr=0.079)
    bad = optim.trajectory("sgd", optim.ill_conditioned_quadratic, (1.0, 1.0), steps=60, lr=0.081)
    assert abs(ok[-1, 1]) < 1 < abs(bad[-1, 1])


# --- the loss-curve panel -------------------------------------------------------------------------
def test_loss_curves_panel_reacts():
    panel = loss_curves_panel("adam", 1e-2)
    assert "adam: loss" in panel.result.value and "sgd (same lr)" in panel.result.value
    panel.controls["optimizer"].value = "sgd"
    assert "sgd: loss" in panel.result.value and "same lr" not in panel.result.value
    panel.controls["lr"].value = 1.0
    assert "diverged" in panel.result.value


def test_loss_curves_bad_input():
    with pytest.raises(ValueError, match="optimizer"):
        loss_curves_panel("nesterov")
    with pytest.raises(ValueError, match="lr"):
        render_loss_curves("adam", -1.0)


def test_training_lowers_the_loss():
    for name, lr in [("sgd", 0.1), ("momentum", 0.05), ("adagrad", 0.05), ("rmsprop", 0.005), ("adam", 0.01),
                     ("adamw", 0.01)]:
        losses, _ = optim.train_cruncher(name, steps=60, lr=lr)
        assert losses[-1] < 0.2 * losses[0], name


def test_small_runs_leave_the_thread_count_alone():
    from lectorch.step_memory import measure_step_memory

    threads = torch.get_num_threads()
    optim.train_cruncher("adam", steps=2, lr=0.01)
    optim.trajectory("sgd", optim.rosenbrock, (0.0, 0.0), steps=2, lr=1e-3)
    measure_step_memory(8, 1, 4)
    assert torch.get_num_threads() == threads
