"""The demo pack's tokenizers, each trained from the pack's synthetic corpus by scripts/py/train_demo.py:
SentencePiece unigram (T5), byte-level BPE (BART, BLOOM), SentencePiece BPE with byte fallback and a chat
template (Llama)."""
import os

# The Llama demo's chat layout: [INST] user turns as Llama 2 and Mistral Instruct lay them out (a
# short template written for the demo, not a published one). A system turn is left out: the model
# never saw one.
LLAMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
    "[INST] {{ message['content'] }} [/INST]{% elif message['role'] == 'assistant' %}"
    " {{ message['content'] }}{{ eos_token }}{% endif %}{% endfor %}")


def train_t5_tokenizer(mdir, corpus):
    import io
    import sentencepiece as spm
    from transformers import T5Tokenizer
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=proto, vocab_size=160, model_type="unigram",
        hard_vocab_limit=False, pad_id=0, eos_id=1, unk_id=2, bos_id=-1, character_coverage=1.0,
        num_threads=1, seed_sentencepiece_size=20000, minloglevel=2, shuffle_input_sentence=False)
    with open(os.path.join(mdir, "spiece.model"), "wb") as f:
        f.write(proto.getvalue())
    tok = T5Tokenizer(os.path.join(mdir, "spiece.model"), extra_ids=0, legacy=False)
    tok.save_pretrained(mdir)
    return tok


def train_bpe(corpus, vocab_size, specials):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(corpus, trainer)
    return tk


def train_bart_tokenizer(mdir, corpus):
    from tokenizers import processors
    from transformers import BartTokenizerFast
    # Large enough that every word, lower or upper case, with or without its leading space is one token.
    tk = train_bpe(corpus, 640, ["<s>", "<pad>", "</s>", "<unk>"])
    tk.post_processor = processors.RobertaProcessing(sep=("</s>", 2), cls=("<s>", 0), add_prefix_space=False)
    tok = BartTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                            cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
                            add_prefix_space=False)
    tok.save_pretrained(mdir)
    # vocab.json + merges.txt too, as BART checkpoints ship them.
    tok.backend_tokenizer.model.save(mdir)
    return tok


def train_llama_tokenizer(mdir, corpus):
    """SentencePiece BPE with byte fallback (Llama 2's kind), as tokenizer.model plus HF's tokenizer.json."""
    import io
    import sentencepiece as spm
    from transformers import LlamaTokenizerFast
    proto = io.BytesIO()
    # 256 byte pieces + 4 specials + merges: every digit name, upper or lower case, is one piece.
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=proto, vocab_size=420, model_type="bpe", byte_fallback=True,
        hard_vocab_limit=False, unk_id=0, bos_id=1, eos_id=2, pad_id=3, character_coverage=1.0, num_threads=1,
        minloglevel=2, shuffle_input_sentence=False, split_digits=True, add_dummy_prefix=True,
        remove_extra_whitespaces=False, normalization_rule_name="identity")
    path = os.path.join(mdir, "tokenizer.model")
    with open(path, "wb") as f:
        f.write(proto.getvalue())
    tok = LlamaTokenizerFast(vocab_file=path, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                             pad_token="<pad>", legacy=True, add_bos_token=True, add_eos_token=False,
                             chat_template=LLAMA_CHAT_TEMPLATE)
    tok.save_pretrained(mdir)
    return tok


def train_bloom_tokenizer(mdir, corpus):
    from transformers import BloomTokenizerFast
    tk = train_bpe(corpus, 360, ["<unk>", "<s>", "</s>", "<pad>"])
    tok = BloomTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                             pad_token="<pad>", add_prefix_space=False)
    tok.save_pretrained(mdir)
    return tok
