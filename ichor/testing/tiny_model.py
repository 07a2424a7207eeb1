"""A tiny random Qwen2 with a byte-level BPE tokenizer and a ChatML template, built in well under a second.

Good for exercising the pipeline's plumbing (it learns train pairs but does not generalise);
use SmolLM2 (``pipelines.base_model``) for anything about quality.
"""

from __future__ import annotations

from pathlib import Path

CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def default_corpus() -> list[str]:
    words = (
        "install deps with pnpm npm uv pip poetry run the tests git push tag copy folder regex sql select "
        "from where group by having python version node java path config file error still failing fix "
        "assistant user system you're right sorry use instead"
    ).split()
    return [" ".join(words[i:] + words[:i]) for i in range(len(words))] * 4


def build_tiny_model(out: str | Path, corpus: list[str] | None = None, seed: int = 0) -> Path:
    """Write a tiny Qwen2ForCausalLM + tokenizer to ``out`` and return it."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.train_from_iterator(
        corpus or default_corpus(),
        trainers.BpeTrainer(
            vocab_size=512,
            special_tokens=SPECIALS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    hf_tok.chat_template = CHATML
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(hf_tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        eos_token_id=hf_tok.eos_token_id,
        pad_token_id=hf_tok.pad_token_id,
        bos_token_id=None,
    )
    out = Path(out)
    Qwen2ForCausalLM(config).save_pretrained(out)
    hf_tok.save_pretrained(out)
    return out
