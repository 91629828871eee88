"""The learning-rate schedule is transformers' linear warm-up and decay, value for value and state for state."""

from __future__ import annotations

import torch
from transformers import get_linear_schedule_with_warmup

from pals_core.train.schedule import linear_schedule


def _lrs(make, steps: int) -> list[float]:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    sched = make(opt)
    out = []
    for _ in range(steps + 2):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_the_schedule_equals_transformers_linear_warmup_and_decay():
    for warmup, total in ((0, 10), (3, 10), (10, 10), (1, 1), (4, 7)):
        ours = _lrs(lambda o, w=warmup, n=total: linear_schedule(o, w, n), total)
        theirs = _lrs(lambda o, w=warmup, n=total: get_linear_schedule_with_warmup(o, w, n), total)
        assert ours == theirs, (warmup, total)


def test_a_scheduler_state_saved_by_either_resumes_in_the_other():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    theirs = get_linear_schedule_with_warmup(opt, 2, 8)
    for _ in range(5):
        opt.step()
        theirs.step()
    opt2 = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    ours = linear_schedule(opt2, 2, 8)
    ours.load_state_dict(theirs.state_dict())
    opt2.step()
    ours.step()
    opt.step()
    theirs.step()
    assert ours.get_last_lr() == theirs.get_last_lr() and ours.state_dict().keys() == theirs.state_dict().keys()
