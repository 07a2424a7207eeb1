"""Every accelerate config loads through accelerate's own launcher on a CPU-only machine: the settings reach
the plugin that would run them (FSDP2, ZeRO-3), and the default one trains on the CPU in fp32."""

from __future__ import annotations

import pytest

from tests.support import REPO

CONFIGS = sorted((REPO / "configs" / "accelerate").glob("*.yaml"))


def launch_args(config):
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    args = launch_command_parser().parse_args(["--config_file", str(config), "train.py"])
    return _validate_launch_command(args)[0]


def test_the_expected_configs_exist():
    assert {c.stem for c in CONFIGS} >= {
        "cpu",
        "single_gpu",
        "multi_gpu",
        "fsdp",
        "deepspeed_zero2",
        "deepspeed_zero3",
    }


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.stem)
def test_config_passes_accelerate_launch_validation(config):
    args = launch_args(config)
    assert args.num_processes >= 1 and args.mixed_precision in ("no", "bf16")
    assert bool(args.use_cpu) is (config.stem == "cpu")


def test_fsdp_config_builds_the_fsdp2_plugin(monkeypatch):
    from accelerate.utils import FullyShardedDataParallelPlugin
    from accelerate.utils.launch import prepare_multi_gpu_env

    args = launch_args(REPO / "configs" / "accelerate" / "fsdp.yaml")
    assert args.use_fsdp
    for key, value in prepare_multi_gpu_env(args).items():
        if key.startswith("FSDP"):
            monkeypatch.setenv(key, value)
    plugin = FullyShardedDataParallelPlugin()
    assert plugin.fsdp_version == 2 and plugin.state_dict_type.name == "FULL_STATE_DICT"
    assert plugin.auto_wrap_policy.__name__ == "transformer_auto_wrap_policy"


def test_zero3_config_builds_a_stage_3_deepspeed_plugin():
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.utils import DeepSpeedPlugin

    config = load_config_from_file(str(REPO / "configs" / "accelerate" / "deepspeed_zero3.yaml"))
    assert launch_args(REPO / "configs" / "accelerate" / "deepspeed_zero3.yaml").use_deepspeed
    plugin = DeepSpeedPlugin(**config.deepspeed_config)
    assert plugin.zero_stage == 3 and plugin.zero3_init_flag


def test_device_precision_on_this_machine_follows_accelerate():
    import torch

    from pipelines.train import device_precision

    device, precision = device_precision()
    if torch.cuda.is_available():
        assert device == "cuda" and precision["bf16"] == torch.cuda.is_bf16_supported()
    else:
        assert (device, precision) == ("cpu", {"bf16": False, "fp16": False, "use_cpu": True})
