#!/usr/bin/env python3
"""Reads trainscope's TensorBoard event files with TensorBoard's own EventAccumulator.

Usage: read_tfevents.py LOGDIR [--require TAG]... [--runs N]

Every folder below LOGDIR that holds an events.out.tfevents.* file is one run. For each run the
script prints its scalar tags with the number of points, the first and last step and the last
value. Exit status: 0 = every run has every required tag; 1 = no run found, fewer runs than
--runs, or a run lacks a required tag (named on stderr); 2 = TensorBoard is not installed.
Required by default: the tags every finished run has (docs/tensorboard.md); add more with
--require, e.g. --require train/loss --require telemetry/gpu0/util_pct on a GPU host.
"""
import argparse
import os
import sys

DEFAULT_TAGS = ["epoch/train_loss", "epoch/train_accuracy_pct", "run/steady_samples_per_s", "phases/step_ms"]


def run_folders(logdir):
    for root, _dirs, files in sorted(os.walk(logdir)):
        if any("tfevents" in f for f in files):
            yield root


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logdir")
    ap.add_argument("--require", action="append", default=[], metavar="TAG", help="a tag every run must have")
    ap.add_argument("--runs", type=int, default=1, help="fewest runs expected (default 1)")
    args = ap.parse_args()
    try:
        from tensorboard.backend.event_processing import event_accumulator as ea
    except ImportError as e:
        print(f"read_tfevents.py: TensorBoard is not installed ({e}); pip install tensorboard", file=sys.stderr)
        return 2
    required = DEFAULT_TAGS + args.require
    runs = list(run_folders(args.logdir))
    missing = []
    for run in runs:
        acc = ea.EventAccumulator(run, size_guidance={ea.SCALARS: 0})  # 0 = keep every point
        acc.Reload()
        tags = acc.Tags().get("scalars", [])
        print(f"{os.path.relpath(run, args.logdir)}: {len(tags)} scalar tags")
        for tag in sorted(tags):
            ev = acc.Scalars(tag)
            print(f"  {tag:<40} {len(ev):>6} points  steps {ev[0].step}..{ev[-1].step}  last {ev[-1].value:.6g}")
        missing += [(run, t) for t in required if t not in tags]
    if len(runs) < args.runs:
        print(f"read_tfevents.py: {len(runs)} run(s) with event files under {args.logdir}, expected at least "
              f"{args.runs}", file=sys.stderr)
        return 1
    for run, tag in missing:
        print(f"read_tfevents.py: {run} lacks the tag {tag}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
