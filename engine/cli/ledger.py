"""`python -m engine ledger [--cap NAME=EPS ...] [--delta D] [--json]`: the privacy
ledger of the run store ($DPSYNTH_RUNS / $DPSYNTH_HOME), and its caps."""

from __future__ import annotations


from engine.core.errors import InputError
from engine.core.jsonsafe import dumps
from engine.privacy.ledger import DEFAULT_DELTA, PUBLIC_NOTE, Ledger, epsilon_words


def main(args) -> int:
    """`python -m engine ledger [--cap NAME=EPS ...] [--delta D] [--json]`."""
    led = Ledger()
    for item in args.cap or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"--cap must look like digits=5 (or digits=none). Got {item!r}.")
        cap = None if value.strip().lower() in ("none", "off", "") else _number(value, "--cap")
        delta = None if args.delta is None else _number(args.delta, "--delta")
        key = led.set_cap(name, cap, delta=delta, by="command line")
        print(f"cap for {key}: {'none' if cap is None else f'{cap:g}'}", flush=True)
        if note := led.over_cap(key):
            print(f"warning: {note}", flush=True)
    rows = led.datasets()
    if args.json:
        print(dumps({"store": str(led.root), "default_delta": DEFAULT_DELTA,
                                   "datasets": rows}, indent=2))
        return 0
    print(f"privacy ledger of {led.root} (composed exactly; built-in data is {PUBLIC_NOTE}; "
          "gallery runs are charged where they were built)")
    if not rows:
        print("  no runs yet")
    for d in rows:
        cap = "" if d["cap"] is None else f", cap {d['cap']:g}"
        print(f"  {d['label']}: ε = {epsilon_words(d['epsilon'])} at δ = {d['delta']:g} "
              f"over {len(d['runs'])} run(s){cap}  [{d['dataset']}]")
        if d["in_words"]:
            print(f"    {d['in_words']}")
        for s in d["sweeps"]:
            print(f"    sweep {s['sweep']}: {s['runs']} run(s), ε = {epsilon_words(s['epsilon'])}")
    return 0


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{what} needs a number. Got {text!r}.") from None
