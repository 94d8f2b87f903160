"""Which microphones and speakers exist, or one clear reason why none can be used."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AudioDevice:
    index: int
    name: str
    inputs: int
    outputs: int
    default_sample_rate: float


@dataclass(frozen=True)
class AudioDevices:
    devices: tuple[AudioDevice, ...]
    problem: str | None = None

    @property
    def inputs(self) -> tuple[AudioDevice, ...]:
        return tuple(d for d in self.devices if d.inputs > 0)

    @property
    def outputs(self) -> tuple[AudioDevice, ...]:
        return tuple(d for d in self.devices if d.outputs > 0)

    def summary(self) -> str:
        if self.problem:
            return self.problem
        return f"{len(self.inputs)} input and {len(self.outputs)} output devices"


def list_audio_devices() -> AudioDevices:
    """Never raises: a machine with no sound card or no PortAudio gets a reason instead."""
    try:
        import sounddevice
    except OSError as error:
        return AudioDevices((), f"no audio: PortAudio is not installed ({error}); text only")
    try:
        raw = sounddevice.query_devices()
    except sounddevice.PortAudioError as error:
        return AudioDevices((), f"no audio devices ({error}); text only")
    devices = tuple(
        AudioDevice(
            index=int(entry["index"]),
            name=str(entry["name"]),
            inputs=int(entry["max_input_channels"]),
            outputs=int(entry["max_output_channels"]),
            default_sample_rate=float(entry["default_samplerate"]),
        )
        for entry in raw
    )
    if not devices:
        return AudioDevices((), "no audio devices found; text only")
    return AudioDevices(devices)
