"""lectorch: the helper package of the lectorch course.

The course teaches PyTorch from its primitives up and the resource accounting of
training: bytes, FLOPs and seconds. Chapters import the topic modules directly::

    >>> import lectorch
    >>> from lectorch import napkin
    >>> round(napkin.training_days(70e9, 15e12, num_gpus=1024, gpu="H100 SXM", mfu=0.5))
    144
"""

from lectorch._glue import glue
from lectorch.device import describe_device, get_device
from lectorch.exercises import check
from lectorch.i18n import set_language
from lectorch.randomness import seed_everything

__version__ = "0.1.0"

__all__ = ["__version__", "check", "describe_device", "get_device", "glue", "seed_everything", "set_language"]
