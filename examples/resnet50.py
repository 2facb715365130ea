"""ResNet-50 training, following OneFlow-Benchmark v0.3.0's Classification/cnns: resnet_model.py (the model),
of_cnn_train_val.py (label-smoothed one_hot + softmax cross entropy, reduce_mean), optimizer_util.py (SGD with
momentum, CosineScheduler after a linear warmup, l2 weight decay through the variables' regularizers) and
job_function_util.py (the train function config).

The architecture is ResNet-50's: a 7x7/2 stem conv + batch norm + relu + 3x3/2 max pool, four stages of
[3, 4, 6, 3] bottleneck blocks (1x1, 3x3 with the stage's stride, 1x1; a projection shortcut on each stage's first
block), batch norm with momentum 0.9 and epsilon 1e-5 (the last one of each block starting gamma at 0), then an
average pool over the whole remaining map and a dense layer. Tiny: the channel counts are divided by ``width``
(OneFlow's are 64/128/256/512 inside, 256..2048 out) and the images are small; the average pool's window is the
final map's size (7 at OneFlow's 224x224). The data is synthetic, made here (as ofrecord_util.load_synthetic
does), fed through placeholders. fuse_bn_relu / fuse_bn_add_relu are off, OneFlow-Benchmark's defaults.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

import flowlab as flow
import flowlab.typing as tp

BLOCK_COUNTS = [3, 4, 6, 3]
BLOCK_FILTERS = [256, 512, 1024, 2048]
BLOCK_FILTERS_INNER = [64, 128, 256, 512]


@dataclass
class Config:
    """The command-line arguments of of_cnn_train_val.py that the model reads, at tiny defaults."""

    batch_size: int = 2
    # 64: res5's maps are 2x2; at 1x1 with batch 2 a batch norm sees 2 values per channel, where its gradient
    # cancels to O(epsilon / variance) and float32 rounding dominates
    image_size: int = 64
    width: int = 16  # channels divided by this
    num_classes: int = 10
    label_smoothing: float = 0.1
    learning_rate: float = 0.256
    momentum: float = 0.875
    wd: float = 1.0 / 32768
    warmup_batches: int = 2
    decay_batches: int = 10
    device_num: int = 1  # data parallel over this many CPU devices


class ResnetBuilder:
    def __init__(self, weight_regularizer: dict | None, width: int, trainable: bool = True,
                 training: bool = True) -> None:
        self.data_format = "NCHW"
        self.weight_initializer = flow.variance_scaling_initializer(2, "fan_in", "random_normal",
                                                                    data_format=self.data_format)
        self.weight_regularizer = weight_regularizer
        self.width = width
        self.trainable = trainable
        self.training = training

    def _conv2d(self, name, input, filters, kernel_size, strides=1, padding="SAME", dilations=1):
        shape = (filters, input.shape[1], kernel_size, kernel_size)
        weight = flow.get_variable(name + "-weight", shape=shape, dtype=input.dtype,
                                   initializer=self.weight_initializer, regularizer=self.weight_regularizer,
                                   model_name="weight", trainable=self.trainable)
        return flow.nn.conv2d(input, weight, strides, padding, self.data_format, dilations, name=name)

    def _batch_norm(self, inputs, name=None, last=False):
        initializer = flow.zeros_initializer() if last else flow.ones_initializer()
        return flow.layers.batch_normalization(
            inputs=inputs, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
            trainable=self.trainable, training=self.training, gamma_initializer=initializer,
            moving_variance_initializer=initializer, gamma_regularizer=self.weight_regularizer,
            beta_regularizer=self.weight_regularizer, name=name)

    def _batch_norm_relu(self, inputs, name=None, last=False):
        return flow.nn.relu(self._batch_norm(inputs, name + "_bn", last=last))

    def _batch_norm_add_relu(self, inputs, addend, name=None, last=False):
        return flow.nn.relu(self._batch_norm(inputs, name + "_bn", last=last) + addend)

    def conv2d_affine(self, input, name, filters, kernel_size, strides):
        padding = "SAME" if strides > 1 or kernel_size > 1 else "VALID"
        return self._conv2d(name, input, filters // self.width, kernel_size, strides, padding)

    def bottleneck_transformation(self, input, block_name, filters, filters_inner, strides):
        a = self.conv2d_affine(input, block_name + "_branch2a", filters_inner, 1, 1)
        a = self._batch_norm_relu(a, block_name + "_branch2a")
        b = self.conv2d_affine(a, block_name + "_branch2b", filters_inner, 3, strides)
        b = self._batch_norm_relu(b, block_name + "_branch2b")
        return self.conv2d_affine(b, block_name + "_branch2c", filters, 1, 1)

    def residual_block(self, input, block_name, filters, filters_inner, strides_init):
        if strides_init != 1 or block_name == "res2_0":
            shortcut = self.conv2d_affine(input, block_name + "_branch1", filters, 1, strides_init)
            shortcut = self._batch_norm(shortcut, block_name + "_branch1_bn")
        else:
            shortcut = input
        bottleneck = self.bottleneck_transformation(input, block_name, filters, filters_inner, strides_init)
        return self._batch_norm_add_relu(bottleneck, shortcut, block_name + "_branch2c", last=True)

    def residual_stage(self, input, stage_name, counts, filters, filters_inner, stride_init=2):
        output = input
        for i in range(counts):
            output = self.residual_block(output, f"{stage_name}_{i}", filters, filters_inner,
                                         stride_init if i == 0 else 1)
        return output

    def resnet_conv_x_body(self, input):
        output = input
        for i, (counts, filters, filters_inner) in enumerate(zip(BLOCK_COUNTS, BLOCK_FILTERS,
                                                                 BLOCK_FILTERS_INNER)):
            output = self.residual_stage(output, f"res{i + 2}", counts, filters, filters_inner,
                                         1 if i == 0 else 2)
        return output

    def resnet_stem(self, input):
        conv1 = self._conv2d("conv1", input, 64 // self.width, 7, 2)
        conv1_bn = self._batch_norm_relu(conv1, "conv1")
        return flow.nn.max_pool2d(conv1_bn, ksize=3, strides=2, padding="SAME", data_format=self.data_format,
                                  name="pool1")


def resnet50(images, cfg: Config, trainable: bool = True, training: bool = True):
    weight_regularizer = flow.regularizers.l2(cfg.wd) if 0.0 < cfg.wd < 1.0 else None
    builder = ResnetBuilder(weight_regularizer, cfg.width, trainable, training)
    with flow.scope.namespace("Resnet"):
        stem = builder.resnet_stem(images)
        body = builder.resnet_conv_x_body(stem)
        pool5 = flow.nn.avg_pool2d(body, ksize=body.shape[2], strides=1, padding="VALID",
                                   data_format=builder.data_format, name="pool5")
        fc1001 = flow.layers.dense(
            flow.reshape(pool5, (pool5.shape[0], -1)), units=cfg.num_classes, use_bias=True,
            kernel_initializer=flow.variance_scaling_initializer(2, "fan_in", "random_normal"),
            bias_initializer=flow.zeros_initializer(), kernel_regularizer=weight_regularizer,
            bias_regularizer=weight_regularizer, trainable=trainable, name="fc1001")
    return fc1001


def label_smoothing(labels, classes, eta, dtype):
    assert classes > 0
    assert 0.0 <= eta < 1.0
    return flow.one_hot(labels, depth=classes, dtype=dtype, on_value=1 - eta + eta / classes,
                        off_value=eta / classes)


def train_config():
    """job_function_util.get_train_config (the CUDA/XLA switches are accepted and change nothing here)."""
    config = flow.function_config()
    config.default_logical_view(flow.scope.consistent_view())
    config.default_data_type(flow.float)
    config.enable_fuse_add_to_output(True)
    config.cudnn_conv_heuristic_search_algo(False)
    config.prune_parallel_cast_ops(True)
    config.enable_inplace(True)
    config.enable_fuse_model_update_ops(True)
    return config


def set_up_optimizer(loss, cfg: Config) -> None:
    """optimizer_util.set_up_optimizer with --lr_decay cosine --optimizer sgd (the defaults)."""
    warmup = flow.optimizer.warmup.linear(cfg.warmup_batches, 0) if cfg.warmup_batches > 0 else None
    lr_scheduler = flow.optimizer.CosineScheduler(base_lr=cfg.learning_rate, steps=cfg.decay_batches,
                                                  warmup=warmup)
    flow.optimizer.SGD(lr_scheduler, momentum=cfg.momentum if cfg.momentum > 0 else None,
                       grad_clipping=None, loss_scale_policy=None).minimize(loss)


def build(cfg: Config | None = None):
    """A fresh session (cpu_device_num(cfg.device_num)) and its TrainNet job."""
    cfg = cfg or Config()
    flow.clear_default_session()
    flow.config.cpu_device_num(cfg.device_num)
    size = cfg.image_size

    @flow.global_function("train", train_config())
    def TrainNet(images: tp.Numpy.Placeholder((cfg.batch_size, 3, size, size)),
                 labels: tp.Numpy.Placeholder((cfg.batch_size,), dtype=flow.int32)) -> tp.Numpy:
        with flow.scope.placement("cpu", f"0:0-{cfg.device_num - 1}"):
            logits = resnet50(images, cfg)
            if cfg.label_smoothing > 0:
                one_hot_labels = label_smoothing(labels, cfg.num_classes, cfg.label_smoothing, logits.dtype)
                loss = flow.nn.softmax_cross_entropy_with_logits(one_hot_labels, logits, name="softmax_loss")
            else:
                loss = flow.nn.sparse_softmax_cross_entropy_with_logits(labels, logits, name="softmax_loss")
            loss = flow.math.reduce_mean(loss)
            set_up_optimizer(loss, cfg)
        return loss

    return TrainNet


def synthetic_batch(cfg: Config, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((cfg.batch_size, 3, cfg.image_size, cfg.image_size)).astype(np.float32)
    labels = rng.integers(0, cfg.num_classes, cfg.batch_size).astype(np.int32)
    return images, labels


def main(steps: int = 5) -> None:
    cfg = Config()
    start = time.perf_counter()
    train = build(cfg)
    flow.env.log_dir("./log")
    for step in range(steps):
        loss = train(*synthetic_batch(cfg, step))
        print(f"step {step} loss {float(loss.mean()):.6f} ({time.perf_counter() - start:.2f} s)")
        start = time.perf_counter()
    assert math.isfinite(float(loss.mean()))


if __name__ == "__main__":
    main()
