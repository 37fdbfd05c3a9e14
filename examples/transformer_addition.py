"""Learn two-digit addition written as characters with a small decoder-only transformer.

Every pair ``a + b`` with ``0 <= a, b < 100`` is a string of 9 characters, operands and sum
zero-padded to fixed width ("37+48=085", "05+07=012"). A fixed 10% of the 10,000 pairs is
held out; the model (token and position embeddings, causal self-attention blocks with
LayerNorm first and a GELU MLP, then LayerNorm and a linear head) is trained with
cross-entropy on the three answer characters, then writes the answers to the held-out sums
greedily, one character at a time; the exact-match accuracy is printed.

    python examples/transformer_addition.py --backend numpy
"""

from __future__ import annotations

import time

import numpy as np
from _common import add_amp_flag, parser, progress, training_step

import xad
import xad.nn as nn
import xad.nn.functional as F

VOCAB = "0123456789+="
PROMPT, ANSWER = 6, 3  # "37+48=" then "085"
HELD_OUT = 1000
SPLIT_SEED = 1234  # the held-out pairs do not depend on --seed


def encode(a: int, b: int) -> list[int]:
    """The 9 token ids of ``"aa+bb=sss"``."""
    return [VOCAB.index(c) for c in f"{a:02d}+{b:02d}={a + b:03d}"]


def dataset() -> tuple[np.ndarray, np.ndarray]:
    """Token arrays ``(9000, 9)`` for training and ``(1000, 9)`` held out (fixed split)."""
    pairs = np.array([encode(a, b) for a in range(100) for b in range(100)], dtype=np.int64)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(pairs))
    return pairs[order[HELD_OUT:]], pairs[order[:HELD_OUT]]


class Decoder(nn.Module):
    """A GPT-style decoder: embeddings, pre-norm causal blocks, final LayerNorm, head."""

    def __init__(self, d_model: int = 64, nhead: int = 4, layers: int = 2,
                 context: int = PROMPT + ANSWER) -> None:
        super().__init__()
        self.tok = nn.Embedding(len(VOCAB), d_model)
        self.pos = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, nhead, 4 * d_model, dropout=0.0,
                                       activation="gelu", batch_first=True, norm_first=True)
            for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, len(VOCAB))
        for emb in (self.tok, self.pos):  # small embeddings, as GPT-2 (not N(0, 1))
            nn.init.normal_(emb.weight, 0.0, 0.1)

    def forward(self, idx: xad.Tensor) -> xad.Tensor:
        """Logits ``(N, T, vocab)`` for token ids ``(N, T)``; position t sees tokens <= t."""
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(xad.arange(t, dtype=xad.int64))
        rows = xad.arange(t, dtype=xad.int64)
        future = rows.expand_dims(-1) < rows  # True above the diagonal: may not attend
        for block in self.blocks:
            x = block(x, src_mask=future, is_causal=True)
        return self.head(self.norm(x))


def answer_loss(model: Decoder, seqs: xad.Tensor) -> xad.Tensor:
    """Cross-entropy of the three answer characters, each predicted from what precedes it."""
    logits = model(seqs[:, :-1])[:, PROMPT - 1:]
    return F.cross_entropy(logits.reshape(-1, len(VOCAB)), seqs[:, PROMPT:].reshape(-1))


def generate(model: Decoder, prompts: xad.Tensor) -> xad.Tensor:
    """Greedy decoding: append the most likely next character ``ANSWER`` times."""
    seqs = prompts
    with xad.no_grad():
        for _ in range(ANSWER):
            nxt = model(seqs)[:, -1].argmax(axis=-1).astype(xad.int64)
            seqs = xad.concat([seqs, nxt.expand_dims(-1)], axis=1)
    return seqs[:, PROMPT:]


def exact_match(model: Decoder, seqs: xad.Tensor) -> float:
    """The fraction of ``seqs`` whose generated answer is exactly right (eval mode)."""
    model.eval()
    out = generate(model, seqs[:, :PROMPT])
    model.train()
    return (out == seqs[:, PROMPT:]).all(axis=1).astype(xad.float32).mean().item()


def _show(model: Decoder, seqs: xad.Tensor, n: int = 3) -> str:
    model.eval()
    out = generate(model, seqs[:n, :PROMPT]).tolist()
    model.train()
    prompts = seqs[:n, :PROMPT].tolist()
    return ", ".join("".join(VOCAB[i] for i in p + o) for p, o in zip(prompts, out))


def main(argv: list[str] | None = None) -> float:
    """Train; print and return the exact-match accuracy on the held-out sums."""
    p = parser(__doc__.splitlines()[0], epochs=8)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    add_amp_flag(p)
    args = p.parse_args(argv)
    xad.set_backend(args.backend)
    xad.manual_seed(args.seed)
    train, held = (xad.tensor(a) for a in dataset())
    model = Decoder()
    opt = xad.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    loader = xad.data.DataLoader(xad.data.TensorDataset(train), batch_size=args.batch_size,
                                 shuffle=True, seed=args.seed)
    steps = args.epochs * len(loader)
    sched = xad.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps)
    scaler = xad.amp.GradScaler(enabled=args.amp)
    step = training_step(opt, lambda seqs: answer_loss(model, seqs), args.compile, scaler)

    start = time.perf_counter()
    bar = progress(args.epochs, "epoch", args.quiet)
    for _ in bar:
        total = 0.0
        for (seqs,) in loader:
            total = total + step(seqs)
            sched.step()
        bar.set_postfix_str(f"loss={(total / len(loader)).item():.4f}")
    bar.close()
    elapsed = time.perf_counter() - start
    acc = exact_match(model, held)
    print(f"held-out exact match {acc:.2%} ({held.shape[0]} sums never seen in training; "
          f"e.g. {_show(model, held)}); trained in {elapsed:.1f}s on {args.backend}")
    return acc


if __name__ == "__main__":
    main()
