"""What the dbt plugin costs a plain `dbt build`: not installed, installed but off, switched on.

Run with `make bench-plugin` (benchmarks/.venv holds a regular, non-editable install, which is how
dbt discovers plugins). Two measurements, side by side in one run:

1. the plugin's own cost per dbt command when off: a fresh interpreter with dbt loaded imports
   dbt_oml, reads its `plugins` and instantiates the plugin as dbt does (median of N processes),
   against the same interpreter doing nothing more;
2. plain `dbt build` of the generated project, the variants interleaved, median of N; with the
   plugin on, each model's COMPLETE goes out as it finishes (its columns query, its lineage, its
   event), so the per-model cost is (plugin on - not installed) / models.

`--profile` adds the variant switched on from the profile (`plugins: [{module: dbt_oml.duckdb}]`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from run import BIN, HIDDEN, WORK, generate, measure

_SETUP = "import dbt.plugins.manager, dbt.flags, click\n"
_PLUGIN_OFF = (
    "import time\nt = time.perf_counter()\n"
    "import dbt_oml\nfor cls in dbt_oml.plugins: cls(project_name='p')\n"
    "print(time.perf_counter() - t)\n"
)
_NOTHING = "import time\nt = time.perf_counter()\nprint(time.perf_counter() - t)\n"


def _in_process(code: str, repeats: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DBT_", "OPENLINEAGE"))}
    runs = [
        float(
            subprocess.run(
                [str(BIN / "python"), "-c", _SETUP + code],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(repeats)
    ]
    return statistics.median(runs)


PROFILE_SWITCH = "_PLUGIN_IN_PROFILE"


def _plugin_in_profile(profiles: Path) -> None:
    """The bundled profile's local target with the dbt_oml.duckdb plugin entry."""
    anchor = "          alias: dw\n    servers:\n"
    entry = "      plugins:\n        - module: dbt_oml.duckdb\n"
    text = profiles.read_text()
    profiles.write_text(text.replace(anchor, "          alias: dw\n" + entry + "    servers:\n"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="also the profile-switched variant")
    args = parser.parse_args()
    off = _in_process(_PLUGIN_OFF, 20) - _in_process(_NOTHING, 20)
    dbt = str(BIN / "dbt")
    variants = {
        "dbt build, dbt-oml not installed": ([str(BIN / "python"), "-c", HIDDEN], {}),
        "dbt build, dbt-oml installed, plugin off": ([dbt], {}),
        "dbt build, plugin on (DBT_OML_PLUGIN=1)": ([dbt], {"DBT_OML_PLUGIN": "1"}),
    }
    if args.profile:
        variants["dbt build, plugin on (profiles.yml plugins:)"] = ([dbt], {PROFILE_SWITCH: "1"})
    samples: dict[str, list[float]] = {v: [] for v in variants}
    WORK.mkdir(parents=True, exist_ok=True)
    for r in range(args.repeats):
        for name, (command, extra) in variants.items():
            cwd = generate(WORK / f"plugin-{r}-{len(samples[name])}-{abs(hash(name))}", args.models)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENLINEAGE", "DBT_"))}
            env |= {"DO_NOT_TRACK": "1", **extra}
            if env.pop(PROFILE_SWITCH, None):
                _plugin_in_profile(cwd / "profiles.yml")
            wall, _ = measure([[*command, "build", "--profiles-dir", "."]], cwd, env)
            samples[name].append(wall)
            shutil.rmtree(cwd)
            print(f"  {name} #{r + 1}: {wall:.2f}s", file=sys.stderr)
    base = statistics.median(samples["dbt build, dbt-oml not installed"])
    print(f"plugin off, per dbt command (import + instantiate): {off * 1000:.1f} ms")
    print(f"measured {time.strftime('%Y-%m-%d')}, generated project +{args.models} models")
    print("| variant | wall s (median) | x not installed | ms per model over not installed |")
    print("|---|---|---|---|")
    for name, walls in samples.items():
        med = statistics.median(walls)
        per_model = (med - base) / args.models * 1000
        print(f"| {name} | {med:.2f} | {med / base:.3f} | {per_model:+.1f} |")


if __name__ == "__main__":
    main()
