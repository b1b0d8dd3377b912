"""How the command line reads `name=value` pairs and method knobs given as extra flags
(`--n-features 2000`): shared by every sub-command and the benches that take --param."""

from __future__ import annotations

import json

from engine.core.errors import InputError


def value(text: str):
    """'3' → 3, '0.5' → 0.5, 'true' → True, 'none' → None, else the string."""
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def pairs(items: list[str], what: str) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            raise InputError(f"{what} must look like name=value. Got {item!r}.")
        key, val = item.split("=", 1)
        out[key.strip().replace("-", "_")] = value(val)
    return out


def extra_flags(extra: list[str]) -> dict:
    """Unknown `--knob value` pairs become method params."""
    out, i = {}, 0
    while i < len(extra):
        flag = extra[i]
        if not flag.startswith("--") or i + 1 >= len(extra):
            raise InputError(f"unrecognised argument {flag!r}; method knobs go as --name value.")
        out[flag[2:].replace("-", "_")] = value(extra[i + 1])
        i += 2
    return out


def add_data_arguments(parser) -> None:
    """The dataset's options, and the shortcuts for a user's own file (train and tune)."""
    parser.add_argument("--data-option", action="append", default=[],
                        help="dataset option name=value (csv: path, label, categorical, ...)")
    parser.add_argument("--csv", help="shortcut: --dataset csv --data-option path=CSV")
    parser.add_argument("--label", help="label column for --csv")
    parser.add_argument("--npz", help="shortcut: --dataset npz --data-option path=NPZ")


def dataset_and_options(args) -> tuple[str, dict]:
    """(dataset, data_options) from --dataset, --data-option and the --csv / --npz
    shortcuts (`add_data_arguments`)."""
    options = pairs(args.data_option, "--data-option")
    dataset = args.dataset
    if args.csv:
        dataset, options["path"] = "csv", args.csv
        if args.label:
            options["label"] = args.label
    if args.npz:
        dataset, options["path"] = "npz", args.npz
    return dataset, options
