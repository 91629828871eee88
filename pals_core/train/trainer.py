"""Multi-task training of one ``MultiTaskBert`` on several GLUE tasks (Stickland & Murray 2019, Section 4).

Each step draws a task from the sampler (p_i ∝ N_i^α, ``pals_core.data.samplers``), takes the next
``batch_size`` examples of that task, and makes one AdamW step on that task's loss (its kind's:
``pals_core/kinds/<kind>/module.py``):

    θ ← AdamW(θ, ∇L_t(θ)),  lr_s = lr · min(s / (w·S), (S − s) / (S − w·S))   (warm-up w = 10 %, S steps)

MT-Uncertainty (CA-MTL) gives one mixed batch instead: parts (t, rows_t), each through its task's head,
and one step on L = (1/|parts|) Σ_t mean(loss_t(rows_t)) — the mean of the per-task mean losses, as the
released code. ``task_steps`` counts, per task, the steps whose batch held rows of it.

AdamW has no weight decay on biases, LayerNorm parameters and IA³'s scale vectors
(``MultiTaskModel.parameter_groups``); the global gradient norm is clipped.
Every ``eval_every`` steps all dev sets are scored (``evaluate``), a line goes to metrics.jsonl and a
checkpoint is written; the best dev average is kept. Runs on CPU, on CUDA with bf16 autocast, and on
several GPUs under ``accelerate launch`` (Accelerate's DDP; only the main process writes files).

Nothing is lost: SIGTERM (or Ctrl-C) finishes the current step, checkpoints and marks the run
"stopped"; after a SIGKILL ``resume=True`` continues from the last checkpoint — model, optimizer,
scheduler, RNGs, data order, step — and reaches the same numbers as an uninterrupted run.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..atomic import atomic_write_json, read_json
from ..base_model import model_shape
from ..checkpoint import CheckpointDamaged, Checkpoints
from ..data.load import (
    TaskSplits,
    check_described,
    check_tokenizer,
    load_tasks,
    load_tokenizer,
    tokenizer_path,
)
from ..data.metrics import dev_average, main_score, majority_scores
from ..data.samplers import make_sampler
from ..data.task_sampler import TaskSampler
from ..data.windows import window_stride
from ..data.words import check_words
from ..forward import EvalInterrupted
from ..kinds import get_kind
from ..model import MultiTaskModel
from .config import TrainConfig, data_differences
from .evaluate import evaluate
from .extend import (
    added_task_names,
    base_config,
    check_base_precision,
    load_base_weights,
    train_only,
    with_base_tasks,
)
from .lock import RunLock
from .machine_report import measured, predicted
from .params import is_resolved, read_run_rows, resolve, run_params, run_tasks, take_rows
from .rundir import RunDir, eta_s
from .schedule import linear_schedule
from .streams import TaskStream, process_slice

OnEval = Callable[[int, dict, float], None]
PROGRESS_EVERY_S = 5.0
LOSS_LINE_EVERY_S = 30.0  # between evaluations, a line of the running train loss at most this often


class TrainingDiverged(RuntimeError):
    """The training loss became NaN or infinite; the run is marked "failed" and no checkpoint of it is written."""

    def __init__(self, step: int | None, out: str) -> None:
        where = f"at step {step}" if step is not None else "before its last checkpoint"
        super().__init__(
            f"diverged {where}: the training loss is not finite (lower --lr); "
            f"the run in {out} keeps its last finite checkpoint"
        )
        self.step = step


class TrainingStopped(RuntimeError):
    """The run was stopped by a signal; its last checkpoint is on disk (``resume=True`` continues)."""

    def __init__(self, step: int, out: str) -> None:
        super().__init__(f"stopped at step {step}; continue with --resume --out {out}")
        self.step, self.out = step, out


# ------------------------------------------------------------------------------------ preparation


def _config_differences(saved: TrainConfig, new: TrainConfig) -> list[str]:
    a, b = saved.resumable_view(), new.resumable_view()
    return [f"{k}: run has {a.get(k)!r}, given {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def make_accelerator(cfg: TrainConfig):
    """Accelerate's ``Accelerator`` for ``cfg.device`` and ``cfg.mixed_precision`` (auto: bf16 autocast on a CUDA
    device that has it, none on CPU): it places the model, wraps its forward in autocast and scales nothing (bf16)."""
    from accelerate import Accelerator, DistributedDataParallelKwargs
    from accelerate.state import AcceleratorState

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if not distributed:  # in-process callers (studies) may train several runs with different settings
        AcceleratorState._reset_state(reset_partial_state=True)
    cpu, mp = _on_cpu(cfg), effective_precision(cfg)
    return Accelerator(
        cpu=cpu, mixed_precision=mp, kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)]
    )


def _on_cpu(cfg: TrainConfig) -> bool:
    import torch

    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' asked for, but torch sees no CUDA device")
    return cfg.device == "cpu" or (cfg.device == "auto" and not torch.cuda.is_available())


def effective_precision(cfg: TrainConfig) -> str:
    """The mixed precision the run computes in on this machine: ``auto`` is bf16 on a CUDA device that has it, else
    no (what ``summary.json`` records as ``mixed_precision``)."""
    import torch

    if cfg.mixed_precision != "auto":
        return cfg.mixed_precision
    return "bf16" if (not _on_cpu(cfg) and torch.cuda.is_bf16_supported()) else "no"


def make_optimizer(model, cfg: TrainConfig):
    """The run's AdamW (no weight decay on biases, LayerNorms, IA³'s scales: ``parameter_groups``), built on the model
    before ``Accelerator.prepare`` moves it (its parameters stay the same tensors, so the optimizer follows them).

    Fused: one kernel over all tensors instead of a Python loop of ~10 ops per tensor (torch's CPU default) — the
    same update up to floating-point rounding; 15 % of a MiniLM CPU step at batch 16 was the for-loop AdamW
    (BENCHMARKS.md, benchmarks/bench_cpu_step.py); on CUDA the fused kernel is torch's fastest too."""
    import torch

    groups = model.parameter_groups(cfg.weight_decay)
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.adam_eps, fused=True)


