"""A makemore-style character-level MLP, written as PyTorch users write it (run it with
PyTorch, or on xad with ``python -m xad.as_torch makemore_mlp.py``)."""

import json
import sys
import time

import torch
import torch.nn.functional as F

NAMES = """emma olivia ava isabella sophia charlotte mia amelia harper evelyn abigail emily
elizabeth mila ella avery sofia camila aria scarlett victoria madison luna grace chloe penelope
layla riley zoey nora lily eleanor hannah lillian addison aubrey ellie stella natalie zoe leah
hazel violet aurora savannah audrey brooklyn bella claire skylar lucy paisley everly anna
caroline nova genesis emilia kennedy samantha maya willow kinsley naomi aaliyah elena sarah
ariana allison gabriella alice madelyn cora ruby eva serenity autumn adeline hailey gianna
valentina isla eliana quinn nevaeh ivy sadie piper lydia alexa josephine emery julia delilah
arianna vivian kaylee sophie brielle madeline noah liam mason jacob william ethan james
alexander michael benjamin elijah daniel aiden logan matthew lucas jackson david oliver jayden
joseph gabriel samuel carter anthony john dylan luke henry andrew isaac christopher joshua
wyatt sebastian owen caleb nathan ryan jack hunter levi christian jaxon julian landon grayson
jonathan isaiah charles thomas aaron eli connor jeremiah cameron josiah adrian colton jordan
brayden nicholas robert angel hudson lincoln evan dominic austin gavin nolan parker adam chase
jace ian cooper easton kevin jose tyler brandon asher jaxson mateo jason ayden zachary carson
xavier leo ezra bentley sawyer kayden blake nathaniel""".split()

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 600
t0 = time.perf_counter()
chars = sorted(set("".join(NAMES)))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi["."] = 0
itos = {i: s for s, i in stoi.items()}
vocab = len(stoi)
block_size = 3

X, Y = [], []
for w in NAMES:
    context = [0] * block_size
    for ch in w + ".":
        ix = stoi[ch]
        X.append(context)
        Y.append(ix)
        context = context[1:] + [ix]
X = torch.tensor(X, dtype=torch.long)
Y = torch.tensor(Y, dtype=torch.long)

g = torch.Generator().manual_seed(2147483647)
C = torch.randn((vocab, 10), generator=g)
W1 = torch.randn((30, 100), generator=g) * (5 / 3) / 30 ** 0.5
b1 = torch.randn(100, generator=g) * 0.01
W2 = torch.randn((100, vocab), generator=g) * 0.01
b2 = torch.zeros(vocab)
parameters = [C, W1, b1, W2, b2]
for p in parameters:
    p.requires_grad = True
n_params = sum(p.nelement() for p in parameters)

for i in range(steps):
    ix = torch.randint(0, X.shape[0], (64,), generator=g)
    emb = C[X[ix]]
    h = torch.tanh(emb.view(-1, 30) @ W1 + b1)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Y[ix])
    for p in parameters:
        p.grad = None
    loss.backward()
    lr = 0.1 if i < steps * 3 // 4 else 0.01
    for p in parameters:
        p.data += -lr * p.grad

with torch.no_grad():
    emb = C[X]
    h = torch.tanh(emb.view(emb.shape[0], -1) @ W1 + b1)
    full_loss = F.cross_entropy(h @ W2 + b2, Y).item()

samples = []
for _ in range(5):
    out, context = [], [0] * block_size
    while True:
        emb = C[torch.tensor([context])]
        h = torch.tanh(emb.view(1, -1) @ W1 + b1)
        probs = F.softmax(h @ W2 + b2, dim=1)
        ix = torch.multinomial(probs, num_samples=1, generator=g).item()
        context = context[1:] + [ix]
        if ix == 0 or len(out) > 20:
            break
        out.append(itos[ix])
    samples.append("".join(out))

print(json.dumps({"program": "makemore_mlp", "params": n_params, "loss": full_loss,
                  "samples": samples, "seconds": time.perf_counter() - t0}))
