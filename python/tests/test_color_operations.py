"""torchvision's single-operation transforms (RandomInvert, RandomPosterize, ...): the Transform
methods the package makes of the crate's one table of them (signature, stub, repr, refusals,
order) and their pixels against Pillow's, given and drawn, on the CPU backend and, where a GPU
adapter opens, on the GPU."""
import inspect
import math
import pathlib

import numpy as np
import pytest
from PIL import Image, ImageOps

import gpuprep

from support import BACKENDS, PHOTOS, pipeline
import pillow_reference  # after support, which puts tools/ on the path

OPERATIONS = gpuprep._gpuprep.color_operations()
STUBS = (pathlib.Path(gpuprep.__file__).parent / "__init__.pyi").read_text().splitlines()


def rgb(path):
    return Image.open(path).convert("RGB")


def parameters(argument):
    """The method's parameters as the table declares them, as inspect writes them and the stub
    spells them."""
    if argument is None:
        return "(self, p: float = 0.5)"
    name, integer, _low, _high = argument
    return f"(self, {name}: {'int' if integer else 'float'}, p: float = 0.5)"


def allowed(argument):
    """A value the argument takes: 2 where its bounds allow it."""
    _name, _integer, low, high = argument
    return min(max(2, low), high)


def refused(argument):
    """A value past the argument's bounds, NaN where it has none."""
    _name, _integer, low, high = argument
    if math.isfinite(high):
        return math.nextafter(high, math.inf)
    return math.nextafter(low, -math.inf) if math.isfinite(low) else math.nan


@pytest.mark.parametrize("torchvision, method, summary, argument", OPERATIONS)
def test_each_operation_has_its_method_stub_and_repr(torchvision, method, summary, argument):
    assert f"    def {method}{parameters(argument)} -> Transform: ..." in STUBS, method
    made = getattr(gpuprep.Transform, method)
    assert (made.__name__, made.__qualname__) == (method, f"Transform.{method}")
    assert made.__doc__.startswith(f"{torchvision}(") and summary in made.__doc__
    signature = inspect.signature(made)
    assert str(signature.replace(return_annotation=inspect.Signature.empty)) == parameters(argument)
    given = {} if argument is None else {argument[0]: allowed(argument)}
    t = getattr(gpuprep.Transform(), method)(**given, p=0.2)
    assert t == getattr(gpuprep.Transform(), method)(*given.values(), 0.2)
    shown = "".join(f"{name}={value:g}, " for name, value in given.items())
    assert repr(t) == f"Transform({torchvision}({shown}p=0.2), To(uint8, hwc))"
    assert t.is_random
    # torchvision's default probability, 0.5.
    assert repr(getattr(gpuprep.Transform(), method)(**given)).endswith("p=0.5), To(uint8, hwc))")


@pytest.mark.parametrize("torchvision, method, summary, argument", OPERATIONS)
def test_bad_values_are_refused_by_name(torchvision, method, summary, argument):
    given = () if argument is None else (allowed(argument),)
    with pytest.raises(gpuprep.OptionsError, match=f"{method}'s probability"):
        getattr(gpuprep.Transform(), method)(*given, p=1.5)
    if argument is None:
        with pytest.raises(TypeError):
            getattr(gpuprep.Transform(), method)(2, 0.5)
        return
    with pytest.raises(gpuprep.OptionsError, match=f"{method}'s {argument[0]} must be"):
        getattr(gpuprep.Transform(), method)(refused(argument))
    with pytest.raises(TypeError, match=argument[0]):
        getattr(gpuprep.Transform(), method)()


def test_posterize_takes_whole_bits_from_0_to_8():
    with pytest.raises(gpuprep.OptionsError, match="bits must be an integer from 0 to 8, got 9"):
        gpuprep.Transform().random_posterize(bits=9)
    with pytest.raises(gpuprep.OptionsError, match="got 2.5"):
        gpuprep.Transform().random_posterize(2.5)
    # Pillow's posterize takes no float, nor a bool: torchvision would fail on them.
    for value in (3.0, True, "3"):
        with pytest.raises(gpuprep.OptionsError, match="bits must be an integer"):
            gpuprep.Transform().random_posterize(value)
    with pytest.raises(gpuprep.OptionsError, match="threshold must be a number"):
        gpuprep.Transform().random_solarize("128")
    # p too is refused by name, as the operation's own error.
    for p in ("x", None, True):
        with pytest.raises(gpuprep.OptionsError, match="random_invert's p must be a number"):
            gpuprep.Transform().random_invert(p=p)
    assert gpuprep.Transform().random_posterize(np.int64(3)) == gpuprep.Transform().random_posterize(3)


