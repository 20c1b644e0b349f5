#!/usr/bin/env python3
"""One line per run of a results.json: model, batch, variant, steady samples/s, MFU, accuracy.
Usage: summarize_variants.py results.json"""
import json
import sys

for r in json.load(open(sys.argv[1]))["runs"]:
    sps = r.get("steady_samples_per_s")
    mfu = r.get("mfu_pct")
    acc = r.get("test_accuracy_pct")
    print(f'{r["device"]:7} {r["model"]:9} b{r["batch_size"]:<4} {r.get("variant", "eager"):12} '
          f'{(f"{sps:,.0f}" if sps else "-"):>10} samples/s  MFU {(f"{mfu:.2f} %" if mfu is not None else "-"):>8}  '
          f'acc {acc if acc is not None else "-"}  {r.get("status")} {r.get("variant_note", "")}')
