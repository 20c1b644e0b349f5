#!/usr/bin/env bash
# Builds trainscope on the GPU host against the PyTorch wheel's LibTorch (CUDA) and runs the
# test suite and the measurements recorded in bench/RESULTS.md. Usage (GPU host, repo root):
#   bash bench/gpu/build_and_run.sh STAGE...   (stages: build test default smoke paper bench tele
#   lm lm-loss lm-recipe vit lm-profile gen infer-gen gen-outputs self-gpu sampler-ab self-cpu self-cell malloc threads-e2e cpus cpu-threads rundev slowfields pcie self-cnn cpu-pin telecost tboard graphs variants vs-python default-graphs ddp1 pipeline-bench stream measure aoti; see each below)
# Needs: .device/debs/*.deb (Debian -dev packages, see README.md#on-a-gpu-host), $OUT for logs.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
mkdir -p /opt/deps; for f in .device/debs/*.deb; do dpkg -x "$f" /opt/deps; done
ln -sf /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 /opt/deps/usr/lib/x86_64-linux-gnu/libsqlite3.so
ln -sf /usr/lib/x86_64-linux-gnu/libz.so.1 /opt/deps/usr/lib/x86_64-linux-gnu/libz.so
T=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
export CMAKE_PREFIX_PATH=$T:/opt/deps/usr
export LD_LIBRARY_PATH=$T/../../lib:/opt/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
# Debian's multiarch headers (libjpeg62-turbo's jconfig.h) before the host's own: otherwise the
# host's /usr/include/x86_64-linux-gnu/jconfig.h (libjpeg 8) pairs with Debian's libjpeg.so.62, and
# decoding fails with "Wrong JPEG library version: library is 62, caller expects 80" (H200 ctest,
# bench/RESULTS.md sixteenth session; this line not yet run there).
export CPATH=/opt/deps/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}
# nccl.h for c10d's ProcessGroupNCCL (the wheel's NCCL comes in the nvidia-nccl package)
NCCL_INC=$(python3 -c 'import nvidia.nccl as n;print(list(n.__path__)[0])' 2>/dev/null)/include
[ -f "$NCCL_INC/nccl.h" ] && export CPATH=$NCCL_INC${CPATH:+:$CPATH}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
DATA=/opt/deps/usr/share/datasets/fashion-mnist
B=${B:-/tmp/ts-build}  # B=build-gpu keeps it in the repo copy, which a warm host keeps between calls
TS=$B/trainscope
# A GPT-2 checkpoint for `trainscope infer` (stages gen, infer-gen): a one-step gpt2 run on random
# token ids (generation speed does not depend on the weights), made once per host.
gen_checkpoint() {
  [ -f /tmp/tok/train.bin ] || { mkdir -p /tmp/tok && python3 -c "import numpy as np; r=np.random.default_rng(0); [r.integers(0,50257,n,dtype=np.uint16).tofile('/tmp/tok/'+f) for f,n in (('train.bin',4000000),('val.bin',200000))]"; }
  [ -d /tmp/runs/gen-ckpt ] || timeout 120 $TS run --data-format tokens --data /tmp/tok -m gpt2 --no-inference --no-profile \
    --no-progress --out /tmp/runs -d cuda:0 --variants eager --seq-len 1024 -b 8 --max-steps 1 --min-time 0 --name gen-ckpt \
    > "$OUT/gen-ckpt.log" 2>&1  # one variant: one checkpoint (two made every infer figure twice)
}
for stage in "$@"; do
  case $stage in
    build)
      { nvidia-smi; nvidia-smi -q -d POWER | head -40; python3 -c 'import torch;print(torch.__version__, torch.version.cuda)'; } > "$OUT/host.txt" 2>&1
      cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DTRAINSCOPE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DTRAINSCOPE_BUILD_TESTS=${TESTS:-ON} \
        -DGTest_DIR=/opt/deps/usr/lib/x86_64-linux-gnu/cmake/GTest > "$OUT/build.log" 2>&1 &&
      cmake --build $B -j16 >> "$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
      echo "build ok";;
    test)
      (cd $B && ctest -j${CTEST_J:-8} --output-on-failure > "$OUT/ctest.log" 2>&1); grep -E "tests passed|\*\*\*|Failed|SEGFAULT|Not Run|Timeout" "$OUT/ctest.log" | tail -40;;
    pack)
      # everything under $OUT as one archive (the device tool returns at most 8 files)
      tar czf /tmp/logs.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/logs.tgz "$OUT/logs.tgz";;
    crashes)
      # a test process that crashed under ctest, again under cuda-gdb for its backtrace
      # (CRASH_TESTS: "binary:gtest_filter" separated by spaces)
      for t in ${CRASH_TESTS:-test_trainer:Matrix.RunFolderRemovedMidMatrixIsAnIoAbort test_cli:CliIdentity.ThreadsVariantSetsEachRunsIntraOpThreads}; do
        bin=${t%%:*}; filt=${t#*:}
        (cd $B/tests && TS_TEST=1 timeout 240 cuda-gdb -batch -ex run -ex bt -ex "info threads" -ex "thread apply all bt 12" \
          --args ./$bin --gtest_filter="$filt") > "$OUT/crash-$bin.log" 2>&1
        echo "== $t"; grep -v "^\[New Thread\|^\[Thread .* exited\]" "$OUT/crash-$bin.log" | tail -60
      done;;
    lm)
      # GPT-2 124M training (docs/language-models.md) against the Python peer (bench/lm_peer.py) in
      # one invocation: random GPT-2 token ids (throughput does not depend on the values) as
      # nanoGPT-style train.bin/val.bin, B16 x T1024 on cuda:0; B4 x T256 bf16 on the CPU cores.
      mkdir -p /tmp/tok && python3 -c "import numpy as np; r=np.random.default_rng(0); [r.integers(0,50257,n,dtype=np.uint16).tofile('/tmp/tok/'+f) for f,n in (('train.bin',4000000),('val.bin',200000))]"
      LMARGS="--data-format tokens --data /tmp/tok -m gpt2 --weight-decay 0.1 --no-inference --no-profile --no-progress --out /tmp/runs"
      { timeout 200 $TS run $LMARGS -d cuda:0 --seq-len 1024 -b 16 --variants eager,bf16,tf32,graphs+bf16 --max-steps 60 --name lm-gpu
        python3 -c "import json;[print(r['run_id'], r['status'], r.get('language_model',{}) and r['language_model'].get('steady_tokens_per_s'), r.get('mfu_pct'), r['language_model'] and r['language_model'].get('attention'), r['language_model'] and r['language_model'].get('loss'), r['optimizer_impl']) for r in json.load(open('/tmp/runs/lm-gpu/results.json'))['runs']]"
        PYTHONUNBUFFERED=1 timeout 60 python3 bench/lm_peer.py train --steps 30
        PYTHONUNBUFFERED=1 timeout 60 python3 bench/lm_peer.py train --steps 30 --graph
        timeout 100 $TS run $LMARGS -d cpu --seq-len 256 -b 4 --variants bf16 --max-steps 14 --warmup-steps 4 --min-time 0 --name lm-cpu
        PYTHONUNBUFFERED=1 timeout 60 python3 bench/lm_peer.py train --device cpu --batch 4 --seq 256 --steps 12 --warmup 3
        PYTHONUNBUFFERED=1 timeout 150 python3 bench/lm_peer.py train --steps 30 --compile
      } 2>&1 | tee "$OUT/lm.log"
      cp /tmp/runs/lm-gpu/results.json "$OUT/lm-gpu-results.json"; cp /tmp/runs/lm-cpu/results.json "$OUT/lm-cpu-results.json";;
    lm-loss)
      # The fused linear cross-entropy against the full logits (docs/language-models.md#fused-kernels):
      # gpt2 B16 x T1024 on cuda:0, bf16 and graphs+bf16, in one invocation alternating fused, full,
      # fused, full (--lm-loss): tokens/s, MFU, the forward and backward phases (the fused loss
      # moves the projection's backward products into the forward phase) and the device's peak
      # allocated memory (the full path holds the [16384, 50304] logits in bf16 and fp32).
      [ -f /tmp/tok/train.bin ] || { mkdir -p /tmp/tok && python3 -c "import numpy as np; r=np.random.default_rng(0); [r.integers(0,50257,n,dtype=np.uint16).tofile('/tmp/tok/'+f) for f,n in (('train.bin',4000000),('val.bin',200000))]"; }
      LARGS="--data-format tokens --data /tmp/tok -m gpt2 --weight-decay 0.1 --no-inference --no-profile --no-progress --out /tmp/runs -d cuda:0 --seq-len 1024 -b 16 --variants bf16,graphs+bf16 --max-steps 60"
      { for n in fused-1:fused full-1:full fused-2:fused full-2:full; do timeout 110 $TS run $LARGS --lm-loss ${n#*:} --name lm-loss-${n%:*}; done
        python3 -c "
import json
for n in ('fused-1', 'full-1', 'fused-2', 'full-2'):
    for r in json.load(open('/tmp/runs/lm-loss-%s/results.json' % n))['runs']:
        lm, ph = r.get('language_model') or {}, r.get('phases') or {}
        print(n, r['run_id'], r['status'], lm.get('loss'), 'tok/s', lm.get('steady_tokens_per_s'), 'MFU', r.get('mfu_pct'), 'fwd/bwd ms', ph.get('forward_ms'), ph.get('backward_ms'), 'peak GiB', (r.get('device_peak_allocated_bytes') or 0) / 2**30, 'val', lm.get('val_loss'), repr(r.get('variant_note')))"
      } 2>&1 | tee "$OUT/lm-loss.log"
      for n in fused-1 full-1 fused-2 full-2; do cp /tmp/runs/lm-loss-$n/results.json "$OUT/lm-loss-$n-results.json"; done;;
    vit)
      # ViT-S/16 (docs/workloads.md#vision-transformers) at 224 px, B256, bf16 and graphs+bf16 on
      # cuda:0 against timm's vit_small_patch16_224 through the Python peer (bench/lm_peer.py vit:
      # eager and torch.compile) in one invocation, under 300 s. Both sides: 1000 classes, AdamW
      # (lr 1e-3, weight decay 0.01: PyTorch's AdamW default, the peer's), fused on CUDA. trainscope
      # trains on seeded synthetic 3 x 224 x 224 images (10 steps an epoch), copied from pinned
      # host memory each step; the peer trains on one batch already on the GPU.
      printf '[data]\nformat = "synthetic"\nsynthetic_train = 2560\nsynthetic_test = 256\nsynthetic_channels = 3\nsynthetic_size = 224\nsynthetic_classes = 1000\n' > /tmp/vit224.toml
      { timeout 120 $TS run --config /tmp/vit224.toml -m vit-s -d cuda:0 -b 256 --variants bf16,graphs+bf16 -e 10 --max-steps 60 \
          --weight-decay 0.01 --no-inference --no-profile --no-progress --out /tmp/runs --name vit-gpu
        python3 -c "import json;[print(r['run_id'], r['status'], r.get('steady_samples_per_s'), 'img/s', r.get('mfu_pct'), '% MFU', r.get('forward_flops_per_sample'), r.get('optimizer_impl')) for r in json.load(open('/tmp/runs/vit-gpu/results.json'))['runs']]"
        PYTHONUNBUFFERED=1 timeout 50 python3 bench/lm_peer.py vit --steps 30
        PYTHONUNBUFFERED=1 timeout 120 python3 bench/lm_peer.py vit --steps 30 --compile
      } 2>&1 | tee "$OUT/vit.log"
      cp /tmp/runs/vit-gpu/results.json "$OUT/vit-gpu-results.json";;
    lm-recipe)
      # The training recipe on the GPU (docs/language-models.md#the-training-recipe): a warm-up and
      # cosine schedule under graphs+bf16 (the fused AdamW's tensor learning rate, LibTorch >= 2.2,
      # filled before each replay: loss_checks[].learning_rate must follow the schedule and the
      # variant_note stay empty), --grad-accum 4 (eager; graphs fall back with a note), a target
      # loss with its energy from NVML, and two sequence lengths (RQ2 memory over batch and T).
      [ -f /tmp/tok/train.bin ] || { mkdir -p /tmp/tok && python3 -c "import numpy as np; r=np.random.default_rng(0); [r.integers(0,50257,n,dtype=np.uint16).tofile('/tmp/tok/'+f) for f,n in (('train.bin',4000000),('val.bin',200000))]"; }
      printf '[train]\nnan_check_interval = 5\n' > /tmp/lm-recipe.toml  # a loss check (and its rate) every 5 steps
      RARGS="-c /tmp/lm-recipe.toml --data-format tokens --data /tmp/tok -m gpt2 --weight-decay 0.1 --grad-clip 1 --no-inference --no-profile --no-progress --out /tmp/runs -d cuda:0"
      { timeout 150 $TS run $RARGS --seq-len 1024 -b 16 --variants bf16,graphs+bf16 --max-steps 60 --lr 6e-4 \
          --lr-warmup-steps 10 --lr-decay-steps 50 --lr-min 6e-5 --name lm-sched
        python3 -c "import json;[print(r['run_id'], r['status'], repr(r['variant_note']), r['optimizer_impl'], r['lr_schedule'], [(c['step'], c.get('learning_rate')) for c in r['loss_checks']]) for r in json.load(open('/tmp/runs/lm-sched/results.json'))['runs']]"
        timeout 150 $TS run $RARGS --seq-len 1024 -b 4 --grad-accum 4 --variants bf16,graphs+bf16 --max-steps 40 --name lm-accum
        # the target on real text (random ids cannot go below ln 50257 = 10.8): Debian's python3-doc, byte tokens
        timeout 150 $TS run ${RARGS/--data-format tokens --data \/tmp\/tok/--data-format text --data /opt/deps/usr/share/doc/python3.11/html/_sources} \
          --seq-len 256 -b 16 --variants bf16 --target-loss 2.5 --eval-every-steps 200 --eval-windows 64 --epochs 2 --name lm-target
        timeout 200 $TS run $RARGS --seq-lens 256,1024 -b 8,16 --variants bf16 --max-steps 30 --name lm-seqlens
        $TS report /tmp/runs/lm-seqlens /tmp/runs/lm-target -o /tmp/runs/lm-recipe-report && grep -A12 "RQ2\|RQ4" /tmp/runs/lm-recipe-report/report.md | head -60
      } 2>&1 | tee "$OUT/lm-recipe.log"
      for n in lm-sched lm-accum lm-target lm-seqlens; do cp /tmp/runs/$n/results.json "$OUT/$n-results.json"; done;;
    gen)
      # GPT-2 124M greedy decoding with the KV cache, batch 1, prompt 128, 128 new tokens
      # (docs/generation.md): bench/decode_bench.cpp eager and graph-replayed, fp32 and bf16, on
      # cuda:0 and the CPU cores, beside transformers' generate (bench/lm_peer.py generate) in
      # the same invocation. Then the server scenario on cuda:0 (fp32, prompt 128, output 128) at
      # three rates, first come first served against continuous batching of up to 32 requests
      # (docs/generation.md#what-the-server-scenario-models-and-what-it-does-not): goodput and
      # TPOT p99 of each; fcfs's higher rates end at the 50 s cap, as a saturated server does.
      { for dt in float32 bfloat16; do for g in 0 1; do timeout 60 $B/decode_bench --device cuda:0 --dtype $dt --graphs $g; done
          PYTHONUNBUFFERED=1 timeout 90 python3 bench/lm_peer.py generate --device cuda --dtype $dt --batch 1; done
        for b in 1 4 16 64 256; do timeout 60 $B/decode_bench --device cuda:0 --dtype bfloat16 --graphs 1 --batch $b --reps 2; done
        for dt in float32 bfloat16; do timeout 90 $B/decode_bench --device cpu --dtype $dt --reps 2
          PYTHONUNBUFFERED=1 timeout 120 python3 bench/lm_peer.py generate --device cpu --dtype $dt --batch 1 --reps 2; done
        gen_checkpoint
        for mode in fcfs continuous; do
          timeout 200 $TS infer --run /tmp/runs/gen-ckpt -d cuda:0 --pp 0 --tg 0 --gen-batches none --server-rates 2,8,32 \
            --prompt-len 128 --output-len 128 --server-batching $mode --server-max-batch 32 -o "$OUT/gen-server-$mode.json"; done
      } 2>&1 | tee "$OUT/gen.log";;
    infer-gen)
      # `trainscope infer` on a GPT-2 checkpoint (docs/generation.md): a one-step gpt2 run on
      # random token ids gives the checkpoint (speed does not depend on the weights); then
      # pp512/tg128 (3 repetitions), the decode batch sweep and the server scenario at three rates
      # with goodput: bf16 graph-replayed on cuda:0; fp32 graph-replayed on cuda:0 beside fp32
      # eager on the CPU cores in one invocation; transformers' generate beside them at batch 1.
      # (Its server runs use the default, continuous batching.)
      # The peers run first: a time limit on the stage then cuts trainscope's last figures, not them.
      { for dt in bfloat16 float32; do PYTHONUNBUFFERED=1 timeout 60 python3 bench/lm_peer.py generate --device cuda --dtype $dt --batch 1; done
        PYTHONUNBUFFERED=1 timeout 90 python3 bench/lm_peer.py generate --device cpu --dtype float32 --batch 1 --reps 2
        gen_checkpoint
        timeout 100 $TS infer --run /tmp/runs/gen-ckpt -d cuda:0 --dtype bfloat16 --graphs --pp 512 --tg 128 --repetitions 3 \
          --gen-batches auto --server-rates 4,16,64 --server-max-batch 64 -o "$OUT/infer-gen-bf16-graphs.json"
        timeout 180 $TS infer --run /tmp/runs/gen-ckpt -d cuda:0,cpu --dtype float32 --graphs --pp 512 --tg 128 --repetitions 3 \
          --gen-batches none --server-rates 2,4,8 -o "$OUT/infer-gen-fp32.json"
      } 2>&1 | tee "$OUT/infer-gen.log";;
    gen-outputs)
      # A language model's generation outputs on the GPU host (docs/generation.md#outputs), after
      # infer-gen (its checkpoint /tmp/runs/gen-ckpt and history /tmp/runs/history.sqlite): fp32
      # pp512/tg128 (3 repetitions) and the server at 2 and 8 requests/s, eager on cuda:0 and the
      # CPU into the folder's inference.json and graph-replayed on cuda:0 into inference-graphs.json;
      # then `report` (RQ5: CPU against GPU for prefill and decoding, the simple-network verdict
      # eager and with graphs), `history` (the rows infer recorded), and `compare` of the folder
      # against its own inference.json (exit 0) and against a copy with decoding halved (exit 4).
      { D=/tmp/runs/gen-ckpt
        timeout 240 $TS infer --run $D -d cuda:0,cpu --pp 512 --tg 128 --repetitions 3 --gen-batches none --server-rates 2,8
        timeout 120 $TS infer --run $D -d cuda:0 --graphs --pp 512 --tg 128 --repetitions 3 --gen-batches none \
          --server-rates 2,8 -o $D/inference-graphs.json
        $TS report $D > /dev/null; sed -n '/^### RQ5/,/^### Simple/p' $D/report.md; sed -n '/^## Generation/,/^## Details/p' $D/report.md
        $TS history --db /tmp/runs/history.sqlite -n 12
        $TS compare $D $D/inference.json; echo "compare exit $? (0 expected)"
        python3 -c "import json,sys; j=json.load(open(sys.argv[1]))
for r in j['runs']:
  for t in (r.get('inference') or {}).get('generation', {}).get('tests', []):
    if t['n_prompt'] == 0: t['samples_tokens_per_s'] = [x / 2 for x in t['samples_tokens_per_s']]
json.dump(j, open('/tmp/gen-slower.json', 'w'))" $D/inference.json
        $TS compare $D/inference.json /tmp/gen-slower.json; echo "compare exit $? (4 expected)"
        $TS compare $D/inference.json $D/inference.json --metric tpot_p99_ms; echo "compare exit $? (0 expected)"
        cp $D/report.md $D/report.html $D/inference.json $D/inference-graphs.json "$OUT/"
      } 2>&1 | tee "$OUT/gen-outputs.log";;
    lm-profile)
      # where the GPU time of a GPT-2 step goes: trainscope's operator table (bf16, 5 profiled
      # steps) beside the Python peer's kernel table (bench/gpu/lm_profile.py)
      [ -f /tmp/tok/train.bin ] || { mkdir -p /tmp/tok && python3 -c "import numpy as np; r=np.random.default_rng(0); [r.integers(0,50257,n,dtype=np.uint16).tofile('/tmp/tok/'+f) for f,n in (('train.bin',4000000),('val.bin',200000))]"; }
      { timeout 120 $TS run --data-format tokens --data /tmp/tok -m gpt2 --weight-decay 0.1 --no-inference --no-progress \
          --out /tmp/runs -d cuda:0 --seq-len 1024 -b 16 --variants bf16 --max-steps 40 --min-time 0 --profile-top 30 --name lm-prof
        PYTHONUNBUFFERED=1 timeout 90 python3 bench/gpu/lm_profile.py /tmp/peer-lm.trace.json
        timeout 60 $TS analyze /tmp/peer-lm.trace.json
      } 2>&1 | tee "$OUT/lm-profile.log";;
    measure)
      # issue 38: `trainscope measure` on the Python peers, unchanged: the steps it finds and its
      # tokens/s (samples/s) against what the scripts print themselves (bench/gpu/measure_check.py);
      # a profiled window; --devices cpu,cuda; the cost of being measured in alternating pairs
      # (the script's own throughput, measured vs plain); `analyze` of a ~500 MB synthetic trace
      # (bench/make_big_trace.py) with its time and peak RSS. The image-zoo peer: bench/peer_best.py.
      PEER_BEST=${PEER_BEST:-bench/peer_best.py}
      M="$TS measure -o /tmp/mruns --quiet --no-history"  # --warmup-steps per command (given twice is a usage error)
      LM="bench/lm_peer.py train --steps 60 --warmup 5"   # 65 optimizer steps of B16 x T1024
      rm -rf /tmp/mruns
      { timeout 200 $M --run-name lm --warmup-steps 10 --items-per-step 16384 -- python3 $LM
        python3 bench/gpu/measure_check.py run /tmp/mruns/lm 65
        timeout 200 $M --run-name lm-prof --warmup-steps 10 --items-per-step 16384 --profile-steps 40-44 -- python3 $LM
        python3 bench/gpu/measure_check.py run /tmp/mruns/lm-prof 65; cat /tmp/mruns/lm-prof/profile/analysis.md | head -60
        timeout 300 $M --run-name lm-devs --warmup-steps 3 --devices cpu,cuda --items-per-step 512 -- \
          python3 bench/lm_peer.py train --device {device} --layers 2 --dim 256 --heads 4 --seq 128 --batch 4 --steps 20 --warmup 2
        if [ -f "$PEER_BEST" ]; then
          timeout 300 $M --run-name best --warmup-steps 10 --items-per-step 128 -- python3 $PEER_BEST --data $DATA --models cnn --batches 128 --variants tuned --steps 400 --warmup 30
          python3 bench/gpu/measure_check.py run /tmp/mruns/best 430
        else echo "$PEER_BEST not found (set PEER_BEST): its check skipped"; fi
        : > /tmp/pairs.log
        for i in 1 2 3 4 5; do  # alternating pairs; the script's own JSON line in each
          timeout 200 $M --run-name pair$i --warmup-steps 10 --items-per-step 16384 -- python3 $LM >/dev/null 2>&1
          echo "measured $(grep tokens_per_s /tmp/mruns/pair$i/stdout.log | tail -1)" >> /tmp/pairs.log
          echo "plain $(timeout 200 python3 $LM | grep tokens_per_s | tail -1)" >> /tmp/pairs.log
        done
        python3 bench/gpu/measure_check.py pairs /tmp/pairs.log
        python3 bench/make_big_trace.py /tmp/big.pt.trace.json 500
        python3 -c "import resource,subprocess,sys,time;t=time.time();rc=subprocess.call(sys.argv[1:]);print('analyze 500 MB: rc',rc,'wall %.1f s'%(time.time()-t),'peak RSS %.0f MB'%(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024))" \
          $TS analyze --quiet --json /tmp/big.json /tmp/big.pt.trace.json
        rm -f /tmp/big.pt.trace.json
      } 2>&1 | tee "$OUT/measure.log"
      cp /tmp/mruns/lm/measure.json "$OUT/measure-lm.json"; cp /tmp/mruns/lm-devs/results.json "$OUT/measure-devs-results.json";;
    aoti)
      # issue 38: a torch.export / AOTInductor package (.pt2) of resnet18 (bench/gpu/make_aoti_package.py)
      # measured by `infer` as a checkpoint is (single-stream, offline), and the Aoti tests with it
      # (TS_AOTI_PACKAGE). Needs the build against the wheel's LibTorch (>= 2.6: cmake prints
      # "AOTInductor packages (.pt2) in infer: ON").
      { grep "AOTInductor packages" "$OUT/build.log"
        timeout 400 python3 bench/gpu/make_aoti_package.py /tmp/resnet18.pt2 &&
        timeout 300 $TS infer --model /tmp/resnet18.pt2 --data $DATA -d cuda:0 --budget 2 -o /tmp/aoti-infer.json 2>&1 | tail -30
        (cd $B && TS_AOTI_PACKAGE=/tmp/resnet18.pt2 ./tests/test_aoti)
      } 2>&1 | tee "$OUT/aoti.log";;
    default)
      $TS devices | tee "$OUT/devices.txt"
      $TS run --data $DATA --out /tmp/runs --name default --no-progress 2>&1 | tee "$OUT/default.log"
      cp /tmp/runs/default/results.json "$OUT/default-results.json";;
    smoke)
      $TS run --data $DATA -d cuda:0 -m cnn -b 128 --max-steps 120 --out /tmp/runs --name smoke --no-progress 2>&1 | tail -40 | tee "$OUT/smoke.log"
      python3 bench/gpu/check_trace.py /tmp/runs/smoke 2>&1 | tee -a "$OUT/smoke.log"
      $TS infer --run /tmp/runs/smoke --devices cuda:0 --budget 1 2>&1 | tail -30 | tee -a "$OUT/smoke.log"
      cp /tmp/runs/smoke/results.json "$OUT/smoke-results.json";;
    paper)
      # the study's matrix, each run stopped after 15 s of training (the 20-epoch time is estimated)
      timeout 300 $TS run --data $DATA --preset paper --time-budget 15 --limit-test 2000 --out /tmp/runs --name paper \
        --no-progress > "$OUT/paper.log" 2>&1; tail -60 "$OUT/paper.log"
      cp /tmp/runs/paper/results.json "$OUT/paper-results.json"
      cp /tmp/runs/paper/report.html "$OUT/paper-report.html" 2>/dev/null;;
    bench)
      { timeout 120 bash bench/telemetry_overhead.sh $TS cuda:0 $DATA 3
        timeout 60 $B/profile_overhead --device cuda:0 --model cnn --batch 128 --steps 300 --data $DATA
        timeout 60 $B/profile_overhead --device cuda:0 --model cnn --batch 128 --steps 300 --data $DATA --no-memory
        timeout 150 bash bench/compare_pytorch.sh --trainscope $TS --python python3 --device cuda:0 --threads 16 \
          --steps 400 --models mlp,cnn,resnet18 --batch-sizes 64,128 --data $DATA
        timeout 90 bash bench/compare_pytorch.sh --trainscope $TS --python python3 --device cpu --threads 16 \
          --steps 200 --models mlp,cnn --batch-sizes 128 --data $DATA
      } 2>&1 | tee "$OUT/bench.log";;
    tele)
      { STEPS=1500 timeout 240 bash bench/telemetry_overhead.sh $TS cuda:0 $DATA 7
        timeout 60 $B/profile_overhead --device cuda:0 --model resnet18 --batch 128 --steps 200 --data $DATA
      } 2>&1 | tee "$OUT/tele.log";;
    self-gpu)
      # issue 13's cells: N alternating pairs (even N: as many on-first as off-first) and one warm-up
      # run per cell, default vs every tool off (bench/self_overhead.sh); a verdict needs N=8,
      # which for all three cells needs more than one call (run bench/self_overhead.sh per cell)
      { TS=$TS DATA=$DATA N=${N:-6} EPOCHS=10 MAX_STEPS=3000 timeout 160 bash bench/self_overhead.sh cuda:0,mlp,64
        TS=$TS DATA=$DATA N=${N:-6} EPOCHS=10 MAX_STEPS=2000 timeout 160 bash bench/self_overhead.sh cuda:0,cnn,128
        TS=$TS DATA=$DATA N=${N:-6} EPOCHS=2 MAX_STEPS=600 timeout 200 bash bench/self_overhead.sh cuda:0,resnet18,128
      } 2>&1 | tee "$OUT/self-gpu.log";;
    sampler-ab)
      # issue 13: the sampler's own cost, on and off in alternating blocks of one process
      # (bench/sampler_ab.cpp): immune to the run-to-run spread that self-gpu fights
      # SAB_CELLS picks cells ("device,model,batch" separated by spaces) to split the stage over calls
      { for cell in ${SAB_CELLS:-cuda:0,mlp,64 cuda:0,cnn,128 cuda:0,resnet18,128 cpu,mlp,128 cpu,cnn,128}; do
          IFS=, read -r dev model batch <<< "$cell"
          timeout 120 $B/sampler_ab --device "$dev" --model "$model" --batch "$batch" --pairs ${SAB_PAIRS:-16} --block-s 2
        done
      } 2>&1 | tee -a "$OUT/sampler-ab.log" | grep -v '"pair"';;
    self-cpu)
      { TS=$TS DATA=$DATA N=${N:-6} EPOCHS=10 MAX_STEPS=2000 timeout 260 bash bench/self_overhead.sh cpu,mlp,128
        TS=$TS DATA=$DATA N=${N:-6} EPOCHS=1 MAX_STEPS=300 timeout 260 bash bench/self_overhead.sh cpu,cnn,128
      } 2>&1 | tee "$OUT/self-cpu.log";;
    telecost)
      timeout 60 $B/telemetry_cost 2>&1 | tee "$OUT/telecost.log";;
    tboard)  # issue 16: TensorBoard event files (TensorBoard's EventAccumulator) and trace flows
      $TS run --data $DATA -d cuda:0 -m mlp,cnn -b 128 --max-steps 600 --out /tmp/runs --name tboard --no-progress 2>&1 | tail -20 | tee "$OUT/tboard.log"
      python3 scripts/read_tfevents.py /tmp/runs/tboard/tensorboard --runs 2 --require train/loss \
        --require telemetry/gpu0/util_pct --require telemetry/gpu0/power_w --require telemetry/gpu0/temp_c \
        --require telemetry/gpu0/energy_j --require telemetry/cpu/util_pct 2>&1 | tee -a "$OUT/tboard.log"
      python3 bench/gpu/check_flows.py /tmp/runs/tboard 2>&1 | tee -a "$OUT/tboard.log"
      cp -r /tmp/runs/tboard/tensorboard "$OUT/tboard-events";;
    graphs)
      # issue 14's CUDA graphs: GPU parity tests (graph replay vs the eager fused path, fallbacks),
      # then graph vs eager training samples/s and single-stream inference p50 (bench/graph_bench.cpp)
      { (cd $B && timeout 240 ctest --output-on-failure -V -R 'GraphStep|CapturableOptimizers|InferGraphs') 2>&1 |
          grep -E 'Test +#|Passed|Failed|FAILED|Failure|SKIPPED|Skipped|relative distance|fallback reason|execution:|tests passed|Expected|Which is|error'
        timeout 180 $B/graph_bench train --device cuda:0 --models mlp,cnn,resnet18 --batches 64,128 --steps 400
        timeout 120 $B/graph_bench infer --device cuda:0 --models cnn,resnet18 --pairs 3 --budget 2
      } 2>&1 | tee "$OUT/graphs.log";;
    variants)
      # issue 14: every variant in one trainscope process (MFU in results.json)
      { timeout 260 $TS run --data $DATA -d cuda:0 -m mlp,cnn,resnet18 -b 64,128 \
          --variants eager,bf16,graphs,graphs+bf16,graphs+bf16+channels_last --max-steps 200 --limit-test 2000 \
          --no-inference --no-profile --out /tmp/runs --name variants --no-progress 2>&1 | tail -45
        python3 bench/gpu/summarize_variants.py /tmp/runs/variants/results.json
      } 2>&1 | tee "$OUT/variants.log"
      cp /tmp/runs/variants/results.json "$OUT/variants-results.json" 2>/dev/null;;
    vs-python)
      # issue 14: the same variants through trainscope and Python side by side, one invocation
      timeout 240 bash bench/compare_pytorch.sh --trainscope $TS --python python3 --device cuda:0 --threads 16 \
        --steps 300 --models ${VS_MODELS:-mlp,cnn,resnet18} --batch-sizes ${VS_BATCHES:-128} \
        --variants ${VS_VARIANTS:-eager,graphs+bf16,graphs+bf16+channels_last} --data $DATA ${VS_EXTRA:-} 2>&1 | tee -a "$OUT/vs-python.log";;
    default-graphs)
      # issue 14: the default job with graphs, and the "simple network" verdict per variant
      timeout 150 $TS run --data $DATA --variants eager,graphs --max-steps 300 --limit-test 2000 --out /tmp/runs \
        --name default-graphs --no-progress 2>&1 | tail -60 | tee "$OUT/default-graphs.log"
      cp /tmp/runs/default-graphs/report.md "$OUT/default-graphs-report.md" 2>/dev/null;;
    self-cell)
      # issue 13: one cell with many pairs, to pool over calls (bench/RESULTS.md, ninth session):
      # CELL=cuda:0,resnet18,128 STEPS=600 EPOCHS=2 N=12 (about 260 s for resnet18 with inference)
      TS=$TS DATA=$DATA N=${N:-12} EPOCHS=${EPOCHS:-2} MAX_STEPS=${STEPS:-600} EXTRA=${EXTRA:-} timeout ${CELL_TIMEOUT:-500} \
        bash bench/self_overhead.sh ${CELL:-cuda:0,resnet18,128} 2>&1 | tee -a "$OUT/self-cell.log";;
    malloc)
      # issue 13: the host allocator (docs/configuration.md#host-memory-allocator). Every tool off,
      # the same CPU cell in three modes, alternating: trainscope's fixed glibc thresholds (the
      # default), glibc's dynamic ones (--no-malloc-tuning), and tcmalloc preloaded. One line per
      # run: headline samples/s, the run's minor page faults and CPU seconds (getrusage of the child).
      TCM=$(ls /opt/deps/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 2>/dev/null)
      { for i in $(seq "${N:-5}"); do
          for mode in fixed dynamic tcmalloc; do
            for cell in ${MCELLS:-cnn,300 mlp,1000}; do
              m=${cell%,*}; steps=${cell#*,}; name="malloc-$mode-$m-$i"; flags=(); envs=()
              [ $mode = dynamic ] && flags=(--no-malloc-tuning)
              [ $mode = tcmalloc ] && { [ -n "$TCM" ] || continue; envs=(LD_PRELOAD=$TCM); }
              rm -rf "/tmp/runs/$name"
              python3 - "$name" env ${envs[@]+"${envs[@]}"} $TS run --data $DATA -d cpu -m "$m" -b 128 --max-steps "$steps" \
                --threads ${THREADS:-0} --no-telemetry --no-profile --no-inference --no-progress --out /tmp/runs --name "$name" \
                ${flags[@]+"${flags[@]}"} <<'PY'
import json, resource, subprocess, sys
name = sys.argv[1]
with open(f"/tmp/out-{name}.log", "w") as log:
    subprocess.run(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
try:
    r = json.load(open(f"/tmp/runs/{name}/results.json"))
    run = r["runs"][0]
    print(name, round(run["steady_samples_per_s"] or 0), "samples/s", u.ru_minflt, "minflt",
          round(u.ru_utime, 1), "user_s", round(u.ru_stime, 1), "sys_s", "|", r["provenance"].get("host_allocator"))
except Exception as e:
    print(name, "failed:", e, open(f"/tmp/out-{name}.log").read()[-400:])
PY
            done
          done
        done
      } 2>&1 | tee "$OUT/malloc.log";;
    cpu-pin)
      # issue 13: does binding the intra-op threads (libgomp's OMP_PROC_BIND/OMP_PLACES) narrow the
      # run-to-run spread of an all-core CPU run (cpu cnn b128 spread 6.3-14.3 k samples/s, tenth
      # session)? Every tool off, unbound and bound runs alternating; one line per run.
      { for i in $(seq "${N:-6}"); do
          for mode in free bound; do
            envs=(); [ $mode = bound ] && envs=(OMP_PROC_BIND=close OMP_PLACES=cores)
            rm -rf "/tmp/runs/pin-$mode-$i"  # a warm machine may hold an earlier call's folder
            env ${envs[@]+"${envs[@]}"} $TS run --data $DATA -d cpu -m cnn -b 128 --max-steps "${STEPS:-300}" --threads 0 \
              --no-telemetry --no-profile --no-inference --no-progress --out /tmp/runs --name "pin-$mode-$i" \
              >"$OUT/pin-$mode-$i.log" 2>&1
            python3 -c "import json;r=json.load(open('/tmp/runs/pin-$mode-$i/results.json'))['runs'][0];print('$mode', $i, round(r['steady_samples_per_s'] or 0))"
          done
        done
      } 2>&1 | tee "$OUT/cpu-pin.log";;
    cpus)
      # The CPUs a run may use (src/common/cpu_budget.cpp): the host's mask and cgroup quota, then
      # a cpu run on the whole machine and one under `taskset -c 0-3` (--threads 0 should be 4 there,
      # with the limit named in the record), and --threads 8 under the same mask (warned about).
      { echo "nproc $(nproc)"; grep Cpus_allowed_list /proc/self/status; cat /proc/self/cgroup
        cat /sys/fs/cgroup/cpu.max 2>&1; lscpu | grep -E '^(CPU\(s\)|Thread|Core|Socket|Model name)'
        for mode in whole taskset; do
          pre=(); [ $mode = taskset ] && pre=(taskset -c 0-3)
          rm -rf "/tmp/runs/cpus-$mode"
          ${pre[@]+"${pre[@]}"} $TS run --data $DATA -d cpu -m mlp -b 128 --max-steps 50 --no-profile --no-inference \
            --no-progress --out /tmp/runs --name "cpus-$mode" > "$OUT/cpus-$mode.log" 2>&1
          python3 -c "import json;d=json.load(open('/tmp/runs/cpus-$mode/results.json'));p=d['provenance'];r=d['runs'][0]
print('$mode', 'logical', p['cpu_logical_cores'], 'usable', p.get('cpu_usable_cores'), 'limit', repr(p.get('cpu_limit')), 'threads', r['intra_op_threads'], 'samples/s', round(r['steady_samples_per_s'] or 0))"
        done
        rm -rf /tmp/runs/cpus-over; taskset -c 0-3 $TS run --data $DATA -d cpu -m mlp -b 128 --max-steps 20 --threads 8 --no-profile --no-inference \
          --no-progress --out /tmp/runs --name cpus-over 2>&1 | grep -m1 "is more than"
      } 2>&1 | tee "$OUT/cpus.log";;
    cpu-threads)
      # Is every core the CPU's best thread count? (the cpus stage read cpu mlp b128 at 168 k
      # samples/s with 4 threads under taskset, 115 k with 16.) Every tool off, thread counts
      # alternating, N rounds; MODEL (mlp) STEPS (2000).
      { for i in $(seq "${N:-3}"); do
          for t in ${THREADS:-4 8 16}; do
            rm -rf "/tmp/runs/thr-$t-$i"
            $TS run --data $DATA -d cpu -m "${MODEL:-mlp}" -b 128 --max-steps "${STEPS:-2000}" --threads "$t" \
              --no-telemetry --no-profile --no-inference --no-progress --out /tmp/runs --name "thr-$t-$i" >"$OUT/thr-$t-$i.log" 2>&1
            python3 -c "import json;r=json.load(open('/tmp/runs/thr-$t-$i/results.json'))['runs'][0];print('${MODEL:-mlp}', 'threads', $t, 'round', $i, round(r['steady_samples_per_s'] or 0))"
          done
        done
      } 2>&1 | tee -a "$OUT/cpu-threads.log";;
    threads-e2e)
      # The threadsN variant as a user runs it (docs/variants.md#cpu-threads): a cpu and cuda:0
      # matrix with eager and threads8, then the report, whose CPU-vs-GPU speed-ups take the CPU
      # at its fastest measured thread count and whose variant_gain advice cites the gain.
      rm -rf /tmp/runs/thr
      $TS run --data $DATA -d cpu,cuda:0 -m mlp,cnn -b 128 --max-steps "${STEPS:-1000}" --variants eager,threads8 \
        --no-inference --no-progress --out /tmp/runs --name thr > "$OUT/threads-e2e.log" 2>&1; tail -25 "$OUT/threads-e2e.log"
      $TS report /tmp/runs/thr > "$OUT/threads-report.txt" 2>&1; cp /tmp/runs/thr/report.md "$OUT/" 2>/dev/null
      grep -n -i "faster\|threads\|speed-up\|variant_gain" "$OUT/report.md" | head -40;;
    rundev)
      # issue 13: NVML's slow fields only for the run's GPU (docs/telemetry.md). A cpu run and a
      # cuda:0 run in one matrix; prints, per run window, which gpu0 fields telemetry.csv.gz holds,
      # and the cuda run's energy (the counter, read from the run's start; --epochs 100 lets STEPS=4000
      # steps run, a window of several seconds, longer than the counter's update period: short window
      # false. Without --epochs the run stops after 1 epoch, 469 steps: the thirteenth session's call.)
      rm -rf /tmp/runs/rundev
      $TS run --data $DATA -d cpu,cuda:0 -m mlp -b 128 --epochs 100 --max-steps "${STEPS:-4000}" --threads 0 --no-inference --no-progress \
        --out /tmp/runs --name rundev > "$OUT/rundev.log" 2>&1; tail -3 "$OUT/rundev.log"
      python3 bench/gpu/run_devices_check.py /tmp/runs/rundev 2>&1 | tee -a "$OUT/rundev.log";;
    slowfields)
      # issue 13: do NVML's slow fields (energy counter ~3.5 ms spinning, PCIe throughput ~21 ms per
      # call waiting in the driver, docs/telemetry.md) cost a launch-bound GPU run? cuda:0 mlp b64
      # leaned 4 % low over 36 default/off pairs (thirteenth session). Telemetry-only runs, A reads
      # the slow fields every second (the default), B only once (--telemetry-slow-interval 3600).
      TS=$TS DATA=$DATA N=${N:-16} EPOCHS=${EPOCHS:-10} MAX_STEPS=${STEPS:-3000} timeout ${CELL_TIMEOUT:-500} \
        env A_FLAGS="--no-profile --no-inference" B_FLAGS="--no-profile --no-inference --telemetry-slow-interval 3600" \
        bash bench/self_overhead.sh ${CELL:-cuda:0,mlp,64} 2>&1 | tee -a "$OUT/slowfields.log";;
    pcie)
      # issue 13: NVML's PCIe throughput (two ~21 ms calls waiting in the driver) read every second
      # (A, the setting before the fourteenth session) against every 10 s (B, the default since);
      # slowfields had read 0.958 [0.914, 0.980] for every slow field each second against once
      # (16 pairs), this stage 1.098 [1.037, 1.129] (fourteenth session). Telemetry-only runs.
      TS=$TS DATA=$DATA N=${N:-16} EPOCHS=${EPOCHS:-10} MAX_STEPS=${STEPS:-3000} timeout ${CELL_TIMEOUT:-500} \
        env A_FLAGS="--no-profile --no-inference --telemetry-pcie-interval 1" B_FLAGS="--no-profile --no-inference" \
        bash bench/self_overhead.sh ${CELL:-cuda:0,mlp,64} 2>&1 | tee -a "$OUT/pcie.log";;
    self-cnn)
      # issue 13's closest cell with more pairs
      TS=$TS DATA=$DATA N=${N:-9} EPOCHS=10 MAX_STEPS=2000 timeout 200 bash bench/self_overhead.sh cuda:0,cnn,128 \
        2>&1 | tee "$OUT/self-cnn.log";;
    ddp1)
      # issue 15 on the one-GPU host: a world-size-1 NCCL run through the data-parallel path, with
      # the rank environment set by hand (rank 0 hosts the store) and started by torchrun
      { RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 timeout 60 \
          $TS run --data $DATA -d cuda:0 -m cnn -b 128 --max-steps 200 --no-inference --out /tmp/runs --name ddp1-env \
          --no-progress 2>&1 | grep -v '^\s*because' | head -40
        python3 -c "import json;r=json.load(open('/tmp/runs/ddp1-env/results.json'))['runs'][0];print(r['status'],r.get('steady_samples_per_s'));print(json.dumps(r.get('distributed'))[:1200])"
        timeout 60 torchrun --standalone --nproc-per-node 1 --no-python $TS run --data $DATA -d cuda:0 -m cnn -b 128 \
          --max-steps 200 --no-inference --out /tmp/runs --name ddp1-torchrun --no-progress 2>&1 | grep -v '^\s*because' | head -50
      } 2>&1 | tee "$OUT/ddp1.log";;
    pipeline-bench)
      # issue 17: decode + augment, trainscope against the host's own torch DataLoader (needs
      # torchvision and Pillow in the host's python; the script says so when they are missing)
      BIN=$B/input_bench PY=python3 SRC=$DATA IMAGES=${STREAM_IMAGES:-8000} WORKERS="1 4 16" SIZES="64 224" \
        DATA_DIR=/tmp/pipeline-bench timeout 300 bash bench/input_pipeline.sh 2>&1 | tee "$OUT/pipeline-bench.log";;
    stream)
      # issue 17: resnet18 at 224x224 from a streaming JPEG folder; the data share and the advice
      { timeout 120 python3 bench/make_image_folder.py --data $DATA --out /tmp/fm224 --size 224 --train ${STREAM_IMAGES:-12000} --test 2000
        for w in 12 2; do
          timeout 90 $TS run --devices cuda:0 --models resnet18 --batch-sizes 128 --data-format folder --data /tmp/fm224 \
            --image-size 224 --cache-data off --threads 4 --data-workers $w --max-steps 40 --warmup-steps 5 --limit-test 512 \
            --no-inference --no-profile --out /tmp/runs --name stream224-w$w --no-progress 2>&1 | tail -25
          python3 -c "import json;r=json.load(open('/tmp/runs/stream224-w$w/results.json'))['runs'][0];p=r['phases'];print('workers $w data share %.1f %%'%(100*p['data_ms']/p['step_ms']), r.get('steady_samples_per_s'))"
        done
      } 2>&1 | tee "$OUT/stream.log";;
    *) echo "unknown stage $stage";;
  esac
done
