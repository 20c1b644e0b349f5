"""Python PyTorch peer for transformer workloads: what a performance-minded PyTorch user gets on this host.
One JSON line per cell. Run it in the same invocation as trainscope's own figures (the host is noisy).

  python3 lm_peer.py train   [--impl nano|hf] [--compile [--compile-mode M] | --graph] [--device cuda|cpu] [--vocab 50304] [--layers 12]
                             [--dim 768] [--heads 12] [--seq 1024] [--batch 16] [--steps 30] [--tokens FILE.bin]
  python3 lm_peer.py vit     [--compile] [--batch 256] [--image 224] [--variant vit_small_patch16_224]
  python3 lm_peer.py generate [--device cuda|cpu] [--dtype bfloat16|float32] [--prompt 128] [--new 128] [--batch 1]

train: a GPT-2-style causal LM (pre-LN, tied embeddings, GELU tanh, SDPA causal attention), next-token
cross-entropy, AdamW (fused on CUDA), bf16 autocast; `nano` is a nanoGPT-style module, `hf` is
transformers' GPT2LMHeadModel (attn sdpa). Tokens come from a nanoGPT-style uint16 .bin file (--tokens) or
are drawn at random (throughput does not depend on the values). MFU = tokens/s x (6N + 12 L d T) / peak,
N without position embeddings (PaLM appendix B, nanoGPT estimate_mfu), peak 989.4e12 (H100/H200 SXM dense
BF16) on CUDA; none on CPU.
vit: timm ViT training at bf16; MFU from the model card's GMACs (ViT-S/16: 4.6 GMACs per 224 px image).
generate: transformers GPT2LMHeadModel greedy decoding with its KV cache (HF generate), prefill tokens/s and
decode tokens/s (TPOT = (total - prefill) / (new - 1)), best of `--reps` after one warm-up.
Needs PyTorch >= 2.0 (scaled_dot_product_attention); transformers/timm for --impl hf, vit and generate.
Figures measured with it on the H200 host: bench/RESULTS.md."""
import argparse, json, time
import torch, torch.nn as nn, torch.nn.functional as F

PEAK_BF16_CUDA = 989.4e12


def out(**kw):
    print(json.dumps(kw), flush=True)


def sync(dev):
    if dev == 'cuda':
        torch.cuda.synchronize()


class Block(nn.Module):
    def __init__(s, d, h):
        super().__init__(); s.h = h
        s.ln1 = nn.LayerNorm(d); s.qkv = nn.Linear(d, 3 * d); s.proj = nn.Linear(d, d)
        s.ln2 = nn.LayerNorm(d); s.fc = nn.Linear(d, 4 * d); s.fc2 = nn.Linear(4 * d, d)

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, s.h, C // s.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + s.proj(y)
        return x + s.fc2(F.gelu(s.fc(s.ln2(x)), approximate='tanh'))


class GPT(nn.Module):
    def __init__(s, V, T, L, d, h):
        super().__init__()
        s.wte = nn.Embedding(V, d); s.wpe = nn.Embedding(T, d)
        s.blocks = nn.ModuleList(Block(d, h) for _ in range(L)); s.lnf = nn.LayerNorm(d)
        s.head = nn.Linear(d, V, bias=False); s.head.weight = s.wte.weight
        for n, p in s.named_parameters():  # GPT-2 init: N(0, 0.02), residual projections scaled by 1/sqrt(2L)
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02 / ((2 * L) ** 0.5) if n.endswith(('proj.weight', 'fc2.weight')) else 0.02)
            elif n.endswith('bias'):
                nn.init.zeros_(p)

    def forward(s, idx):
        x = s.wte(idx) + s.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in s.blocks:
            x = b(x)
        return s.head(s.lnf(x))


def batches(a, dev):
    if a.tokens:
        import numpy as np
        data = np.memmap(a.tokens, dtype=np.uint16, mode='r')
        g = np.random.default_rng(0)
        def get():
            ix = g.integers(0, len(data) - a.seq - 1, a.batch)
            x = torch.from_numpy(np.stack([data[i:i + a.seq + 1].astype(np.int64) for i in ix]))
            x = x.pin_memory().to(dev, non_blocking=True) if dev == 'cuda' else x
            return x[:, :-1], x[:, 1:]
        return get
    x = torch.randint(0, a.vocab, (a.batch, a.seq + 1), device=dev)
    return lambda: (x[:, :-1], x[:, 1:])


