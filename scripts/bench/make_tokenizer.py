"""Writes a small word-level Hugging Face tokenizer to a local directory, so guidellm can size
its synthetic prompts without downloading a model's tokenizer (the benchmark machine has no
model hub). One token per whitespace-separated word, like the judge's own prompts."""

import string
import sys

from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import PreTrainedTokenizerFast

out = sys.argv[1]
words = [a + b for a in string.ascii_lowercase for b in string.ascii_lowercase]
vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
for w in words + list(string.ascii_lowercase) + list(string.digits) + list(string.punctuation):
    vocab.setdefault(w, len(vocab))
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.decoder = decoders.WordPiece()
fast = PreTrainedTokenizerFast(
    tokenizer_object=tok, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]"
)
fast.save_pretrained(out)
print(out)
