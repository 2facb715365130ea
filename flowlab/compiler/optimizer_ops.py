"""The optimizer half of GenerateBackwardAndOptimizerOpConfs: scale, regularize, clip, update."""

from __future__ import annotations

from typing import Any

from ..frontend.blob import LazyBlob
from ..frontend.builder import JobBuilder
from ..frontend.scope import placed_on
from ..ir import Job, OpConf
from .train_passes import PRIMARY_LR_LBN_KEY, TRAIN_STEP_LBN_KEY

_SLOTS = {"momentum": ("momentum",), "adam": ("m", "v"), "adamw": ("m", "v"), "lazy_adam": ("m", "v"),
          "lamb": ("m", "v"), "rmsprop": ("mean_square",), "lars": ("momentum",)}


def add_optimizer_ops(builder: JobBuilder, job: Job, train_conf: dict[str, Any], variables: list[OpConf],
                      var_grads: dict[str, LazyBlob], loss_elem_cnt: int) -> None:
    from ..ops.math_ops import add, multiply

    clip = train_conf.get("grad_clipping")
    grads: dict[str, LazyBlob] = {}
    fused: dict[str, dict[str, float]] = {}  # update-op attrs doing the scaling and regularization
    instances = _dynamic_loss_instance_num(builder, job, list(train_conf["loss_lbns"]))
    if instances is not None:  # divided at run time instead (ScaleModelDiffByDynamicLossInstanceNum)
        loss_elem_cnt = 1
        var_grads = {name: _divided(g, instances, job.op(name).parallel_conf) for name, g in var_grads.items()}
    for var in variables:
        if var.name not in var_grads:
            continue  # the loss does not depend on it
        reg = var.attrs.get("regularizer") or {}
        if not clip:  # OneFlow's update ops take scale, l1 and l2 (FuseUpdateOpsPass): one pass, no extra ops
            grads[var.name] = var_grads[var.name]
            fused[var.name] = {"scale": 1.0 / loss_elem_cnt, "l1": float(reg.get("l1", 0.0)),
                               "l2": float(reg.get("l2", 0.0))}
            continue
        with placed_on(var.parallel_conf):
            g = multiply(var_grads[var.name], 1.0 / loss_elem_cnt)  # per-example loss trains like its mean
            if reg:
                g = add(g, _regularization_grad(builder.blob(var.output_lbns[0]), reg))
        grads[var.name] = g  # clipping needs the scaled, regularized gradients
    if clip and grads:
        names = list(grads)
        clipped = builder.add_op("clip_by_global_norm", {"in": [grads[n] for n in names]},
                                 {"clip_norm": float(clip["clip_norm"])}, name="System-Train-ClipGradient",
                                 scoped=False)
        grads = dict(zip(names, clipped))
    lr = builder.blob(train_conf[PRIMARY_LR_LBN_KEY])
    step = builder.blob(train_conf[TRAIN_STEP_LBN_KEY])
    optimizer = train_conf["optimizer"]
    kind = optimizer["type"]
    # Who reads each blob, once: a scan of every op per variable was quadratic in a deep model. The ops this loop
    # adds read no variable but their own (its update comes after its readers are taken), so this stays exact.
    readers_of: dict[str, list[str]] = {}
    for op in builder.ops:
        for lbn in dict.fromkeys(op.input_lbns):
            readers_of.setdefault(lbn, []).append(op.name)
    for var in variables:
        if var.name not in grads:
            continue
        model = builder.blob(var.output_lbns[0])
        readers = tuple(readers_of.get(var.output_lbns[0], ()))
        inputs: dict[str, list[LazyBlob]] = {"model": [model], "model_diff": [grads[var.name]]}
        slots = _SLOTS.get(kind, ()) + (("mean_gradient",) if optimizer.get("centered") else ())
        for slot in slots:  # optimizer state lies where its variable lies (OneFlow's *_optm.cpp)
            (state,) = builder.add_op("variable", attrs={
                "shape": var.attrs["shape"], "dtype": var.attrs["dtype"],
                "initializer": {"type": "constant", "value": 0.0}, "random_seed": 0, "trainable": False,
            }, name=f"{var.name}-{slot}", scoped=False, placement=var.parallel_conf)
            builder.copy_sbp_hint(var.name, state.op_name)
            inputs[slot] = [state]
        if kind == "lamb":  # lamb_optm.cpp: beta1_t / beta2_t, one element each, starting at beta1 / beta2
            for slot, value in (("beta1_t", optimizer["beta1"]), ("beta2_t", optimizer["beta2"])):
                (state,) = builder.add_op("variable", attrs={
                    "shape": (1,), "dtype": var.attrs["dtype"], "initializer": {"type": "constant", "value": value},
                    "random_seed": 0, "trainable": False}, name=f"{var.name}-{slot}", scoped=False,
                    placement=var.parallel_conf)
                inputs[slot] = [state]
        inputs["learning_rate"] = [lr]
        attrs = {"weight_decay": weight_decay_rate(optimizer, var.name),
                 **fused.get(var.name, {"scale": 1.0, "l1": 0.0, "l2": 0.0})}
        if kind in ("sgd", "momentum"):
            op_type = "sgd_update" if kind == "sgd" else "momentum_update"
            if kind == "momentum":
                attrs["beta"] = float(optimizer["beta"])
            slices = _indexed_slices(builder, job, var, grads[var.name], attrs) if not clip else None
            if slices is not None:  # IndexedSlicesOptimizerRewritePass, as for Adam below
                op_type = f"indexed_slices_{op_type}"
                del inputs["model_diff"]
                inputs["model_diff_indices"], inputs["model_diff_values"] = [slices[0]], [slices[1]]
                attrs = {k: attrs[k] for k in ("weight_decay", "scale", "beta") if k in attrs}
                attrs["logical_rows"] = int(var.attrs["shape"][0])
        elif kind in ("adam", "adamw", "lazy_adam"):
            op_type = "adam_update"
            inputs["train_step"] = [step]
            attrs.update(beta1=float(optimizer["beta1"]), beta2=float(optimizer["beta2"]),
                         epsilon=float(optimizer["epsilon"]), do_bias_correction=bool(optimizer["do_bias_correction"]))
            slices = _indexed_slices(builder, job, var, grads[var.name], attrs) if not clip else None
            if slices is not None:  # IndexedSlicesOptimizerRewritePass: the gather's rows, not a dense gradient
                op_type = "indexed_slices_adam_update"
                del inputs["model_diff"]
                inputs["model_diff_indices"], inputs["model_diff_values"] = [slices[0]], [slices[1]]
                attrs = {k: attrs[k] for k in ("weight_decay", "scale", "beta1", "beta2", "epsilon",
                                               "do_bias_correction")}
                attrs["logical_rows"] = int(var.attrs["shape"][0])  # a row-split table's offset per device
        elif kind == "lamb":
            op_type = "lamb_update"
            attrs.update(beta1=float(optimizer["beta1"]), beta2=float(optimizer["beta2"]),
                         epsilon=float(optimizer["epsilon"]))
        elif kind == "lars":  # lars_optm.cpp
            op_type = "lars_update"
            inputs["train_step"] = [step]
            inputs["momentum"] = inputs.pop("momentum")  # the op's argument order: after the step
            attrs.update(momentum_beta=float(optimizer["momentum_beta"]), epsilon=float(optimizer["epsilon"]),
                         lars_coefficient=float(optimizer["lars_coefficient"]))
        elif kind == "rmsprop":
            op_type = "rmsprop_update"
            attrs.update(decay_rate=float(optimizer["decay_rate"]), epsilon=float(optimizer["epsilon"]),
                         centered=bool(optimizer.get("centered", False)))
        else:
            raise ValueError(f"unknown optimizer type {kind!r}")
        # The update writes the variable in place: it must follow every op that reads the variable.
        update = f"{var.name}_optimizer"
        readers = tuple(name for name in readers if builder.has_op(name))  # not a segment sum the rewrite deleted
        builder.add_op(op_type, inputs, attrs, name=update, scoped=False, ctrl_in_op_names=readers,
                       placement=var.parallel_conf)
        if not op_type.startswith("indexed_slices_"):  # which have no dense gradient to cast
            _cast_gradient(builder, var, update)


