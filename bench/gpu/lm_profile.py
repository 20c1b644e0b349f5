#!/usr/bin/env python3
"""Where the GPU time of one GPT-2 124M training step goes in the Python peer (bench/lm_peer.py's
nanoGPT-style module, B16 x T1024, bf16 autocast, fused AdamW, TF32 on), for comparison with the
operator table trainscope's profiler prints for the same workload (bench/gpu/build_and_run.sh
stage lm-profile). Prints the SDPA backend PyTorch picks for training tensors and the top CUDA
kernels of 5 profiled steps by self CUDA time, and writes the Kineto trace to argv[1].

  python3 bench/gpu/lm_profile.py TRACE.json
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import lm_peer as P  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
dev = 'cuda'
torch.manual_seed(0)
m = P.GPT(50304, 1024, 12, 768, 12).to(dev)
opt = torch.optim.AdamW(m.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
x = torch.randint(0, 50257, (16, 1024), device=dev)
y = torch.randint(0, 50257, (16, 1024), device=dev)
q = torch.empty(1, 12, 1024, 64, device=dev, dtype=torch.bfloat16, requires_grad=True)
print('sdpa backend for training tensors:', torch._fused_sdp_choice(q, q, q, is_causal=True))


def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast('cuda', dtype=torch.bfloat16):
        logits = m(x)
    loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1))
    loss.backward()
    opt.step()


for _ in range(5):
    step()
torch.cuda.synchronize()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                        torch.profiler.ProfilerActivity.CUDA]) as prof:
    for _ in range(5):
        step()
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by='self_cuda_time_total', row_limit=25, max_name_column_width=60))
prof.export_chrome_trace(sys.argv[1])