@contextmanager
def _stop_signals(flag: threading.Event) -> Iterator[None]:
    """SIGTERM / SIGINT set ``flag`` (the loop stops after the current step); a second SIGINT
    interrupts at once. Only in the main thread (signals cannot be caught elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}

    def handler(signum, frame):
        if signum == signal.SIGINT and flag.is_set():
            raise KeyboardInterrupt
        flag.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)


# ----------------------------------------------------------------------------------------- the run


@dataclass
class _State:
    step: int = 0
    evaluated_step: int = 0
    loss_sum: float = 0.0
    loss_n: int = 0
    best: dict | None = None  # {"step", "average", "scores"}
    last: dict | None = None  # {"step", "average", "scores"} of the latest evaluation
    elapsed_s: float = 0.0
    train_time_s: float = 0.0  # wall time in training steps (sampling, batches, forward/backward, optimiser)
    train_cpu_s: float = 0.0  # the same in process CPU time (steadier on a shared machine)
    eval_time_s: float = 0.0
    task_steps: dict = field(default_factory=dict)


class _Run:
    def __init__(
        self, cfg: TrainConfig, run: RunDir, progress: bool, on_eval: OnEval | None, rows: dict[str, TaskSplits]
    ) -> None:
        import torch

        self.cfg, self.run, self.show_progress, self.on_eval = cfg, run, progress, on_eval
        self.rows = rows  # every task's rows as ``check_data`` read them: tokenised by the set-up, then let go
        self.stop_flag = threading.Event()
        self.started = time.monotonic()
        self.trained = added_task_names(cfg)  # the tasks this run trains: all, or those it adds (--from)
        self.st = _State(task_steps={t: 0 for t in self.trained})
        self.session_start_step = 0
        self._last_progress = 0.0
        self.in_on_eval = False  # an exception raised by on_eval stops (not fails) the run
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
        self.acc = make_accelerator(cfg)
        if self.acc.device.type == "cuda":  # summary.json's peak is this run's, not an earlier one's in this process
            torch.cuda.reset_peak_memory_stats(self.acc.device)
        self.main = self.acc.is_main_process
        self.rank, self.world = self.acc.process_index, self.acc.num_processes

    # --- setup --------------------------------------------------------------------------------------

    def setup(self, resume: bool) -> None:
        try:
            self._setup(resume)
        except OSError as e:  # weights, tokenizer or data that cannot be read, a cache folder that cannot be written
            where = f" ({e.filename})" if getattr(e, "filename", None) else ""
            raise ValueError(f"cannot set up the run: {' '.join((e.strerror or str(e)).split())}{where}") from None

    def _setup(self, resume: bool) -> None:
        import torch

        cfg = self.cfg
        self.tokenizer = load_tokenizer(tokenizer_path(cfg.model))
        self.records = {r.name: r for r in cfg.records()}
        rows, self.rows = self.rows, {}
        self.data = load_tasks(
            [self.records[t] for t in self.trained],
            self.tokenizer,
            glue_dir=cfg.glue_dir,
            source=cfg.glue_source,
            max_len=cfg.max_len,
            max_train=cfg.max_train_examples,
            max_eval=cfg.max_eval_examples,
            cache_dir=cfg.cache_dir,
            seed=cfg.seed,
            rows=rows,
            stride=window_stride(vars(cfg)),
        )
        # --from: the base run's tasks' dev sets, read as the base run read them, measured again at the end
        self.base_dev = {}
        if cfg.from_run:
            base = base_config(cfg.from_run)
            old = [self.records[t] for t in cfg.tasks if t not in self.trained]
            self.base_dev = load_tasks(
                old,
                self.tokenizer,
                glue_dir=cfg.glue_dir,
                source=cfg.glue_source,
                max_len=cfg.max_len,
                max_eval=base.get("max_eval_examples"),
                train=False,
                cache_dir=cfg.cache_dir,
                seed=base.get("seed", cfg.seed),
                rows=rows,
                stride=window_stride(base),
            )
        rows.clear()  # the texts: tokenised now (the rows' dict is the caller's too: emptied, they are let go)
        self.scales = self._scales(resume)
        sizes = {t: len(self.data[t].train) for t in self.trained}
        self.sampler: TaskSampler = make_sampler(
            cfg.sampling,
            sizes,
            cfg.steps,
            cfg.epoch_steps,
            alpha_start=cfg.alpha_start,
            alpha_end=cfg.alpha_end,
            alpha_shape=cfg.alpha_shape,
        )
        self.rng = np.random.default_rng([cfg.seed, 1])
        self.streams = {t: TaskStream(sizes[t], cfg.seed, i) for i, t in enumerate(self.trained)}
        torch.manual_seed(cfg.seed)
        tasks = run_tasks(cfg)
        for t in tasks:  # the file read now must have the labels the run was priced with
            if t.name in self.data and self.data[t.name].num_labels != t.num_labels:
                raise ValueError(
                    f"task {t.name!r}: its data now has {self.data[t.name].num_labels} labels, "
                    f"the run was set up for {t.num_labels}"
                )
        model = MultiTaskModel.from_base(
            cfg.model,
            cfg.adapter,
            {t.name: t.num_labels for t in tasks},
            per_word=[t.name for t in tasks if get_kind(t.kind).per_word],
            per_candidate=[t.name for t in tasks if get_kind(t.kind).per_candidate],
            spans=[t.name for t in tasks if get_kind(t.kind).span_head],
        )
        if cfg.from_run:  # the base run's trunk and tasks, frozen: only the added tasks' parts train
            load_base_weights(model, cfg.from_run)
            train_only(model, self.trained)
        shape = model_shape(cfg.model)
        self.params = run_params(model, shape, tasks, cfg.adapter, self.trained if cfg.from_run else None)
        self.predicted = self._predict(shape, model)
        optimizer = make_optimizer(model, cfg)
        self.scheduler = linear_schedule(optimizer, int(round(cfg.warmup * cfg.steps)), cfg.steps)
        self.model, self.optimizer = self.acc.prepare(model, optimizer)
        self.net = self.acc.unwrap_model(self.model)
        self.trainable = [p for p in self.net.parameters() if p.requires_grad]
        self.ckpt = Checkpoints(self.run.checkpoints)
        if resume:
            self._restore()

    def _scales(self, resume: bool) -> dict[str, dict]:
        """Each task's target scale (``Kind.scale``: a regression's mean and std of its train rows), kept in
        config.json's ``data.<task>.scale`` for evaluation, ``pals-predict`` and the exports. A resumed run and a base
        run's task keep the scale they were trained with (none: trained on the targets as read)."""
        saved = self.run.read_config().get("data") or {} if resume else {}
        out = {}
        for t in self.cfg.tasks:
            if t in self.trained and not resume:
                scale = get_kind(self.records[t].kind).scale(self.data[t].train.gold)
            else:
                scale = ((saved if t in self.trained else self.cfg.data or {}).get(t) or {}).get("scale")
            if scale:
                out[t] = scale
        if not resume and out:
            for t, scale in out.items():
                self.cfg.data[t]["scale"] = scale
            if self.main and self.run.config.exists():  # a run folder (the in-process steps of a test have none)
                atomic_write_json(self.run.config, self.cfg.as_dict())  # what ``_train_in`` wrote, with the scales
        return out

    def _restore(self) -> None:
        folder = self.ckpt.latest()
        if folder is None:  # killed before the first checkpoint: start again
            if self.main:
                self.run.truncate_metrics(0)
            return
        state = self.ckpt.load(folder, self.net, self.optimizer, self.scheduler)
        try:
            self._restore_state(state)
        except (KeyError, TypeError, ValueError) as e:
            raise CheckpointDamaged(
                f"checkpoint {folder} holds an unreadable state.json ({type(e).__name__}: {e}); "
                "the run cannot continue from it: start a new one (another --out)"
            ) from None

    def _restore_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state["sampler_rng"]
        for t, s in state["streams"].items():
            self.streams[t].load_state_dict(s)
        st = self.st
        st.step, st.evaluated_step = int(state["step"]), int(state["evaluated_step"])
        st.loss_sum, st.loss_n = float(state["loss_sum"]), int(state["loss_n"])
        st.best, st.last = state["best"], state["last"]
        st.elapsed_s, st.train_time_s, st.eval_time_s = state["elapsed_s"], state["train_time_s"], state["eval_time_s"]
        st.train_cpu_s = state.get("train_cpu_s", 0.0)
        st.task_steps = {t: int(state["task_steps"].get(t, 0)) for t in self.trained}
        self.session_start_step = st.step
        if self.main:
            self.run.truncate_metrics(st.step)

    # --- bookkeeping --------------------------------------------------------------------------------

    def elapsed(self) -> float:
        return self.st.elapsed_s + (time.monotonic() - self.started)

    def write_progress(self, status: str, error: str | None = None, force: bool = True) -> None:
        if not self.main:
            return
        now = time.monotonic()
        if not force and now - self._last_progress < PROGRESS_EVERY_S:
            return
        self._last_progress = now
        st = self.st
        done = st.step - self.session_start_step
        eta = None
        if status == "running":
            eta = eta_s(now - self.started, done, self.cfg.steps - st.step)
        elif status == "finished":
            eta = 0.0
        last = st.last or {}
        scores = {t: main_score(self.records[t], s) for t, s in (last.get("scores") or {}).items()}
        self.run.write_progress(
            status=status,
            step=st.step,
            total=self.cfg.steps,
            elapsed_s=self.elapsed(),
            eta_s=eta,
            scores=scores,
            average=last.get("average"),
            best_average=(st.best or {}).get("average"),
            error=error,
            params=getattr(self, "params", None),  # set once the model is built (a set-up failure has none)
        )

    def checkpoint(self) -> None:
        self.acc.wait_for_everyone()
        if self.main:
            st = self.st
            self.ckpt.save(
                st.step,
                self.net,
                self.optimizer,
                self.scheduler,
                {
                    "evaluated_step": st.evaluated_step,
                    "sampler_rng": self.rng.bit_generator.state,
                    "streams": {t: s.state_dict() for t, s in self.streams.items()},
                    "loss_sum": st.loss_sum,
                    "loss_n": st.loss_n,
                    "best": st.best,
                    "last": st.last,
                    "elapsed_s": self.elapsed(),
                    "train_time_s": st.train_time_s,
                    "train_cpu_s": st.train_cpu_s,
                    "eval_time_s": st.eval_time_s,
                    "task_steps": st.task_steps,
                },
                st.best,
            )
        self.acc.wait_for_everyone()

    # --- steps ----------------------------------------------------------------------------------------

    def next_batch(self, task: str) -> dict:
        rows = self.streams[task].take(self.cfg.batch_size * self.world)
        return self.data[task].train.batch(process_slice(rows, self.rank, self.world))

    def draw(self, step: int) -> list[tuple[str, dict]]:
        """The step's batch as ``(task, rows)`` parts: one part, or MT-Uncertainty's mixed batch."""
        if self.sampler.needs_model:
            candidates = [(t, self.next_batch(t)) for t in self.sampler.candidates(step, self.rng)]
            return self.sampler.select(self.net, candidates, step)
        task = self.sampler.sample(step, self.rng)
        return [(task, self.next_batch(task))]

    def part_loss(self, model, task: str, batch: dict):
        """Mean loss of one task's rows, as its kind computes it (``pals_core/kinds/<kind>/module.py``: ``loss``)."""
        dev = self.acc.device
        with self.acc.autocast():
            logits = model(
                task=task,
                input_ids=batch["input_ids"].to(dev),
                attention_mask=batch["attention_mask"].to(dev),
                token_type_ids=batch["token_type_ids"].to(dev),
            )
        labels = batch["labels"].to(dev)
        return get_kind(self.records[task].kind).module().loss(logits, labels, self.scales.get(task))

    def train_step(self, parts: list[tuple[str, dict]]):
        """One optimiser step on the mean of the parts' mean losses (one part: that task's loss)."""
        if self.sampler.needs_model and self.world > 1:
            loss = self._mixed_backward_ddp(parts)
        else:
            loss = sum(self.part_loss(self.model, t, b) for t, b in parts) / len(parts)
            self.acc.backward(loss)
        if self.cfg.grad_clip is not None:
            self.acc.clip_grad_norm_(self.trainable, self.cfg.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    def _mixed_backward_ddp(self, parts: list[tuple[str, dict]]):
        """Several forwards before one backward do not fit DDP's hooks: run the parts on the unwrapped
        model without DDP's reduction, then average every trainable gradient across the processes (a
        parameter this process did not reach contributes zeros), as DDP would."""
        import torch
        import torch.distributed as dist

        with self.acc.no_sync(self.model):
            loss = sum(self.part_loss(self.net, t, b) for t, b in parts) / len(parts)
            self.acc.backward(loss)
        for p in self.trainable:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            dist.all_reduce(p.grad)
            p.grad.div_(self.world)
        return loss

    def stop_requested(self) -> bool:
        if self.world == 1:
            return self.stop_flag.is_set()
        import torch

        flag = torch.tensor([1.0 if self.stop_flag.is_set() else 0.0], device=self.acc.device)
        return bool(self.acc.reduce(flag, reduction="sum").item() > 0)

    def _gather(self, logits, index):
        logits = self.acc.pad_across_processes(logits, dim=0)
        index = self.acc.pad_across_processes(index, dim=0, pad_index=-1)
        logits, index = self.acc.gather(logits), self.acc.gather(index)
        keep = index >= 0
        return logits[keep], index[keep]

    def evaluate(self) -> None:
        st, cfg = self.st, self.cfg
        t0 = time.monotonic()
        scores = evaluate(
            self.net,
            {t: self.data[t].dev for t in self.trained},
            self.records,
            scales=self.scales,
            batch_size=cfg.eval_batch_size,
            device=self.acc.device,
            autocast=self.acc.autocast,
            rank=self.rank,
            world=self.world,
            gather=self._gather,
            should_stop=self.stop_flag.is_set if self.world == 1 else None,
        )
        st.eval_time_s += time.monotonic() - t0
        average = dev_average(scores, self.records)
        train_loss = st.loss_sum / st.loss_n if st.loss_n else None
        st.loss_sum, st.loss_n = 0.0, 0
        if self.main:
            self.run.append_metrics({"step": st.step, "scores": scores, "average": average, "train_loss": train_loss})
        st.last = {"step": st.step, "average": average, "scores": scores}
        if st.best is None or average > st.best["average"]:
            st.best = dict(st.last)
        self.say(self.eval_line(train_loss))
        st.evaluated_step = st.step
        self.checkpoint()
        self.write_progress("running")
        if self.on_eval is not None:
            self.in_on_eval = True
            self.on_eval(st.step, scores, average)
            self.in_on_eval = False

    def say(self, line: str) -> None:
        """One line in the run's log (stderr, the progress bar's stream, which the launcher writes to log.txt):
        ``tqdm.write`` clears the bar, writes the line with its own newline and draws the bar again below it, so
        the line stands on its own between the bar's carriage-return updates."""
        if self.show_progress and self.main:
            from tqdm.auto import tqdm

            tqdm.write(f"pals-train: {line}", file=sys.stderr)

    def eval_line(self, train_loss: float | None) -> str:
        """'step 40/120 · train loss 0.6931 · dev average 52.31 (best 52.31 at step 40) · rte accuracy 52.31 · …':
        an evaluation as the log shows it, each task's main metric as ``pals-train``'s closing table prints it."""
        st = self.st
        parts = [f"step {st.step:,}/{self.cfg.steps:,}"]
        if train_loss is not None:
            parts.append(f"train loss {train_loss:.4f}")
        best = st.best or {}
        parts.append(
            f"dev average {100 * st.last['average']:.2f} (best {100 * best['average']:.2f} at step {best['step']:,})"
        )
        for t, s in st.last["scores"].items():
            r = self.records[t]
            parts.append(f"{t} {r.main_metric} {get_kind(r.kind).metric_text(r.main_metric, main_score(r, s))}")
        return " · ".join(parts)

    def is_eval_step(self, step: int) -> bool:
        return step % self.cfg.eval_every == 0 or step == self.cfg.steps

    # --- loop ---------------------------------------------------------------------------------------------

    def loop(self) -> None:
        import torch
        from tqdm.auto import tqdm

        cfg, st = self.cfg, self.st
        self.model.train()
        self.write_progress("running")
        if st.step > 0 and self.is_eval_step(st.step) and st.evaluated_step < st.step:
            self.evaluate()  # a stop interrupted this evaluation
        bar = tqdm(
            total=cfg.steps,
            initial=st.step,
            desc="pals-train",
            unit="step",
            dynamic_ncols=True,
            disable=not (self.show_progress and self.main),
        )
        save_every = cfg.save_every
        # the running loss sum stays on the device (no sync per step) and is continued, never restarted,
        # across checkpoints, so a resumed run adds the same numbers in the same order
        loss_acc = torch.tensor(st.loss_sum, dtype=torch.float64, device=self.acc.device)
        # the first step whose loss is not finite, kept on the device (read at the next sync point)
        self.step_t = torch.tensor(st.step, dtype=torch.long, device=self.acc.device)
        self.first_bad = torch.tensor(-1, dtype=torch.long, device=self.acc.device)
        last_check = last_line = time.monotonic()
        try:
            while st.step < cfg.steps:
                if self.stop_requested():
                    raise _Stop
                t0, c0 = time.monotonic(), time.process_time()
                parts = self.draw(st.step)
                loss = self.train_step(parts)
                self.step_t += 1
                self.first_bad = torch.where((self.first_bad < 0) & ~torch.isfinite(loss), self.step_t, self.first_bad)
                loss_acc += loss.double()
                st.loss_n += 1
                st.step += 1
                for task, _ in parts:
                    st.task_steps[task] += 1
                st.train_time_s += time.monotonic() - t0
                st.train_cpu_s += time.process_time() - c0
                bar.update(1)
                evaluating = self.is_eval_step(st.step)
                saving = bool(save_every) and st.step % save_every == 0
                if evaluating or saving or self.stop_flag.is_set() or time.monotonic() - last_check > PROGRESS_EVERY_S:
                    last_check = time.monotonic()
                    self.check_finite(loss_acc)  # reads the loss sum: a line of it costs no extra sync
                    if not evaluating and st.loss_n and last_check - last_line >= LOSS_LINE_EVERY_S:
                        last_line = last_check
                        self.say(
                            f"step {st.step:,}/{cfg.steps:,} · train loss {float(loss_acc.item()) / st.loss_n:.4f} "
                            f"(mean since step {st.evaluated_step:,})"
                        )
                if evaluating:
                    last_line = time.monotonic()  # the evaluation's line gives the loss
                if evaluating or saving or self.stop_flag.is_set():
                    st.loss_sum = float(loss_acc.item())
                    bar.set_postfix(loss=f"{st.loss_sum / max(st.loss_n, 1):.4f}", refresh=False)
                    if evaluating:
                        self.evaluate()
                        loss_acc.fill_(st.loss_sum)
                        bar.set_postfix(
                            avg=f"{st.last['average']:.4f}", best=f"{st.best['average']:.4f}", refresh=False
                        )
                    elif saving:
                        self.checkpoint()
                self.write_progress("running", force=False)
        finally:
            st.loss_sum = float(loss_acc.item())
            bar.close()

    def check_finite(self, loss_acc) -> None:
        """``TrainingDiverged`` (naming the first bad step) once a training loss was NaN or infinite."""
        import math

        bad = int(self.first_bad.item())
        if bad >= 0:
            raise TrainingDiverged(bad, self.cfg.out)
        if not math.isfinite(float(loss_acc.item())):  # carried over from before a resume
            raise TrainingDiverged(None, self.cfg.out)

    def _predict(self, shape, model) -> dict:
        """The calculator's step time and memory for this run (``machine_report``); never stops a run."""
        cfg = self.cfg
        try:
            return predicted(
                shape,
                run_tasks(cfg),
                cfg.adapter,
                model.base_config.to_dict() | {"attn_implementation": model.base_config._attn_implementation},
                cfg.batch_size,
                cfg.max_len,
                self.acc.device.type == "cuda",
                "bf16" if self.acc.mixed_precision == "bf16" else "fp32",  # what autocast makes of activations
            )
        except (ValueError, RuntimeError) as e:
            return {"reason": str(e)}

    def _evaluate_base_tasks(self) -> dict:
        """The base run's tasks' dev scores as this run's model gives them (their weights never train here, so any
        step's are the best step's)."""
        t0 = time.monotonic()
        scores = evaluate(
            self.net,
            {t: d.dev for t, d in self.base_dev.items()},
            self.records,
            scales=self.scales,
            batch_size=self.cfg.eval_batch_size,
            device=self.acc.device,
            autocast=self.acc.autocast,
            rank=self.rank,
            world=self.world,
            gather=self._gather,
        )
        self.st.eval_time_s += time.monotonic() - t0
        return scores

    def majority(self) -> dict:
        """Each trained task's trivial baseline (``Kind.baseline``: the most frequent training class, the training
        mean, …) scored on the dev rows this run evaluates (``data.metrics.majority_scores``), in the form of
        ``scores``: what a design that learnt nothing scores. A task whose baseline cannot be scored is left out (a
        reference figure never fails a run)."""
        out = {}
        for t in self.trained:
            data = self.data[t]
            try:
                scores = majority_scores(
                    self.records[t],
                    data.train.gold,
                    {s: e.gold for s, e in data.dev.items()},
                    data.num_labels,
                )
            except ValueError:
                continue
            out[t] = {k: float(v) for k, v in scores.items()}
        return out

    def summary(self) -> dict:
        st = self.st
        config = read_json(self.run.config)
        out = {
            "config": config,
            "scores": st.best["scores"],
            "average": st.best["average"],
            "best_step": st.best["step"],
            "params": self.params,
            "wall_time_s": round(self.elapsed(), 3),
            "steps": st.step,
            "final": st.last,
            "majority": self.majority(),  # each task's trivial baseline on the same dev rows
            "task_steps": st.task_steps,
            # tasks no step trained (MT-Uncertainty may starve one): their dev scores are the untrained head's
            "untrained": [t for t in self.trained if st.task_steps.get(t, 0) == 0],
            "train_time_s": round(st.train_time_s, 3),
            "train_cpu_s": round(st.train_cpu_s, 3),
            "eval_time_s": round(st.eval_time_s, 3),
            "train_examples": {t: self.data[t].train.rows for t in self.trained},
            "dev_examples": {t: sum(d.rows for d in self.data[t].dev.values()) for t in self.trained},
            "tasks": {
                t: {
                    "kind": self.records[t].kind,
                    "labels": list(self.data[t].label_names),
                    "metric": self.records[t].main_metric,
                    "dev_source": self.data[t].sources.get("dev", ""),
                    "fingerprint": self.cfg.data[t]["fingerprint"],
                }
                for t in self.trained
            },
            "dropped_rows": {t: d.dropped for t, d in self.data.items() if d.dropped},
            # a tagging task's words no token predicts, per split (cut by --max-len under --truncate; scored with the
            # baseline's tag): 0 when its long rows are read in windows
            "cut_words": {
                t: {"train": d.train.cut_words} | {f"dev{'_' + s if s else ''}": e.cut_words for s, e in d.dev.items()}
                for t, d in self.data.items()
                if d.train is not None and d.train.per_word
            },
            # a tagging task's or a span task's rows longer than --max-len, per split: how many, and the windows they
            # are read in
            "windows": {
                t: {
                    split: {"rows": int((e.windows > 1).sum()), "windows": int(e.windows[e.windows > 1].sum())}
                    for split, e in [("train", d.train), *((f"dev{'_' + s if s else ''}", e) for s, e in d.dev.items())]
                }
                for t, d in self.data.items()
                if d.train is not None and (d.train.per_word or d.train.spans)
            },
            "mixed_precision": str(self.acc.mixed_precision),  # what "auto" was on this machine
            "machine": {
                "predicted": self.predicted,
                "measured": measured(st.train_time_s, st.train_cpu_s, st.step, self.acc.device.type == "cuda"),
            },
        }
        if self.cfg.from_run:  # the base run's tasks, their dev scores as this run's model gives them
            base_scores = self._evaluate_base_tasks()
            out["eval_time_s"] = round(st.eval_time_s, 3)
            dev_examples = {t: sum(len(d) for d in data.dev.values()) for t, data in self.base_dev.items()}
            out = with_base_tasks(out, self.cfg.from_run, base_scores, dev_examples)
            out["average"] = dev_average(out["scores"], self.records)
        return out


class _Stop(Exception):
    pass


# ------------------------------------------------------------------------------------------ train()


def train(cfg: TrainConfig, *, resume: bool = False, on_eval: OnEval | None = None, progress: bool = True) -> dict:
    """Train ``cfg`` and return its summary (also written to ``<out>/summary.json``).

    ``resume=True`` continues the run in ``cfg.out`` from its last checkpoint (or starts it if there is
    none); a finished run's summary is returned as it is. ``on_eval(step, scores, average)`` is called
    after every evaluation (and its checkpoint); if it raises, the run is marked "stopped" and the
    exception propagates. SIGTERM/SIGINT stop after the current step with a checkpoint and raise
    ``TrainingStopped``. Any other error marks the run "failed" (with the error) and propagates.
    Bad configurations raise ``ValueError`` before anything is written."""
    if not is_resolved(cfg):  # a config the caller resolved (``pals-train`` does, to refuse it early) is not again
        cfg = resolve(cfg, rows=True)
    rows = check_data(cfg)  # before the folder is made: a refused start leaves nothing behind
    if cfg.from_run:
        check_base_precision(cfg.from_run, effective_precision(cfg))
    run = RunDir(cfg.out)
    lock = RunLock(run.root) if int(os.environ.get("RANK", "0")) == 0 else None  # one lock, by the main process
    if lock is not None:
        run.ensure_folder()
        lock.acquire()
    try:
        return _train_in(cfg, run, resume, on_eval, progress, rows)
    finally:
        if lock is not None:
            lock.release()


def check_data(cfg: TrainConfig) -> dict[str, TaskSplits]:
    """Every file there and every row of every task good, before anything is written: the model's tokenizer files,
    ``GlueDataError`` naming the missing GLUE files, ``TaskDataError`` the file, row and column of a bad row. Returns
    the rows read (``read_run_rows``: a task's own files and GLUE's alike), which the set-up tokenises: the ones
    ``resolve(cfg, rows=True)`` read and described (``take_rows``: each file opened once in all), else read now, and
    then a file whose bytes read are not the ones ``cfg.data`` describes (its sha256) is refused
    (``check_described``)."""
    check_tokenizer(cfg.model)
    trained = added_task_names(cfg)
    records = cfg.records()
    rows = take_rows(cfg)
    if rows is None:
        rows = read_run_rows(cfg, records)
    words = [r.name for r in records if r.kind_of.per_word and r.name in trained]
    if words:  # a word the tokenizer reduces to nothing can carry no tag: refused, file, line and word named
        tokenizer = load_tokenizer(tokenizer_path(cfg.model))
        for t in words:
            for raw in rows[t][0].values():
                check_words(tokenizer, raw.text_a, raw.where_word)
    check_described(cfg.data or {}, rows)  # the sha256 config.json records is the one of the bytes trained on
    return rows


def _train_in(
    cfg: TrainConfig,
    run: RunDir,
    resume: bool,
    on_eval: OnEval | None,
    progress: bool,
    rows: dict[str, TaskSplits],
) -> dict:
    """``train`` in a folder this process owns (see ``RunDir.kind`` for what a folder may hold)."""
    if run.kind() == "run":
        if not resume:
            raise ValueError(f"{cfg.out} already holds a run: resume it (--resume) or choose another --out")
        saved = TrainConfig.from_dict(run.read_config())
        diff = data_differences(saved.data, cfg.data) + _config_differences(saved, cfg)
        if diff:
            raise ValueError(f"cannot resume {cfg.out} with other settings: {'; '.join(diff)}")
        state = run.read_progress() or {}
        if state.get("status") == "finished" and run.summary.is_file():
            return read_json(run.summary)
    else:
        resume = False  # nothing to continue from: a new start (a failed or killed start's files are replaced)
    r = _Run(cfg, run, progress, on_eval, rows)
    if r.main:
        run.create()
        if not resume:
            run.clear_own_files()
            atomic_write_json(run.config, cfg.as_dict())
    r.acc.wait_for_everyone()
    with _stop_signals(r.stop_flag):
        try:
            r.setup(resume)
            r.loop()
        except _Stop:
            r.checkpoint()
            r.write_progress("stopped")
            raise TrainingStopped(r.st.step, cfg.out) from None
        except KeyboardInterrupt:  # mid-step: the last checkpoint stands
            r.write_progress("stopped", error="interrupted")
            raise
        except BaseException as e:
            if isinstance(e, EvalInterrupted):
                r.checkpoint()
                r.write_progress("stopped")
                raise TrainingStopped(r.st.step, cfg.out) from None
            try:
                if r.in_on_eval:
                    r.write_progress("stopped", error=f"{type(e).__name__}: {e}")
                elif isinstance(e, (TrainingDiverged, ValueError)):
                    r.write_progress("failed", error=" ".join(str(e).split()))
                else:
                    r.write_progress("failed", error=f"{type(e).__name__}: {e}")
            except OSError:  # a full disk may refuse progress.json too: the error itself is what the user must see
                pass
            raise
    summary = r.summary()
    if r.main:
        atomic_write_json(run.summary, summary)
    r.write_progress("finished")
    return summary
