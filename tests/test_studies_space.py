"""The search spaces of ``pals-study``: every sampled design fits the budget, every sampled configuration is one the
trainer accepts, and a study's settings cannot be changed by a worker that joins it. No training here."""

from __future__ import annotations

import optuna
import pytest

from pals_core.budget.methods import resolve_trunk
from pals_core.budget.solver import Budget
from pals_core.methods.registry import get_method
from pals_core.pricing.config import AdapterConfig, design_label
from pals_core.train.config import TrainConfig
from pals_core.train.params import resolve
from studies.definitions import DEFINITIONS, Context, get_definition
from studies.errors import StudyError
from studies.runner import fixed_adapter, make_context, open_study
from studies.settings import StudySettings
from studies.space import cost_of, feasible_designs, model_shape, usable_methods
from studies.storage import open_storage

TASKS = ["rte", "mrpc"]


@pytest.fixture(scope="module")
def minilm():
    return model_shape(None)


@pytest.mark.parametrize("ratio", [1.02, 1.10, 1.5])
def test_feasible_range_is_the_largest_size_within_the_budget(minilm, ratio):
    budget = Budget(ratio=ratio)
    designs = feasible_designs(minilm, TASKS, budget)
    assert designs, "some design always fits (at least 'shared')"
    assert {c.method for c in designs} <= set(usable_methods())
    for c in designs:
        cfg = AdapterConfig(method=c.method, d_s=c.d_max, location=c.location)
        assert cost_of(minilm, TASKS, cfg, budget).feasible, c
        if c.sized:
            assert c.d_max % c.step == 0 and c.d_max >= c.step
            bigger = c.d_max + c.step
            over = cost_of(minilm, TASKS, AdapterConfig(method=c.method, d_s=bigger, location=c.location), budget)
            # one step more either breaks the budget or passes the cap d_s ≤ d (no bottleneck beyond d)
            assert (not over.feasible) or bigger > minilm.hidden, c
    # a budget too small for any adapter leaves only what costs nothing but heads
    tight = {c.key for c in feasible_designs(minilm, TASKS, Budget(extra=2000))}
    assert tight == {"shared"}


@pytest.mark.parametrize("name", ["design", "design-pareto"])
def test_every_sampled_design_fits_the_budget_and_the_trainer_accepts_it(tmp_path, minilm, name):
    settings = StudySettings(definition=name, tasks=TASKS, budget=Budget(ratio=1.05).as_dict())
    d = get_definition(name)
    ctx = make_context(d, settings, minilm)
    study = optuna.create_study(directions=list(d.directions), sampler=optuna.samplers.RandomSampler(seed=0))
    seen = set()
    limit = settings.budget_obj().extra_limit(  # N_total − N_base ≤ (B − 1)·N_base
        cost_of(minilm, TASKS, AdapterConfig(method="shared")).params_total
        - cost_of(minilm, TASKS, AdapterConfig(method="shared")).params_task_specific
    )
    for _ in range(100):
        trial = study.ask()
        plan = d.suggest(trial, ctx)
        a = plan["adapter"]
        cost = cost_of(minilm, TASKS, a, settings.budget_obj())
        assert cost.feasible and cost.params_task_specific <= limit, (a, cost.params_task_specific, limit)
        if get_method(a.method).attention:
            assert a.d_s % settings.template().heads == 0
        cfg = resolve(TrainConfig(tasks=TASKS, adapter=a, model=None, out=str(tmp_path / "x"), glue_dir=str(tmp_path)))
        assert cfg.adapter == resolve_trunk(a)  # the trainer takes the design unchanged, its trunk stated
        seen.add(design_label(cost.method, cost.location))
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    assert len(seen) >= len(ctx.designs) - 3, "random sampling reaches (nearly) every feasible design"


@pytest.mark.parametrize("name", ["alpha-schedule", "optimizer"])
def test_schedule_and_optimizer_spaces_are_valid_trainer_configs(tmp_path, minilm, name):
    settings = StudySettings(definition=name, tasks=TASKS, steps=60)
    settings.adapter = fixed_adapter(settings, minilm, AdapterConfig())
    d = get_definition(name)
    ctx = make_context(d, settings, minilm)
    assert ctx.fixed_adapter.method == "pals" and ctx.fixed_adapter.d_s % 12 == 0
    assert cost_of(minilm, TASKS, ctx.fixed_adapter, settings.budget_obj()).feasible
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1), direction="maximize")
    for _ in range(40):
        plan = d.suggest(study.ask(), ctx)
        cfg = TrainConfig(tasks=TASKS, out=str(tmp_path / "x"), glue_dir=str(tmp_path), steps=settings.steps, **plan)
        cfg.validate()
        if name == "alpha-schedule":
            assert cfg.sampling == "alpha_schedule" and 0 <= cfg.alpha_start <= 1 and 0 <= cfg.alpha_end <= 1
            assert 1 <= cfg.epoch_steps <= settings.steps
        else:
            assert 1e-5 <= cfg.lr <= 1e-3 and 0 <= cfg.warmup <= 0.3
    assert DEFINITIONS["alpha-schedule"].defaults["max_train_examples"] is None  # N_i must differ for α to matter


@pytest.mark.slow  # ~1 s (a real run, an export or a study): make test, not make test-fast
def test_joining_a_study_keeps_its_settings_and_refuses_contradictions(tmp_path, minilm):
    storage = open_storage(f"sqlite:///{tmp_path / 's.db'}", heartbeat=None)
    d = get_definition("design")
    first = StudySettings(definition="design", tasks=TASKS, steps=30)
    study, used = open_study(storage, "s", d, first, {"tasks", "steps"})
    assert used == first
    # a worker that gives no settings inherits the stored ones
    _, joined = open_study(storage, "s", d, StudySettings(definition="design"), set())
    assert joined.steps == 30 and joined.tasks == TASKS
    with pytest.raises(StudyError, match="steps"):
        open_study(storage, "s", d, StudySettings(definition="design", steps=99), {"steps"})
    with pytest.raises(StudyError, match="'design' study"):
        open_study(storage, "s", get_definition("optimizer"), StudySettings(definition="optimizer"), set())
    with pytest.raises(StudyError, match="no study named"):
        open_study(storage, "other", d, first, set(), create=False)


def test_settings_validation_names_the_field():
    with pytest.raises(ValueError, match="steps"):
        StudySettings(definition="design", steps=0)
    with pytest.raises(ValueError, match="eval_every"):
        StudySettings(definition="design", steps=10, eval_every=20)
    with pytest.raises(ValueError, match="ratio"):
        StudySettings(definition="design", budget={"ratio": 0.5})
    assert StudySettings(definition="design", steps=12).eval_every == 4
    with pytest.raises(ValueError, match="unknown study"):
        get_definition("nope")


def test_context_refuses_a_budget_nothing_fits(minilm):
    s = StudySettings(definition="design", tasks=TASKS, methods=["pals"], budget={"extra": 1000})
    with pytest.raises(StudyError, match="fits the budget"):
        make_context(get_definition("design"), s, minilm)
    one = StudySettings(definition="design", tasks=["rte"], methods=["pals"], budget={"extra": 1000})
    with pytest.raises(StudyError, match=r"for 1 task$"):  # whole words: never "1 tasks"
        make_context(get_definition("design"), one, minilm)
    assert isinstance(make_context(get_definition("design"), StudySettings(definition="design"), minilm), Context)
