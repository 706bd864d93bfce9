"""Which parallel layouts of the generated MoE serve correctly on vLLM's CPU build, and how long the engine takes to start.

Motif 3's aggregated worker flags (workbench.targets.vllm.target.engine_flags) are started as a live graph in several layouts
(TP2 with and without expert parallelism, TP1 with it; with and without MTP), and the same prompts (English text from
AIPerf's corpus, then the checks' smoke prompt) are sent to each at temperature 0.6 with special tokens kept in the text. A healthy engine on random weights answers with ordinary tokens of
the generated vocabulary; a corrupted one returns special tokens (the sampler's answer to non-finite logits). Printed per
layout: engine start (s), vLLM's own init (s), answers made only of special tokens, and the mean share of special tokens.
Measured on a 2-core host (32 prompts): TP2 + expert parallel gave 5 of 32 answers of special tokens only and a 46%
special-token share (3-6 of 32 and 21-23% with the study's AIPerf prompts; and, with MTP at block size 128, a segfault in
vLLM's CPU fused-MoE kernel); TP2, TP1 + EP, TP2 + MTP and TP1 + EP + MTP: 0 of 32, 0%. Engine start 42-62 s each
(compile cache warm), vLLM's own init 11-21 s.

Usage: .venv/bin/python bench/vllm_cpu_ep.py [--prompts 24] [--out runs/bench/vllm_cpu_ep.json]   (needs `make venv-vllm`)
"""
import argparse, json, time
import httpx
from workbench.base.core import runs_dir
from pathlib import Path
from workbench.checks.endpoint import SMOKE_PROMPT
from workbench.domain.variants import recipe_variant, baseline
from workbench.targets.vllm.target import VllmTarget, VllmGraph, split_flags

SPECIAL = ('<|endoftext|>', '<|im_start|>', '<|im_end|>')
LAYOUTS = {'TP2 + EP': (baseline, {'--tensor-parallel-size': '2', '--enable-expert-parallel': None}),
           'TP2': (baseline, {'--tensor-parallel-size': '2'}),
           'TP1 + EP': (baseline, {'--tensor-parallel-size': '1', '--enable-expert-parallel': None}),
           'TP2 + MTP': (recipe_variant, {'--tensor-parallel-size': '2'}),
           'TP1 + EP + MTP': (recipe_variant, {'--tensor-parallel-size': '1', '--enable-expert-parallel': None})}

def layout_args(args, want):
    "The worker flags with TP and expert parallelism set as `want` says."
    d = {k: v for k, v in split_flags(args) if k not in ('--tensor-parallel-size', '--enable-expert-parallel')}
    d.update(want)
    return [t for k, v in d.items() for t in ([k] if v is None else [k, v])]

def measure(name, make, want, prompts, max_tokens=32):
    t = VllmTarget(osl=24)
    ws, envs, router, spec, notes, model = t.engine_plan(make('motif-3'))
    for w in ws: w.vllm_args = layout_args(w.vllm_args, want)
    with VllmGraph(ws, router_mode=router, model=model, ready_timeout_s=900, worker_env=envs) as g:
        only, share = 0, []
        for m in prompts:
            r = httpx.post(g.url + '/v1/chat/completions', json={'model': g.model_name, 'messages': m, 'max_tokens': max_tokens, 'ignore_eos': True,
                                                                   'temperature': 0.6, 'skip_special_tokens': False}, timeout=300).json()
            c = r['choices'][0]['message'].get('content') or ''
            share.append(sum(c.count(s) for s in SPECIAL)/max_tokens)
            for s in SPECIAL: c = c.replace(s, '')
            only += not c.strip()
        return {'layout': name, 'args': ws[0].vllm_args, 'engine_start_s': g.ready_s, 'engine_init_s': g.engine_init_s(),
                'special_only_answers': only, 'prompts': len(prompts), 'special_share': round(sum(share)/len(share), 3)}

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--prompts', type=int, default=24)
    ap.add_argument('--layouts', default=','.join(LAYOUTS))
    ap.add_argument('--out', default=str(runs_dir()/'bench'/'vllm_cpu_ep.json'))
    a = ap.parse_args()
    # English text from AIPerf's own prompt corpus, ~100 words each (the kind of prompt the study's AIPerf points send; prompts
    # in the generated model's pseudo-language, with or without a shared prefix, did not show the corruption), then the
    # smoke prompt the checks use
    import aiperf
    words = (Path(aiperf.__file__).parent/'dataset'/'generator'/'assets'/'shakespeare.txt').read_text().split()
    prompts = [[{'role': 'user', 'content': ' '.join(words[1000 + 100*i:1100 + 100*i])}] for i in range(a.prompts - 1)] + [SMOKE_PROMPT]
    rows = []
    for name in a.layouts.split(','):
        make, want = LAYOUTS[name]
        rows.append(measure(name, make, want, prompts))
        r = rows[-1]
        print(f"{name:16} start {r['engine_start_s']:6.1f} s  vLLM init {r['engine_init_s'] or float('nan'):5.1f} s  "
              f"special-only answers {r['special_only_answers']}/{r['prompts']}  special-token share {r['special_share']:.3f}", flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True); Path(a.out).write_text(json.dumps(rows, indent=1))
    print('written', a.out)

if __name__ == '__main__': main()
