#!/usr/bin/env python3
"""A/B of two `swiftrtc` builds as the relay under fan-out: which one costs less per forwarded packet.

Single fan-out runs swing by ±20% on a shared machine (the host's load lands on the kernel side:
sendmmsg and loopback delivery), more than most relay changes move. This runs
`swiftrtc-bench --only relay` with --swiftrtc A, then B, alternating, ROUNDS times, and prints per
build the medians of: the relay's user CPU per forwarded packet (its own code — the steadier
number), its whole CPU per forwarded packet, and the ratio to the recv + sendmmsg floor.

  bench/relay_ab.py OLD_SWIFTRTC NEW_SWIFTRTC [--players 480] [--rounds 5] [--window 8] [--simulcast]

--simulcast compares the simulcast fan-out's step instead (issue 22's row: three layers in, one
to each player). A "build" may be a script that runs the real binary with other flags (e.g. a
`serve` with --player-remb): what the bench runs as --swiftrtc.

Build each with `swift build -c release -Xswiftc -cross-module-optimization --product swiftrtc` and
copy .build/release/swiftrtc aside (the bench itself must be built too: --product swiftrtc-bench).
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(bench: Path, swiftrtc: str, players: int, window: float, simulcast: bool) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([str(bench), "--only", "relay", "--fanout", str(players), "--fanout-window", str(window),
                        "--swiftrtc", swiftrtc, "--json", out.name],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        report = json.load(open(out.name))
    steps = report.get("relay_simulcast_fanout" if simulcast else "relay_fanout", [])
    step = next((s for s in steps if s.get("players") == players), None)
    if step is None:
        sys.exit(f"relay_ab: no {'simulcast ' if simulcast else ''}fan-out step at {players} players with {swiftrtc}")
    if simulcast and step.get("floor_cpu_us_per_forwarded_packet") and step.get("relay_cpu_us_per_forwarded_packet"):
        # The simulcast steps carry the floor, not the ratio.
        step["relay_vs_floor"] = round(step["relay_cpu_us_per_forwarded_packet"] / step["floor_cpu_us_per_forwarded_packet"], 3)
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--players", type=int, default=480)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--window", type=float, default=8)
    parser.add_argument("--simulcast", action="store_true", help="the simulcast fan-out's step")
    parser.add_argument("--bench", default=str(ROOT / ".build/release/swiftrtc-bench"))
    args = parser.parse_args()
    for binary in (args.a, args.b, args.bench):
        if not Path(binary).is_file():
            sys.exit(f"relay_ab: {binary} not found")
    keys = {"user": "relay_user_cpu_us_per_forwarded_packet", "whole": "relay_cpu_us_per_forwarded_packet",
            "vs_floor": "relay_vs_floor"}
    results = {args.a: {k: [] for k in keys}, args.b: {k: [] for k in keys}}
    for i in range(args.rounds):
        for binary in (args.a, args.b):
            step = run(Path(args.bench), binary, args.players, args.window, args.simulcast)
            for k, field in keys.items():
                if step.get(field) is not None:
                    results[binary][k].append(step[field])
            # The packet rates say how starved the publisher was: per-player fixed costs (feedback,
            # ticks) weigh more per forwarded packet when fewer come in.
            print(f"round {i + 1} {binary}: " + ", ".join(f"{k} {step.get(f)}" for k, f in keys.items())
                  + f" ({step.get('inbound_pps')} packets/s in, {step.get('forwarded_pps_per_player')} out per player)", flush=True)
    for binary, values in results.items():
        medians = {k: (round(statistics.median(v), 3) if v else None) for k, v in values.items()}
        print(f"{binary}: median user {medians['user']} us, whole {medians['whole']} us, "
              f"vs floor {medians['vs_floor']} ({args.rounds} runs at {args.players} players{', simulcast' if args.simulcast else ''})")


if __name__ == "__main__":
    main()
