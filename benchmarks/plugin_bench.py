"""What the dbt plugin costs a plain `dbt build`: not installed, installed but off, switched on.

Run with `make bench-plugin` (benchmarks/.venv holds a regular, non-editable install, which is how
dbt discovers plugins). Two measurements, side by side in one run:

1. the plugin's own cost per dbt command when off: a fresh interpreter with dbt loaded imports
   dbt_oml, reads its `plugins` and instantiates the plugin as dbt does (median of N processes),
   against the same interpreter doing nothing more;
2. plain `dbt build` of the generated project, the three variants interleaved, median of N.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    off = _in_process(_PLUGIN_OFF, 20) - _in_process(_NOTHING, 20)
    dbt = str(BIN / "dbt")
    variants = {
        "dbt build, dbt-oml not installed": ([str(BIN / "python"), "-c", HIDDEN], {}),
        "dbt build, dbt-oml installed, plugin off": ([dbt], {}),
        "dbt build, plugin on (DBT_OML_PLUGIN=1)": ([dbt], {"DBT_OML_PLUGIN": "1"}),
    }
    samples: dict[str, list[float]] = {v: [] for v in variants}
    WORK.mkdir(parents=True, exist_ok=True)
    for r in range(args.repeats):
        for name, (command, extra) in variants.items():
            cwd = generate(WORK / f"plugin-{r}-{len(samples[name])}-{abs(hash(name))}", args.models)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENLINEAGE", "DBT_"))}
            env |= {"DO_NOT_TRACK": "1", **extra}
            wall, _ = measure([[*command, "build", "--profiles-dir", "."]], cwd, env)
            samples[name].append(wall)
            shutil.rmtree(cwd)
            print(f"  {name} #{r + 1}: {wall:.2f}s", file=sys.stderr)
    base = statistics.median(samples["dbt build, dbt-oml not installed"])
    print(f"plugin off, per dbt command (import + instantiate): {off * 1000:.1f} ms")
    print(f"measured {time.strftime('%Y-%m-%d')}, generated project +{args.models} models")
    print("| variant | wall s (median) | x not installed | min s | max s |")
    print("|---|---|---|---|---|")
    for name, walls in samples.items():
        med = statistics.median(walls)
        print(f"| {name} | {med:.2f} | {med / base:.3f} | {min(walls):.2f} | {max(walls):.2f} |")


if __name__ == "__main__":
    main()
