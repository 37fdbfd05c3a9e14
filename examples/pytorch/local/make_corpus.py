"""Write the small local text that stands in for Wikitext-2 (word_language_model/data/tiny).

Sentences from a small grammar (seeded, so the files are the same every time): enough
structure for an LSTM to learn in a few hundred steps, a vocabulary of 47 words.
Run: python examples/pytorch/local/make_corpus.py [OUT_DIR]
"""

import random
import sys
from pathlib import Path

SUBJECTS = ["the cat", "the dog", "a bird", "the old man", "my sister", "the teacher",
            "a small child", "the farmer"]
VERBS = ["sees", "likes", "follows", "finds", "watches", "calls", "helps", "feeds"]
OBJECTS = ["the ball", "a red apple", "the river", "the green house", "a long road",
           "the garden", "a quiet town", "the white horse"]
ENDINGS = ["", "in the morning", "every day", "after the rain", "near the sea",
           "before dinner"]


def sentence(rng: random.Random) -> str:
    words = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(ENDINGS)]
    if rng.random() < 0.3:
        words += ["and", rng.choice(VERBS), rng.choice(OBJECTS)]
    return " ".join(w for w in words if w) + " ."


def main(out: Path) -> None:
    rng = random.Random(0)
    out.mkdir(parents=True, exist_ok=True)
    for name, lines in (("train", 400), ("valid", 60), ("test", 60)):
        text = "\n".join(" ".join(sentence(rng) for _ in range(2)) for _ in range(lines))
        (out / f"{name}.txt").write_text(text + "\n", encoding="utf8")


if __name__ == "__main__":
    here = Path(__file__).resolve().parent.parent / "word_language_model" / "data" / "tiny"
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else here)