def train(a):
    dev = a.device; torch.manual_seed(0)
    if a.impl == 'nano':
        m = GPT(a.vocab, a.seq, a.layers, a.dim, a.heads).to(dev)
        fwd = m
    else:
        from transformers import GPT2Config, GPT2LMHeadModel
        m = GPT2LMHeadModel(GPT2Config(vocab_size=a.vocab, n_positions=a.seq, n_layer=a.layers, n_embd=a.dim,
                                       n_head=a.heads, attn_implementation='sdpa')).to(dev)
        fwd = lambda x: m(input_ids=x).logits
    N = sum(p.numel() for p in m.parameters()) - a.seq * a.dim
    fused = {'fused': True, 'capturable': a.graph} if dev == 'cuda' else {}
    opt = torch.optim.AdamW(m.parameters(), lr=torch.tensor(3e-4, device=dev) if a.graph else 3e-4, weight_decay=0.1, **fused)
    f = torch.compile(fwd, mode=a.compile_mode) if a.compile else fwd
    get = batches(a, dev)

    def compute(x, y):
        opt.zero_grad(set_to_none=not a.graph)
        with torch.autocast(dev, dtype=torch.bfloat16):
            logits = f(x)
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1))
        loss.backward(); opt.step()
        return loss

    if a.graph:  # the whole step (forward, loss, backward, fused capturable AdamW) as one CUDA graph
        sx, sy = (t.clone() for t in get())
        side = torch.cuda.Stream(); side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                compute(sx, sy)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            sloss = compute(sx, sy)

        def step():
            x, y = get(); sx.copy_(x, non_blocking=True); sy.copy_(y, non_blocking=True); g.replay(); return sloss
    else:
        def step():
            return compute(*get())
    t0 = time.perf_counter()
    for _ in range(a.warmup):
        step()
    sync(dev); tw = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    sync(dev); dt = time.perf_counter() - t0
    tok = a.steps * a.batch * a.seq / dt
    fpt = 6 * N + 12 * a.layers * a.dim * a.seq
    out(cell='train', impl=a.impl, compile=a.compile_mode if a.compile else False, graph=a.graph, device=dev, vocab=a.vocab, layers=a.layers, dim=a.dim,
        heads=a.heads, seq=a.seq, batch=a.batch, params_non_pos=N, tokens_per_s=round(tok),
        tflops=round(tok * fpt / 1e12, 1), mfu_pct=round(100 * tok * fpt / PEAK_BF16_CUDA, 1) if dev == 'cuda' else None,
        loss=round(float(loss.detach()), 3), warmup_s=round(tw, 1), threads=torch.get_num_threads(),
        peak_mem_gib=round(torch.cuda.max_memory_allocated() / 2**30, 1) if dev == 'cuda' else None)


def vit(a):
    import timm
    torch.manual_seed(0)
    m = timm.create_model(a.variant, num_classes=1000, img_size=a.image).cuda()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, fused=True)
    f = torch.compile(m) if a.compile else m
    x = torch.randn(a.batch, 3, a.image, a.image, device='cuda'); y = torch.randint(0, 1000, (a.batch,), device='cuda')

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast('cuda', dtype=torch.bfloat16):
            loss = F.cross_entropy(f(x), y)
        loss.backward(); opt.step()
    for _ in range(a.warmup):
        step()
    sync('cuda'); t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    sync('cuda'); ips = a.steps * a.batch / (time.perf_counter() - t0)
    gmacs = {'vit_small_patch16_224': 4.6, 'vit_tiny_patch16_224': 1.3, 'vit_base_patch16_224': 17.6}.get(a.variant)
    out(cell='vit', model=a.variant, compile=a.compile, batch=a.batch, image=a.image, images_per_s=round(ips),
        mfu_pct=round(100 * ips * 3 * 2 * gmacs * 1e9 / PEAK_BF16_CUDA, 1) if gmacs and a.image == 224 else None)


def generate(a):
    from transformers import GPT2Config, GPT2LMHeadModel
    dev, dtype = a.device, getattr(torch, a.dtype); torch.manual_seed(0)
    m = GPT2LMHeadModel(GPT2Config(attn_implementation='sdpa')).to(dev, dtype).eval()
    x = torch.randint(0, 50257, (a.batch, a.prompt), device=dev)
    best = None
    with torch.inference_mode():
        for r in range(a.reps + 1):
            sync(dev); t0 = time.perf_counter(); m(input_ids=x, use_cache=True); sync(dev); pf = time.perf_counter() - t0
            t0 = time.perf_counter()
            m.generate(x, max_new_tokens=a.new, min_new_tokens=a.new, do_sample=False, pad_token_id=0)
            sync(dev); tpot = (time.perf_counter() - t0 - pf) / (a.new - 1)
            if r and (best is None or tpot < best[1]):
                best = (pf, tpot)
    out(cell='generate', model='gpt2-124M (HF generate, KV cache)', device=dev, dtype=a.dtype, batch=a.batch,
        prompt=a.prompt, new=a.new, prefill_tokens_per_s=round(a.batch * a.prompt / best[0]),
        decode_tokens_per_s=round(a.batch / best[1], 1), tpot_ms=round(1000 * best[1], 3), threads=torch.get_num_threads())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('what', choices=['train', 'vit', 'generate'])
    ap.add_argument('--impl', default='nano', choices=['nano', 'hf']); ap.add_argument('--compile', action='store_true')
    ap.add_argument('--compile-mode', default=None, help='torch.compile mode (default, max-autotune, ...)')
    ap.add_argument('--graph', action='store_true', help='capture the whole training step in one CUDA graph')
    ap.add_argument('--device', default='cuda'); ap.add_argument('--dtype', default='bfloat16')
    ap.add_argument('--vocab', type=int, default=50304); ap.add_argument('--layers', type=int, default=12)
    ap.add_argument('--dim', type=int, default=768); ap.add_argument('--heads', type=int, default=12)
    ap.add_argument('--seq', type=int, default=1024); ap.add_argument('--batch', type=int, default=16)
    ap.add_argument('--steps', type=int, default=30); ap.add_argument('--warmup', type=int, default=5)
    ap.add_argument('--tokens'); ap.add_argument('--image', type=int, default=224)
    ap.add_argument('--variant', default='vit_small_patch16_224')
    ap.add_argument('--prompt', type=int, default=128); ap.add_argument('--new', type=int, default=128)
    ap.add_argument('--reps', type=int, default=3)
    a = ap.parse_args()
    if a.what == 'vit' and a.batch == 16:
        a.batch = 256
    torch.backends.cuda.matmul.allow_tf32 = True; torch.backends.cudnn.allow_tf32 = True
    {'train': train, 'vit': vit, 'generate': generate}[a.what](a)


if __name__ == '__main__':
    main()
