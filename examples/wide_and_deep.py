"""Wide & Deep training, following OneFlow-Benchmark v0.3.0's ClickThroughRate/WideDeepLearning/wdl_train_eval.py:
a wide embedding (one score per sparse feature id, summed) plus a deep tower (embedded sparse fields concatenated
with the dense fields, dense layers with relu), the sum of both scores as the logit; sigmoid cross entropy against
int32 labels; LazyAdam at a constant learning rate with indexed_slices_optimizer_conf on the two embedding tables
(rows not in the batch are not touched); the parallel_cast / distribute annotations of the model parallel script.

Tiny: batch 8, vocabularies of 20 (wide) and 30 (deep) ids, embeddings of 4, 3 dense fields, 2 wide and 3 deep
sparse fields, two hidden layers of 8, dropout 0 (docs/deviations.md). The data loader's blobs are placeholders
fed synthetic batches made here (as its --dataset_format synthetic does in-job). Without return annotations, as
the script: a call returns OneFlow's future, `.get()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import flowlab as flow
import flowlab.typing as tp


@dataclass
class Flags:
    batch_size: int = 8
    learning_rate: float = 1e-3
    wide_vocab_size: int = 20
    deep_vocab_size: int = 30
    deep_embedding_vec_size: int = 4
    deep_dropout_rate: float = 0.0
    num_dense_fields: int = 3
    num_wide_sparse_fields: int = 2
    num_deep_sparse_fields: int = 3
    hidden_units: list[int] = field(default_factory=lambda: [8, 8])


def _model(dense_fields, wide_sparse_fields, deep_sparse_fields, flags: Flags):
    wide_sparse_fields = flow.parallel_cast(wide_sparse_fields, distribute=flow.distribute.broadcast())
    wide_embedding_table = flow.get_variable(
        name="wide_embedding", shape=(flags.wide_vocab_size, 1),
        initializer=flow.random_uniform_initializer(minval=-0.05, maxval=0.05), distribute=flow.distribute.split(0))
    wide_embedding = flow.gather(params=wide_embedding_table, indices=wide_sparse_fields)
    wide_embedding = flow.reshape(wide_embedding, shape=(-1, wide_embedding.shape[-1] * wide_embedding.shape[-2]))
    wide_scores = flow.math.reduce_sum(wide_embedding, axis=[1], keepdims=True)
    wide_scores = flow.parallel_cast(wide_scores, distribute=flow.distribute.split(0),
                                     gradient_distribute=flow.distribute.broadcast())

    deep_sparse_fields = flow.parallel_cast(deep_sparse_fields, distribute=flow.distribute.broadcast())
    deep_embedding_table = flow.get_variable(
        name="deep_embedding", shape=(flags.deep_vocab_size, flags.deep_embedding_vec_size),
        initializer=flow.random_uniform_initializer(minval=-0.05, maxval=0.05), distribute=flow.distribute.split(1))
    deep_embedding = flow.gather(params=deep_embedding_table, indices=deep_sparse_fields)
    deep_embedding = flow.parallel_cast(deep_embedding, distribute=flow.distribute.split(0),
                                        gradient_distribute=flow.distribute.split(2))
    deep_embedding = flow.reshape(deep_embedding, shape=(-1, deep_embedding.shape[-1] * deep_embedding.shape[-2]))
    deep_features = flow.concat([deep_embedding, dense_fields], axis=1)
    for idx, units in enumerate(flags.hidden_units):
        deep_features = flow.layers.dense(deep_features, units=units,
                                          kernel_initializer=flow.glorot_uniform_initializer(),
                                          bias_initializer=flow.constant_initializer(0.0), activation=flow.math.relu,
                                          name="fc" + str(idx + 1))
        if flags.deep_dropout_rate > 0:
            deep_features = flow.nn.dropout(deep_features, rate=flags.deep_dropout_rate)
    deep_scores = flow.layers.dense(deep_features, units=1, kernel_initializer=flow.glorot_uniform_initializer(),
                                    bias_initializer=flow.constant_initializer(0.0),
                                    name="fc" + str(len(flags.hidden_units) + 1))
    return wide_scores + deep_scores


def CreateOptimizer(flags: Flags):
    lr_scheduler = flow.optimizer.PiecewiseConstantScheduler([], [flags.learning_rate])
    return flow.optimizer.LazyAdam(lr_scheduler)


def _get_train_conf():
    train_conf = flow.FunctionConfig()
    train_conf.default_data_type(flow.float)
    train_conf.indexed_slices_optimizer_conf(dict(include_op_names=dict(op_name=["wide_embedding",
                                                                                  "deep_embedding"])))
    return train_conf


def build(flags: Flags | None = None):
    flags = flags or Flags()
    flow.clear_default_session()
    flow.config.gpu_device_num(1)
    flow.config.enable_model_io_v2(True)
    flow.config.collective_boxing.nccl_enable_all_to_all(True)
    b = flags.batch_size

    @flow.global_function("train", _get_train_conf())
    def train_job(labels: tp.Numpy.Placeholder((b, 1), dtype=flow.int32),
                  dense_fields: tp.Numpy.Placeholder((b, flags.num_dense_fields), dtype=flow.float),
                  wide_sparse_fields: tp.Numpy.Placeholder((b, flags.num_wide_sparse_fields), dtype=flow.int32),
                  deep_sparse_fields: tp.Numpy.Placeholder((b, flags.num_deep_sparse_fields), dtype=flow.int32)):
        logits = _model(dense_fields, wide_sparse_fields, deep_sparse_fields, flags)
        loss = flow.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        opt = CreateOptimizer(flags)
        opt.minimize(loss)
        loss = flow.math.reduce_mean(loss)
        return loss

    return train_job


def synthetic_batch(flags: Flags, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    b = flags.batch_size
    return {"labels": rng.integers(0, 2, (b, 1)).astype(np.int32),
            "dense_fields": rng.random((b, flags.num_dense_fields), dtype=np.float32),
            # a few ids only, so most rows of each table stay out of a batch (LazyAdam leaves them alone)
            "wide_sparse_fields": rng.integers(0, flags.wide_vocab_size // 2,
                                               (b, flags.num_wide_sparse_fields)).astype(np.int32),
            "deep_sparse_fields": rng.integers(0, flags.deep_vocab_size // 2,
                                               (b, flags.num_deep_sparse_fields)).astype(np.int32)}


def main(steps: int = 5) -> None:
    flags = Flags()
    train_job = build(flags)
    for i in range(steps):
        loss = train_job(**synthetic_batch(flags, i)).get()
        print(i + 1, "loss", float(loss.numpy().mean()))


if __name__ == "__main__":
    main()
