"""AlexNet training, following OneFlow-Benchmark v0.3.0's Classification/cnns/alexnet_model.py (the model: five
conv2d_layer's with bias and relu, 3x3/2 VALID average pools, dense 4096/4096/1000 with dropout, l2(0.00005) on
every weight and bias) trained as of_cnn_train_val.py does (label-smoothed one_hot loss, SGD with momentum and the
cosine schedule after a linear warmup: examples/resnet50.py's set_up_optimizer).

Tiny: channels divided by ``width``, 67x67 images (the smallest size whose VALID convolutions and pools leave a
1x1 map before the dense layers; OneFlow's is 224), dropout rate 0 (flowlab does not draw OneFlow's masks:
docs/deviations.md). Synthetic data made here, fed through placeholders.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

import flowlab as flow
import flowlab.typing as tp
from examples.resnet50 import label_smoothing, set_up_optimizer, train_config


@dataclass
class Config:
    batch_size: int = 4
    image_size: int = 67
    width: int = 16
    num_classes: int = 10
    dropout: float = 0.0
    label_smoothing: float = 0.1
    learning_rate: float = 0.1
    momentum: float = 0.875
    warmup_batches: int = 1
    decay_batches: int = 10


def _get_kernel_initializer(data_format="NCHW"):
    return flow.variance_scaling_initializer(distribution="random_normal", data_format=data_format)


def _get_regularizer():
    return flow.regularizers.l2(0.00005)


def _get_bias_initializer():
    return flow.zeros_initializer()


def conv2d_layer(name, input, filters, kernel_size=3, strides=1, padding="SAME", data_format="NCHW",
                 dilation_rate=1, activation="Relu", use_bias=True, bias_initializer=None,
                 weight_regularizer=None, bias_regularizer=None):
    bias_initializer = bias_initializer or _get_bias_initializer()
    weight_regularizer = weight_regularizer or _get_regularizer()
    bias_regularizer = bias_regularizer or _get_regularizer()
    weight_shape = (filters, input.shape[1], kernel_size, kernel_size)
    weight = flow.get_variable(name + "-weight", shape=weight_shape, dtype=input.dtype,
                               initializer=_get_kernel_initializer(data_format), regularizer=weight_regularizer)
    output = flow.nn.conv2d(input, weight, strides, padding, data_format, dilation_rate, name=name)
    if use_bias:
        bias = flow.get_variable(name + "-bias", shape=(filters,), dtype=input.dtype,
                                 initializer=bias_initializer, regularizer=bias_regularizer)
        output = flow.nn.bias_add(output, bias, data_format)
    if activation is not None:
        if activation != "Relu":
            raise NotImplementedError(activation)
        output = flow.nn.relu(output)
    return output


def alexnet(images, cfg: Config):
    w, data_format = cfg.width, "NCHW"
    conv1 = conv2d_layer("conv1", images, filters=64 // w, kernel_size=11, strides=4, padding="VALID")
    pool1 = flow.nn.avg_pool2d(conv1, 3, 2, "VALID", data_format, name="pool1")
    conv2 = conv2d_layer("conv2", pool1, filters=192 // w, kernel_size=5)
    pool2 = flow.nn.avg_pool2d(conv2, 3, 2, "VALID", data_format, name="pool2")
    conv3 = conv2d_layer("conv3", pool2, filters=384 // w)
    conv4 = conv2d_layer("conv4", conv3, filters=384 // w)
    conv5 = conv2d_layer("conv5", conv4, filters=256 // w)
    pool5 = flow.nn.avg_pool2d(conv5, 3, 2, "VALID", data_format, name="pool5")
    if len(pool5.shape) > 2:
        pool5 = flow.reshape(pool5, shape=(pool5.shape[0], -1))
    fc1 = flow.layers.dense(inputs=pool5, units=4096 // w, activation=flow.nn.relu, use_bias=True,
                            kernel_initializer=_get_kernel_initializer(), bias_initializer=_get_bias_initializer(),
                            kernel_regularizer=_get_regularizer(), bias_regularizer=_get_regularizer(), name="fc1")
    dropout1 = flow.nn.dropout(fc1, rate=cfg.dropout) if cfg.dropout > 0 else fc1
    fc2 = flow.layers.dense(inputs=dropout1, units=4096 // w, activation=flow.nn.relu, use_bias=True,
                            kernel_initializer=_get_kernel_initializer(), bias_initializer=_get_bias_initializer(),
                            kernel_regularizer=_get_regularizer(), bias_regularizer=_get_regularizer(), name="fc2")
    dropout2 = flow.nn.dropout(fc2, rate=cfg.dropout) if cfg.dropout > 0 else fc2
    return flow.layers.dense(inputs=dropout2, units=cfg.num_classes, activation=None, use_bias=False,
                             kernel_initializer=_get_kernel_initializer(), kernel_regularizer=_get_regularizer(),
                             name="fc3")


def build(cfg: Config | None = None):
    cfg = cfg or Config()
    flow.clear_default_session()
    size = cfg.image_size

    @flow.global_function("train", train_config())
    def TrainNet(images: tp.Numpy.Placeholder((cfg.batch_size, 3, size, size)),
                 labels: tp.Numpy.Placeholder((cfg.batch_size,), dtype=flow.int32)) -> tp.Numpy:
        logits = alexnet(images, cfg)
        one_hot_labels = label_smoothing(labels, cfg.num_classes, cfg.label_smoothing, logits.dtype)
        loss = flow.nn.softmax_cross_entropy_with_logits(one_hot_labels, logits, name="softmax_loss")
        loss = flow.math.reduce_mean(loss)
        set_up_optimizer(loss, cfg)
        return loss

    return TrainNet


def synthetic_batch(cfg: Config, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((cfg.batch_size, 3, cfg.image_size, cfg.image_size)).astype(np.float32)
    return images, rng.integers(0, cfg.num_classes, cfg.batch_size).astype(np.int32)


def main(steps: int = 5) -> None:
    cfg = Config()
    train = build(cfg)
    for step in range(steps):
        start = time.perf_counter()
        loss = train(*synthetic_batch(cfg, step))
        print(f"step {step} loss {float(loss.mean()):.6f} ({time.perf_counter() - start:.2f} s)")


if __name__ == "__main__":
    main()