def _indexed_slices(builder: JobBuilder, job: Job, var: OpConf, grad: LazyBlob, attrs: dict[str, Any]
                    ) -> tuple[LazyBlob, LazyBlob] | None:
    """OneFlow's IndexedSlicesOptimizerRewritePass (sgd, momentum and adam updates): a variable named in the job's
    indexed_slices_optimizer_conf whose gradient is one gather's (an unsorted_segment_sum(_like) on axis 0),
    reached through a chain of ``scalar_mul`` ops each read only by the next (``gather(table * 2, ...)``), with no
    l1/l2, is updated from that gather's (indices, values): the rows no index names stay as they are, their
    optimizer state too (and weight decay touches only the named rows). As OneFlow's pass, the scalar_muls are
    moved onto the values and the segment sum is deleted. None where it does not apply."""
    conf = job.job_conf.get("indexed_slices_optimizer_conf") or {}
    names = (conf.get("include_op_names") or {}).get("op_name") or ()
    if not conf.get("enable", True) or var.name not in names or attrs["l1"] or attrs["l2"]:
        return None
    if grad.dtype != builder.blob_descs[var.output_lbns[0]].dtype:
        return None
    producer_of = {lbn: op for op in builder.ops for lbn in op.output_lbns}
    readers: dict[str, int] = {}
    for op in builder.ops:
        for lbn in op.input_lbns:
            readers[lbn] = readers.get(lbn, 0) + 1
    if readers.get(grad.lbn):
        return None  # something besides the update reads the dense gradient
    muls: list[OpConf] = []  # the scalar_muls between the segment sum and the update, the update's side first
    producer = producer_of.get(grad.lbn)
    while producer is not None and producer.op_type == "scalar_mul":
        muls.append(producer)
        producer = producer_of.get(producer.inputs["x"][0])
        if readers.get(muls[-1].inputs["x"][0]) != 1:
            return None
    if (producer is None or producer.op_type not in ("unsorted_segment_sum", "unsorted_segment_sum_like")
            or producer.attrs["axis"] != 0):
        return None
    indices, values = builder.blob(producer.inputs["segment_ids"][0]), builder.blob(producer.inputs["data"][0])
    gone = {producer.name, *(op.name for op in muls)}
    builder.del_ops(gone)  # as OneFlow's pass: no dense segment sum runs
    for op in reversed(muls):  # each scalar_mul now scales the values (OneFlow rewires its in_0 to them)
        (values,) = builder.add_op("scalar_mul", {"x": [values]}, op.attrs, name=op.name, scoped=False,
                                   placement=op.parallel_conf)
    return indices, values


