"""OneFlow v0.3.4 oneflow/python/test/ops/test_lamb.py, ported: programs mechanically, "gpu" as "cpu";
tensorflow_addons' LAMB (weight_decay_rate 0) transcribed in NumPy float64: bias-corrected Adam moments, update
m_hat/(sqrt(v_hat)+eps), trust ratio ||w||/||update|| (1 where either norm is 0); OneFlow's tolerances."""

from collections import OrderedDict

import numpy as np

import flowlab as flow

from .of_util import GenArgList, TestCase


def compare_with_tensorflow_addons_lamb(
    test_case, device_type, x_shape, beta1, beta2, epsilon, learning_rate, train_iters
):
    assert device_type in ["cpu"]
    flow.clear_default_session()
    func_config = flow.FunctionConfig()
    func_config.default_data_type(flow.float32)

    @flow.global_function(type="train", function_config=flow.FunctionConfig())
    def testAdam(
        random_mask: flow.typing.Numpy.Placeholder(x_shape, dtype=flow.float32)
    ) -> flow.typing.Numpy:
        with flow.scope.placement(device_type, "0:0-0"):
            x = flow.get_variable(
                name="x",
                shape=x_shape,
                dtype=flow.float32,
                initializer=flow.random_uniform_initializer(minval=-10, maxval=10),
                trainable=True,
            )
            loss = flow.math.reduce_mean(x + random_mask)
            flow.optimizer.LAMB(
                flow.optimizer.PiecewiseConstantScheduler([], [learning_rate]),
                beta1=beta1,
                beta2=beta2,
                epsilon=epsilon,
            ).minimize(loss)
            return x

    checkpoint = flow.train.CheckPoint()
    checkpoint.init()

    # generate random number sequences
    random_masks_seq = []
    for i in range(train_iters + 1):
        random_masks_seq.append(np.random.uniform(size=x_shape).astype(np.float32))

    x_list = []
    init_value = None
    for i in range(train_iters + 1):
        x = testAdam(random_masks_seq[i])
        x_list.append(x)
        if i == 0:
            init_value = np.copy(x)

    var = init_value.astype(np.float64)
    m = np.zeros_like(var)
    v = np.zeros_like(var)
    var_list = [var.copy()]
    for i in range(train_iters):
        g = np.full(var.shape, 1.0 / var.size)  # d mean(var + mask) / d var
        t = i + 1
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        update = (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
        w_norm, u_norm = np.linalg.norm(var), np.linalg.norm(update)
        ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
        var = var - ratio * learning_rate * update
        var_list.append(var.copy())
    case = device_type, x_shape, beta1, beta2, epsilon, learning_rate, train_iters
    test_case.assertTrue(len(x_list) == len(var_list))
    for (i, o, t) in zip(range(len(var_list)), x_list, var_list):
        diff = o - t
        test_case.assertTrue(
            np.allclose(x_list[i], var_list[i], rtol=1e-3, atol=1e-3), (i, case, diff),
        )
    diff = x.flatten() - var.flatten()
    test_case.assertTrue(
        np.allclose(x.flatten(), var.flatten(), rtol=1e-4, atol=1e-4),
        (case, diff),
    )
def test_lamb():
    test_case = TestCase()
    arg_dict = OrderedDict()
    arg_dict["test_case"] = [test_case]
    arg_dict["device_type"] = ["cpu"]
    arg_dict["x_shape"] = [(10,)]
    arg_dict["beta1"] = [0.1]
    arg_dict["beta2"] = [0.1]
    arg_dict["epsilon"] = [1e-9]
    arg_dict["learning_rate"] = [0.5]
    arg_dict["train_iters"] = [10]
    for arg in GenArgList(arg_dict):
        compare_with_tensorflow_addons_lamb(*arg)
