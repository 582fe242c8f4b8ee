"""TrainConfig declared once: every field of it that the command line takes is one flag of
``graphpe train`` (and a config file's key), every flag of train is such a field or a setting
of the model, the data or the process, and the names the training loop maps agree."""

import argparse
import dataclasses

import pytest

from graphpe.cli import build_parser, command_parser
from graphpe.runtime import PRECISIONS
from graphpe.train import OPTIMIZERS
from graphpe.train_config import (
    OPTIMIZER_NAMES,
    PRECISION_NAMES,
    TrainConfig,
    cli_settings,
    config_from_args,
)

# train's flags that are not TrainConfig fields: the data, the model, the grid, the process
NOT_CONFIG = {"help", "dataset", "root", "pe", "download", "config", "model", "attention",
              "mpnn", "residual", "norm", "channels", "layers", "dropout", "heads",
              "local_epochs", "global_layers", "in_dropout", "attn_dropout", "pe_combine",
              "pe_channels", "head_hidden",
              "pool", "graph_token", "splits", "retain_memory", "task", "pair_pe", "pair_max_dist",
              "link_negatives",
              "decoder", "hops", "labels"}
# TrainConfig fields without a flag: set from Python (graphpe.train.fit's callers)
NO_FLAG = {"resample_pe", "shuffle", "sync_batchnorm"}


def _train_actions() -> dict[str, argparse.Action]:
    return {a.dest: a for a in command_parser(build_parser(), "train")._actions}


def test_every_field_is_one_flag_and_every_flag_a_field_or_a_known_other():
    actions = _train_actions()
    by_dest = {s.dest: s for s in cli_settings()}
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    assert {s.field for s in cli_settings()} == fields - NO_FLAG
    assert set(actions) == set(by_dest) | NOT_CONFIG
    for dest, setting in by_dest.items():
        action = actions[dest]
        assert action.help == setting.help and action.option_strings[0] == f"--{setting.flag}"
        assert action.default == setting.default, dest
        assert action.choices == setting.choices


def test_the_flags_defaults_give_the_declared_config():
    args = command_parser(build_parser(), "train").parse_args(
        ["--dataset", "CSL", "--root", "."])
    assert config_from_args(args, progress=True) == TrainConfig()
    args = command_parser(build_parser(), "train").parse_args(
        ["--dataset", "CSL", "--root", ".", "--warmup", "0", "--num-neighbors", "5,3",
         "--no-progress", "--undirected", "--precision", "bf16"])
    config = config_from_args(args)
    assert (config.warmup_epochs, config.num_neighbors, config.progress, config.undirected,
            config.precision) == (0, (5, 3), False, True, "bf16")


def test_the_loop_maps_every_declared_name():
    assert tuple(OPTIMIZERS) == OPTIMIZER_NAMES
    assert tuple(PRECISIONS) == PRECISION_NAMES


@pytest.mark.parametrize(("settings", "message"), [
    ({"optimizer": "sgd"}, r"^optimizer must be one of \('adamw', 'adam'\), got 'sgd'$"),
    ({"precision": "fp8"}, r"^precision must be one of \('fp32', 'bf16', 'fp16'\)"),
    ({"epochs": 0}, r"^epochs must be an int >= 1, got 0$"),
])
def test_bad_settings_name_the_field(settings, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**settings)
