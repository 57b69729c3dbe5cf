"""Exercises of chapter 02, device placement."""

from lectorch.device import allocator_bytes
from lectorch.exercises import Case, Exercise, register
from lectorch.memory import tensor_bytes
from lectorch.transfer import transfer_seconds

register(
    Exercise(
        id="device-gpu-bytes",
        title="the bytes of a float16 tensor created on the GPU",
        kind="value",
        expected=tensor_bytes((256, 4096), "fp16"),
        hint="elements × bytes per element; where the tensor lives does not change its size.",
        slips={
            2.0: "float16 has 2 bytes per element, not 4.",
            8.0: "count bytes, not bits.",
            1 / 2**20: "the answer is in bytes, not MiB.",
        },
    )
)


def _predicted_delta(tensors):
    return sum(allocator_bytes(tensor_bytes(shape, dtype)) for shape, dtype in tensors)


register(
    Exercise(
        id="device-allocated-delta",
        title="predicted_delta(tensors) predicts torch.cuda.memory_allocated's growth",
        kind="function",
        hint="for each (shape, dtype): bytes = elements × bytes per element, rounded UP to a multiple of 512; then sum.",
        cases=tuple(
            Case(args=(tensors,), expected=_predicted_delta(tensors), description=desc)
            for tensors, desc in [
                ([((32, 32), "fp32"), ((32, 32), "fp32")], "the lecture's two 32×32 float32 matrices"),
                ([((3,), "fp32")], "one tiny tensor"),
                ([((100,), "fp16"), ((100,), "fp16")], "two small float16 vectors"),
                ([((1000,), "fp32")], "1000 float32 numbers"),
                ([((16, 16), "bf16"), ((64, 64), "fp32"), ((7,), "int64")], "three tensors of different dtypes"),
            ]
        ),
    )
)

register(
    Exercise(
        id="device-pcie-seconds",
        title="the seconds to load 7B bf16 parameters over PCIe 4.0 x16",
        kind="value",
        expected=transfer_seconds(7e9 * 2, 31.5e9),
        rtol=2e-3,
        hint="seconds = bytes / (bytes per second); bytes = parameters × bytes per parameter; 1 GB = 1e9 bytes.",
        slips={
            2.0: "bf16 has 2 bytes per parameter; you used 4 (fp32).",
            0.5: "each bf16 parameter is 2 bytes, not 1.",
            8.0: "GB/s counts bytes: no factor of 8 for bits here.",
            1000.0: "the answer is in seconds, not milliseconds.",
        },
    )
)