def weight_decay_rate(optimizer: dict[str, Any], var_name: str) -> float:
    """OneFlow's GetOptimizerWeightDecayRate: the rate, or 0 for a variable the includes patterns do not match
    anywhere in its op name, or an excludes pattern does (RE2::PartialMatch, Python's re.search)."""
    import re

    rate = float(optimizer.get("weight_decay", 0.0))
    if "weight_decay_includes" in optimizer:
        return rate if any(re.search(p, var_name) for p in optimizer["weight_decay_includes"]) else 0.0
    if "weight_decay_excludes" in optimizer:
        return 0.0 if any(re.search(p, var_name) for p in optimizer["weight_decay_excludes"]) else rate
    return rate


def _cast_gradient(builder: JobBuilder, var: OpConf, update: str) -> None:
    """OneFlow's AddDiffParallelCast + PruneParallelCastOpsPass: the update reads a split variable's gradient
    with the variable's SBP. The pruned cast leaves the gradient's producer as its own inputs make it, so a
    model-parallel gradient (already S) needs no boxing, and a data-parallel one (P, with distributed_split)
    is reduce-scattered into the update. A broadcast variable's gradient is reduced to B on its way in."""
    sbp = builder.sbp_hints.get(var.name, {}).get("out")
    if sbp is None or not sbp.is_split or var.parallel_conf.parallel_num == 1:
        return
    builder.set_sbp_hint(update, "model_diff_0", sbp)
    from .optimizer_placement import note_hint

    note_hint(builder, update, "model_diff_0", f"{sbp} as {var.name!r} lies (OneFlow's ParallelCast): its gradient "
              "is boxed into the update")


def _regularization_grad(w: LazyBlob, reg: dict[str, Any]) -> LazyBlob:
    """What OneFlow's L1L2RegularizeGradient kernel adds to a gradient: l1 * sign(w) + l2 * w."""
    from ..ops.math_ops import add, multiply, sign

    l1, l2 = float(reg.get("l1", 0.0)), float(reg.get("l2", 0.0))
    grad = multiply(w, l2)
    if l1:
        grad = add(grad, multiply(sign(w), l1))
    return grad


def _dynamic_loss_instance_num(builder: JobBuilder, job: Job, loss_lbns: list[str]) -> LazyBlob | None:
    """OneFlow's ScaleModelDiffByDynamicLossInstanceNum (autograd.cpp): a dynamic loss's instance count is its
    current extent on axis 0 (a shape_elem_cnt op, summed over the devices' pieces; several losses add theirs),
    a (1,) blob of the loss's dtype the model gradients are divided by at run time. None for static losses (their
    count is a constant of the update ops)."""
    if not any(job.blob_descs[lbn].is_dynamic for lbn in loss_lbns):
        return None
    from ..ops.dynamic_ops import reduced_shape_elem_cnt
    from ..ops.math_ops import add

    total = None
    for lbn in loss_lbns:
        with placed_on(job.producer_of(lbn).parallel_conf):
            name = f"System-Autograd-{lbn.replace('/', '-')}-LossInstanceNum"
            count = reduced_shape_elem_cnt(builder.blob(lbn), axis=[0], dtype=job.blob_descs[lbn].dtype, name=name)
        total = count if total is None else add(total, count)
    return total


def _divided(grad: LazyBlob, instances: LazyBlob, placement: Any) -> LazyBlob:
    from ..ops.math_ops import divide

    with placed_on(placement):
        return divide(grad, instances)
