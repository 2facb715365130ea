"""AutoTrainStep and AutoLearningRate (OneFlow's job_rewriter passes), run on train jobs before autograd."""

from __future__ import annotations

from ..frontend.builder import JobBuilder, building
from ..ir import Job
from ..ir.dtype import int64

TRAIN_STEP_LBN_KEY = "train_step_lbn"
PRIMARY_LR_LBN_KEY = "primary_lr_lbn"


def train_step_variable_name(job_name: str) -> str:
    return f"System-Train-TrainStep-{job_name}"


def auto_train_step(job: Job) -> Job:
    """An int64 variable counting the job's runs: variable -> identity (the step this run) -> +1 -> assign."""
    if job.job_conf.get("job_type") != "train" or job.job_conf.get("train_conf") is None:
        return job
    from ..ops.array_ops import identity
    from ..ops.math_ops import add

    builder = JobBuilder.reopen(job, "AutoTrainStep")
    with building(builder):
        name = train_step_variable_name(job.name)
        (var,) = builder.add_op("variable", attrs={"shape": (1,), "dtype": int64,
                                                   "initializer": {"type": "constant", "value": 0},
                                                   "random_seed": 0, "trainable": False}, name=name, scoped=False)
        step = identity(var, name=f"{name}-Identity")
        builder.add_op("assign", {"ref": [var], "value": [add(step, 1)]}, name=f"{name}-Assign", scoped=False)
        builder.train_conf = {**job.job_conf["train_conf"], TRAIN_STEP_LBN_KEY: step.lbn}
    return builder.build()


def auto_learning_rate(job: Job) -> Job:
    """The learning-rate op (``System-Train-PrimaryLearningRate-Scheduler``) driven by the train step."""
    train_conf = job.job_conf.get("train_conf")
    if job.job_conf.get("job_type") != "train" or train_conf is None:
        return job
    builder = JobBuilder.reopen(job, "AutoLearningRate")
    scheduler = train_conf["lr_scheduler"]
    with building(builder):
        (lr,) = builder.add_op(
            "learning_rate_schedule", {"train_step": [builder.blob(train_conf[TRAIN_STEP_LBN_KEY])]},
            {"learning_rate": scheduler["base_lr"], "decay": scheduler.get("decay"),
             "warmup": scheduler.get("warmup")},
            name="System-Train-PrimaryLearningRate-Scheduler", scoped=False)
        builder.train_conf = {**train_conf, PRIMARY_LR_LBN_KEY: lr.lbn}
    return builder.build()
