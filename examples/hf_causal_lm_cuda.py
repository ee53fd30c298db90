"""A Hugging Face causal LM on CUDA: forward, greedy generation and a mixed-precision training step.

A tiny Llama built from a config with seeded random weights (nothing is downloaded). The same
model is kept on the CPU as the reference: the CUDA logits must match it within tolerance and
greedy generation must produce the same tokens. Then a few AdamW steps under
``torch.autocast("cuda", dtype=torch.float16)`` with ``torch.amp.GradScaler("cuda")``, and
gradient checkpointing with attention dropout against the same model without it.
Prints one JSON line with what it measured; exits non-zero if a check fails.

    python examples/hf_causal_lm_cuda.py [--steps N]
"""

import argparse
import copy
import json

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def tiny_llama(attention_dropout: float = 0.0) -> LlamaForCausalLM:
    config = LlamaConfig(
        attention_dropout=attention_dropout,
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()

    assert torch.cuda.device_count() > 0, "needs a GPU"
    torch.cuda.set_device(0)

    cpu_model = tiny_llama()
    model = copy.deepcopy(cpu_model).to("cuda")
    g = torch.Generator().manual_seed(1)
    input_ids = torch.randint(3, 256, (2, 12), generator=g)
    attention_mask = torch.ones_like(input_ids)

    # Forward: CUDA logits against the CPU model's.
    with torch.no_grad():
        ref_logits = cpu_model(input_ids, attention_mask=attention_mask).logits
        logits = model(input_ids.cuda(), attention_mask=attention_mask.cuda()).logits
    logits_device = str(logits.device)
    max_abs_diff = (logits.cpu() - ref_logits).abs().max().item()

    # Greedy generation: the same tokens as on the CPU.
    gen_kwargs = dict(max_new_tokens=8, do_sample=False, pad_token_id=0)
    ref_tokens = cpu_model.generate(input_ids, attention_mask=attention_mask, **gen_kwargs)
    tokens = model.generate(input_ids.cuda(), attention_mask=attention_mask.cuda(), **gen_kwargs)

    # Training: fp16 autocast and a gradient scaler, on one fixed batch.
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    batch = torch.randint(3, 256, (4, 16), generator=g).cuda()
    losses, autocast_dtypes = [], set()
    for _ in range(args.steps):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            out = model(batch, labels=batch)
            autocast_dtypes.add(str(out.logits.dtype))
        scaler.scale(out.loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(out.loss.item())

    # Gradient checkpointing with attention dropout: the recomputed forward must draw the same
    # dropout masks, so the gradients equal those of the plain model.
    plain = tiny_llama(attention_dropout=0.2).cuda().train()
    checkpointed = copy.deepcopy(plain)
    checkpointed.gradient_checkpointing_enable()
    grads = []
    for m in (plain, checkpointed):
        torch.cuda.manual_seed(7)
        m(batch, labels=batch).loss.backward()
        grads.append([p.grad for p in m.parameters()])
    ckpt_grad_diff = max((a - b).abs().max().item() for a, b in zip(*grads))
    torch.cuda.synchronize()

    result = {
        "logits_device": logits_device,
        "max_abs_logit_diff": max_abs_diff,
        "tokens": tokens.cpu().tolist(),
        "ref_tokens": ref_tokens.tolist(),
        "losses": losses,
        "autocast_logits_dtypes": sorted(autocast_dtypes),
        "scale": scaler.get_scale(),
        "param_device": str(next(model.parameters()).device),
        "param_dtype": str(next(model.parameters()).dtype),
        "checkpointing_grad_diff": ckpt_grad_diff,
    }
    print(json.dumps(result), flush=True)
    if max_abs_diff > 1e-4:
        raise SystemExit(f"logits differ from the CPU model by {max_abs_diff}")
    if result["tokens"] != result["ref_tokens"]:
        raise SystemExit("greedy tokens differ from the CPU model's")
    if not all(map(lambda v: v == v and abs(v) != float("inf"), losses)):
        raise SystemExit(f"non-finite loss: {losses}")
    if losses[-1] >= losses[0]:
        raise SystemExit(f"training did not reduce the loss: {losses}")
    if ckpt_grad_diff > 1e-6:
        raise SystemExit(f"gradient checkpointing changed the gradients by {ckpt_grad_diff}")


if __name__ == "__main__":
    main()
