"""axle.tf: a Keras model's StableHLO (from TF) run by axle, matching TF. Skips without TF."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="TensorFlow is an optional extra (pip install 'axle[tf]')")

import axle.tf  # noqa: E402


def _mlp():
    tf.keras.utils.set_random_seed(0)
    return tf.keras.Sequential([tf.keras.layers.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                                tf.keras.layers.Dense(4, activation="softmax")])


def _cnn():
    tf.keras.utils.set_random_seed(1)
    return tf.keras.Sequential([tf.keras.layers.Input((12, 12, 3)),
                                tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
                                tf.keras.layers.MaxPooling2D(2), tf.keras.layers.BatchNormalization(),
                                tf.keras.layers.Flatten(), tf.keras.layers.Dense(5)])


@pytest.mark.parametrize("make, shape", [(_mlp, (3, 8)), (_cnn, (2, 12, 12, 3))])
def test_keras_model_matches_tf(make, shape):
    model = make()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    fast = axle.tf.function(lambda x: model(x, training=False))
    got = fast(x)
    assert isinstance(got, tf.Tensor)
    np.testing.assert_allclose(got.numpy(), model(x, training=False).numpy(), rtol=1e-5, atol=1e-5)
    # the weights are read at each call: change them in TF, axle sees the new values
    for v in model.trainable_variables:
        v.assign(v * 0.5)
    np.testing.assert_allclose(fast(x).numpy(), model(x, training=False).numpy(), rtol=1e-5, atol=1e-5)
    assert len(fast._cache) == 1


def test_compile_a_tf_function_with_a_structure():
    @tf.function
    def f(x, w):
        return {"y": tf.tanh(tf.matmul(x, w)), "n": tf.reduce_sum(x)}

    x = tf.constant(np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32))
    w = tf.constant(np.ones((3, 2), np.float32))
    exe = axle.tf.compile(f, x, w)
    assert "stablehlo" in exe.text
    got, want = exe(x, w), f(x, w)
    assert set(got) == {"y", "n"}
    np.testing.assert_allclose(got["y"].numpy(), want["y"].numpy(), rtol=1e-6)
    np.testing.assert_allclose(got["n"].numpy(), want["n"].numpy(), rtol=1e-6)


def test_tensorflow_hlo_text_read_by_parse_hlo():
    """TF's own HLO text (stage='hlo') of a Keras CNN, read by axle's HLO reader and compiled."""
    import axle
    from axle.ir import parse_hlo
    model = _cnn()
    x = np.random.default_rng(2).standard_normal((2, 12, 12, 3)).astype(np.float32)
    f = tf.function(lambda x: model(x, training=False), jit_compile=True)
    hlo = f.experimental_get_compiler_ir(x)(stage="hlo")
    assert hlo.startswith("HloModule")
    m = parse_hlo(hlo, "keras_cnn.hlo")
    weights = [v.numpy() for v in f.get_concrete_function(x).variables]
    concrete = f.get_concrete_function(x)
    captured = {id(v.handle): v.numpy() for v in concrete.variables}
    inputs = [x] + [captured[id(h)] for h in concrete.captured_inputs]
    assert len(weights) == len(inputs) - 1
    got = axle.compile(m).execute(inputs)
    np.testing.assert_allclose(got[0], model(x, training=False).numpy(), rtol=1e-5, atol=1e-5)