def test_a_method_called_again_keeps_its_place_and_another_goes_last():
    t = gpuprep.Transform().random_solarize(100).random_invert().random_posterize(bits=3, p=0.2)
    assert repr(t) == ("Transform(RandomSolarize(threshold=100, p=0.5), RandomInvert(p=0.5), "
                       "RandomPosterize(bits=3, p=0.2), To(uint8, hwc))")
    again = t.random_solarize(7, p=1.0)
    assert repr(again) == ("Transform(RandomSolarize(threshold=7, p=1), RandomInvert(p=0.5), "
                           "RandomPosterize(bits=3, p=0.2), To(uint8, hwc))")
    assert again != t and t == t.random_invert()
    # After RandomGrayscale and before the tensor, whenever they were called.
    late = gpuprep.Transform().random_equalize().to_tensor().grayscale(0.2).center_crop(8)
    assert repr(late) == ("Transform(CenterCrop((8, 8)), RandomGrayscale(p=0.2), "
                          "RandomEqualize(p=0.5), ToTensor())")


def test_the_pillow_reference_has_each_operation():
    assert sorted(pillow_reference.COLOR_OPS) == sorted(method for _, method, _, _ in OPERATIONS)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("torchvision, method, summary, argument", OPERATIONS)
def test_each_applied_equals_pillow(backend, torchvision, method, summary, argument):
    """With p=1, each photo as torchvision's PIL function (tools/pillow_reference.py) makes it."""
    given = None if argument is None else allowed(argument)
    t = getattr(gpuprep.Transform(), method)(*([] if given is None else [given]), p=1.0)
    _stream, _name, pillow = pillow_reference.COLOR_OPS[method]
    p = pipeline(backend)
    for path in PHOTOS:
        batch, outcomes = p.preprocess([path], t)
        assert np.array_equal(batch[0], np.asarray(pillow(rgb(path), given))), path
        assert outcomes[0]["params"]["color_ops"] == {method: True}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_chain_runs_in_the_order_given_and_p_0_changes_nothing(backend):
    p = pipeline(backend)
    solarized_first = gpuprep.Transform().random_solarize(128, p=1).random_posterize(2, p=1)
    posterized_first = gpuprep.Transform().random_posterize(2, p=1).random_solarize(128, p=1)
    untouched = gpuprep.Transform().random_invert(p=0.0).random_posterize(3, p=0.0)
    for path in PHOTOS[:3]:
        image = rgb(path)
        batch, _ = p.preprocess([path], solarized_first)
        want = np.asarray(ImageOps.posterize(ImageOps.solarize(image, 128), 2))
        assert np.array_equal(batch[0], want), path
        batch, _ = p.preprocess([path], posterized_first)
        other = np.asarray(ImageOps.solarize(ImageOps.posterize(image, 2), 128))
        assert np.array_equal(batch[0], other) and not np.array_equal(want, other), path
        batch, outcomes = p.preprocess([path], untouched)
        assert np.array_equal(batch[0], np.asarray(image)), path
        assert outcomes[0]["params"]["color_ops"] == {"random_invert": False,
                                                      "random_posterize": False}


@pytest.mark.parametrize("backend", BACKENDS)
def test_drawn_samples_equal_pillow_and_their_parameters_replay(backend):
    """With p=0.5 each sample draws whether each applies, as tools/pillow_reference.py draws it;
    the parameters an outcome records, given back, make the same pixels."""
    spec = {"resize": [64, 48], "grayscale": 0.3, "seed": 5,
            "color_ops": [{"op": "random_solarize", "threshold": 100.5, "p": 0.5},
                          {"op": "random_equalize", "p": 0.5},
                          {"op": "random_posterize", "bits": 3, "p": 0.5}]}
    t = (gpuprep.Transform().resize((48, 64)).grayscale(0.3).random_solarize(100.5)
         .random_equalize().random_posterize(3).with_seed(5))
    indices = list(range(12))
    paths = [PHOTOS[i % len(PHOTOS)] for i in indices]
    p = pipeline(backend)
    batch, outcomes = p.preprocess(paths, t, indices=indices)
    drawn = set()
    for image, path, index, outcome in zip(batch, paths, indices, outcomes):
        assert np.array_equal(image, pillow_reference.transformed(path, spec, index=index)), path
        want = pillow_reference.draw(spec, rgb(path).size, index)["color_ops"]
        assert outcome["params"]["color_ops"] == want
        drawn.update(want.items())
    assert len(drawn) == 6, drawn  # each operation both applied and not
    replayed, _ = p.preprocess(paths, t, params=[o["params"] for o in outcomes])
    assert np.array_equal(replayed, batch)
