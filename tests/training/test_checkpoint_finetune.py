"""OneFlow's documented fine-tune program (``mlp_mnist_finetune.py``): train and save a 2-layer MLP, then in a new
session add ``dense3`` and load. Variables found are loaded bit for bit; a variable missing from the checkpoint is
initialized with its own initializer (the values System-ModelInit gives) and a warning in OneFlow's words names
its path; a shape mismatch is an error naming the variable. Training then runs from the loaded weights."""

from __future__ import annotations

import re

import numpy as np
import pytest

import flowlab as flow
import flowlab.typing as tp
from flowlab.runtime.checkpoint_io import CheckpointError, MissingVariableWarning

BATCH, PIXELS, HIDDEN, CLASSES = 8, 4, 16, 10
RNG = np.random.default_rng(7)
IMAGES = [RNG.random((BATCH, 1, PIXELS, PIXELS), dtype=np.float32) for _ in range(4)]
LABELS = [RNG.integers(0, CLASSES, BATCH).astype(np.int32) for _ in range(4)]
OLD = ("dense1-weight", "dense1-bias", "dense2-weight", "dense2-bias")
NEW = ("dense3-weight", "dense3-bias")


def define_mlp(with_dense3: bool, dense2_units: int = CLASSES):
    @flow.global_function(type="train")
    def train_job(images: tp.Numpy.Placeholder((BATCH, 1, PIXELS, PIXELS), dtype=flow.float),
                  labels: tp.Numpy.Placeholder((BATCH,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            initializer = flow.truncated_normal(0.1)
            reshape = flow.reshape(images, [images.shape[0], -1])
            hidden = flow.layers.dense(reshape, HIDDEN, activation=flow.nn.relu, kernel_initializer=initializer,
                                       name="dense1")
            logits = flow.layers.dense(hidden, dense2_units, kernel_initializer=initializer, name="dense2")
            if with_dense3:
                logits = flow.layers.dense(logits, CLASSES, kernel_initializer=initializer, name="dense3")
            loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    return train_job


def trained_and_saved(path) -> dict[str, np.ndarray]:
    train_job = define_mlp(with_dense3=False)
    for images, labels in zip(IMAGES[:3], LABELS[:3]):
        train_job(images, labels)
    flow.checkpoint.save(path)
    saved = {k: v.copy() for k, v in flow.get_all_variables().items()}
    flow.clear_default_session()
    return saved


def numpy_loss(weights: dict[str, np.ndarray], images: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The 3-layer MLP's per-example loss in NumPy, from the weights the job starts the step with."""
    x = images.reshape(BATCH, -1).astype(np.float64)
    h = np.maximum(x @ weights["dense1-weight"].T + weights["dense1-bias"], 0)
    h = h @ weights["dense2-weight"].T + weights["dense2-bias"]
    logits = h @ weights["dense3-weight"].T + weights["dense3-bias"]
    logits = logits - logits.max(axis=1, keepdims=True)
    log_prob = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -log_prob[np.arange(BATCH), labels]


def missing_warning(path, name: str) -> str:
    return f"WARNING! CANNOT find variable path in : {path / name / 'out'}. It will be initialized."


def test_finetune_with_checkpoint_load_initializes_the_new_layer(tmp_path):
    path = tmp_path / "mlp_models_1"
    saved = trained_and_saved(path)
    train_job = define_mlp(with_dense3=True)
    initialized = {k: v.copy() for k, v in flow.get_all_variables().items()}  # System-ModelInit's values
    # Overwrite dense3 so the load has to initialize it again, not merely leave it alone.
    flow.load_variables({name: np.full_like(initialized[name], 5.0) for name in NEW})
    with pytest.warns(UserWarning) as record:
        flow.checkpoint.load(path)
    messages = [str(w.message) for w in record]
    assert messages == [missing_warning(path, name) for name in NEW]  # once per missing variable, in order
    assert all(w.filename == __file__ for w in record)  # attributed to the user's load line
    loaded = flow.get_all_variables()
    for name in OLD:
        assert loaded[name].tobytes() == saved[name].tobytes(), name  # bit for bit
    for name in NEW:
        assert loaded[name].tobytes() == initialized[name].tobytes(), name
    assert np.count_nonzero(initialized["dense3-weight"]) == initialized["dense3-weight"].size  # really random
    assert loaded["System-Train-TrainStep-train_job"].tolist() == saved["System-Train-TrainStep-train_job"].tolist()
    start = {k: v.astype(np.float64) for k, v in loaded.items()}
    loss = train_job(IMAGES[3], LABELS[3])
    np.testing.assert_allclose(loss, numpy_loss(start, IMAGES[3], LABELS[3]), rtol=1e-5, atol=1e-6)
    after = flow.get_all_variables()
    assert not np.array_equal(after["dense3-weight"], loaded["dense3-weight"])  # trained
    assert after["System-Train-TrainStep-train_job"].tolist() == [4]


def test_finetune_as_the_docs_write_it_with_load_variables(tmp_path):
    """``flow.load_variables(flow.checkpoint.get(path))``: missing variables keep their initialized values."""
    path = tmp_path / "mlp_models_1"
    saved = trained_and_saved(path)
    train_job = define_mlp(with_dense3=True)
    initialized = {k: v.copy() for k, v in flow.get_all_variables().items()}
    flow.load_variables(flow.checkpoint.get(path))
    loaded = flow.get_all_variables()
    for name in OLD:
        assert loaded[name].tobytes() == saved[name].tobytes(), name
    for name in NEW:
        assert loaded[name].tobytes() == initialized[name].tobytes(), name
    loss = train_job(IMAGES[3], LABELS[3])
    start = {k: v.astype(np.float64) for k, v in loaded.items()}
    np.testing.assert_allclose(loss, numpy_loss(start, IMAGES[3], LABELS[3]), rtol=1e-5, atol=1e-6)


def test_missing_variable_gets_the_values_a_fresh_session_initializes(tmp_path):
    """The load initializes with the variable's own seed: the same values as System-ModelInit in any session."""
    path = tmp_path / "ckpt"
    trained_and_saved(path)
    define_mlp(with_dense3=True)
    flow.train.CheckPoint().init()
    fresh = flow.get_all_variables()["dense3-weight"].copy()
    flow.clear_default_session()
    define_mlp(with_dense3=True)
    flow.load_variables({"dense3-weight": np.zeros((CLASSES, CLASSES), np.float32)})
    with pytest.warns(MissingVariableWarning) as record:
        flow.train.CheckPoint().load(path)
    assert [str(w.message) for w in record] == [missing_warning(path, name) for name in NEW]
    assert flow.get_all_variables()["dense3-weight"].tobytes() == fresh.tobytes()


@pytest.mark.parametrize("how", ["checkpoint.load", "load_variables"])
def test_a_shape_mismatch_is_an_error_naming_the_variable(tmp_path, how):
    path = tmp_path / "ckpt"
    trained_and_saved(path)
    define_mlp(with_dense3=True, dense2_units=12)
    before = {k: v.copy() for k, v in flow.get_all_variables().items()}
    with pytest.raises(CheckpointError) as err:
        if how == "checkpoint.load":
            flow.checkpoint.load(path)
        else:
            flow.load_variables(flow.checkpoint.get(path))
    message = str(err.value)  # the first mismatched variable: dense2's weight [10, 16] or bias [10]
    assert re.search(r"'dense2-weight'.*\[1[02], 16\].*\[1[02], 16\]|'dense2-bias'.*\[1[02]\].*\[1[02]\]", message)
    after = flow.get_all_variables()
    assert all(after[k].tobytes() == before[k].tobytes() for k in before)  # nothing half-loaded
