"""What the array evaluation skips per call, against doing it in full: the defaults changed by
the same keywords made once, a small array's finiteness by its flags, and an element-wise node
of operands of one shape without its shape rule."""

import math

import numpy as np
import pytest

import gradcli
from gradcli.engine.arrays import all_finite
from gradcli.errors import UsageError
from gradcli.gradcheck.evaluation import DEFAULT_SETTINGS, EvalSettings, _settings


def test_the_same_keywords_give_the_same_settings_as_replace():
    made = _settings(None, {"check": False, "rtol": 1e-4})
    assert made is _settings(None, {"check": False, "rtol": 1e-4})
    assert made == EvalSettings(check=False, rtol=1e-4)
    assert _settings(None, {"check": True}) == DEFAULT_SETTINGS
    assert _settings(None, {"check": False}).rtol == DEFAULT_SETTINGS.rtol


def test_given_settings_and_directions_are_never_shared():
    given = EvalSettings(order=2)
    assert _settings(given, {"check": False}) == EvalSettings(order=2, check=False)
    first = _settings(None, {"hvp": {"x": [1.0, 0.0]}})
    second = _settings(None, {"hvp": {"x": [0.0, 1.0]}})
    assert first.hvp == {"x": [1.0, 0.0]} and second.hvp == {"x": [0.0, 1.0]}


@pytest.mark.parametrize("size", [3, 4095, 4096, 100_000])
@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, None])
def test_finiteness_of_small_and_large_arrays(size, bad):
    array = np.full(size, 1e308)  # a sum that overflows: finite elements all the same
    if bad is not None:
        array[size // 2] = bad
    assert all_finite(array) is (bad is None)
    assert all_finite(array) is bool(np.isfinite(array).all())


def test_element_wise_nodes_of_one_shape_against_numpy():
    rng = np.random.default_rng(14)
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    result = gradcli.evaluate("sum(x * y + exp(x) - y)", {"x": x, "y": y}, check=False)
    assert result.value == pytest.approx(float(np.sum(x * y + np.exp(x) - y)), rel=1e-12)
    np.testing.assert_allclose(result.gradients["x"], y + np.exp(x), rtol=1e-12)
    np.testing.assert_allclose(result.gradients["y"], x - 1, rtol=1e-12)


def test_shapes_that_differ_still_meet_the_shape_rule():
    with pytest.raises(UsageError, match="shape mismatch"):
        gradcli.evaluate("sum(x + y)", {"x": np.ones(3), "y": np.ones(4)}, check=False)


def test_settings_made_once_keep_a_negative_zero_and_keep_no_refused_nan():
    from gradcli.gradcheck.evaluation import _CHANGED, _settings

    assert math.copysign(1.0, _settings(None, {"atol": 0.0}).atol) == 1.0
    assert math.copysign(1.0, _settings(None, {"atol": -0.0}).atol) == -1.0
    before = len(_CHANGED)
    for _ in range(70):  # a NaN tolerance is refused, as on the command line: nothing is kept
        with pytest.raises(UsageError, match="rtol is nan"):
            _settings(None, {"rtol": math.nan})
    assert len(_CHANGED) <= before + 1
