"""Hugging Face inference as CUDA users write it: pipeline(..., device="cuda") and
from_pretrained(..., device_map="cuda"), on a small model built from a config (no download).
Prints one JSON line with the outputs and the same computation on the CPU."""

import json
import sys

import torch
from transformers import (
    AutoModelForSequenceClassification,
    BertConfig,
    BertForSequenceClassification,
    BertTokenizerFast,
    pipeline,
)

workdir = sys.argv[1] if len(sys.argv) > 1 else "."
torch.manual_seed(0)
words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "movie", "the", "was", "a"]
with open(f"{workdir}/vocab.txt", "w") as f:
    f.write("\n".join(words))
tokenizer = BertTokenizerFast(f"{workdir}/vocab.txt")
config = BertConfig(
    vocab_size=len(words),
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    num_labels=2,
    id2label={0: "NEGATIVE", 1: "POSITIVE"},
    label2id={"NEGATIVE": 0, "POSITIVE": 1},
)
BertForSequenceClassification(config).eval().save_pretrained(f"{workdir}/model")
tokenizer.save_pretrained(f"{workdir}/model")
texts = ["the movie was good", "a bad movie", "the movie was a bad movie"]

cpu = pipeline("text-classification", model=f"{workdir}/model", device="cpu", top_k=None)
gpu = pipeline("text-classification", model=f"{workdir}/model", device="cuda", top_k=None)
gpu0 = pipeline("text-classification", model=f"{workdir}/model", device=0, top_k=None)


def scores(results):
    return [{r["label"]: r["score"] for r in per_text} for per_text in results]


model = AutoModelForSequenceClassification.from_pretrained(f"{workdir}/model", device_map="cuda")
batch = tokenizer(texts, return_tensors="pt", padding=True).to("cuda")
with torch.no_grad():
    logits = model(**batch).logits
    ref = cpu.model(**tokenizer(texts, return_tensors="pt", padding=True)).logits

print(
    json.dumps(
        {
            "pipeline_device": str(gpu.device),
            "pipeline_model_device": str(gpu.model.device),
            "pipeline0_device": str(gpu0.device),
            "scores": scores(gpu(texts)),
            "scores0": scores(gpu0(texts)),
            "ref_scores": scores(cpu(texts)),
            "device_map_device": str(model.device),
            "hf_device_map": {k: str(v) for k, v in getattr(model, "hf_device_map", {}).items()},
            "logits_device": str(logits.device),
            "max_logit_diff": (logits.cpu() - ref).abs().max().item(),
        }
    )
)
