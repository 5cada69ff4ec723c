#!/usr/bin/env python3
"""Reference data for seam's tokenizer.json implementation, made with Hugging Face
`tokenizers` (the Rust library behind transformers).

It trains three small byte-level BPE tokenizers on generated multi-script text:

  qwen2-style        NFC normalizer, Split(Qwen2 pattern) + ByteLevel, special tokens
                     <|endoftext|> <|im_start|> <|im_end|>, a non-special added token and a
                     normalized added token, ByteLevel post-processor and decoder
  gpt2-style         ByteLevel pre-tokenizer with GPT-2's built-in regex and
                     add_prefix_space=True, a <mask> token with lstrip (RoBERTa style),
                     a single_word token, and Sequence[ByteLevel, TemplateProcessing]
                     adding <|endoftext|> before and after
  llama3-ignore-merges  Split(Llama-3 pattern) + ByteLevel, ignore_merges=true with a few
                     vocabulary entries that no merge reaches, TemplateProcessing BOS

and writes, under OUT:

  <name>.tokenizer.json   the tokenizer
  <name>.cases.json       thousands of random and adversarial strings with their ids
                          (add_special_tokens false and true) and decoded text, plus
                          random id sequences with their decoded text
  bench.json              HF tokenizers' single-thread encoding speed (MB/s) on an English
                          text, with the token count and an FNV-1a hash of the ids

Usage:
  python3 tools/make_tokenizer_refs.py OUT [--bench-text FILE] [--extra-tokenizer NAME=FILE ...]
  python3 tools/make_tokenizer_refs.py --dry-run     (no tokenizers needed: checks the generators)
"""
import argparse
import json
import os
import random
import sys
import time

# Single-thread measurements: must be set before tokenizers is imported.
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
GPT2_SPECIALS = ["<|endoftext|>", "<mask>"]
LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                   "<|eot_id|>"]
# Every family's markers appear in the test strings, so each tokenizer also
# meets markers that are not its own.
ALL_MARKERS = sorted(set(QWEN_SPECIALS + GPT2_SPECIALS + LLAMA3_SPECIALS +
                         ["<tool_call>", "[SW]", "cafe\u0301", "<unk>", "<s>", "</s>"]))

# ---------------------------------------------------------------- text generators

WORDS = ("the of and to in is was that for it with as his on be at by had are but from or have an they which "
         "one you were her all she there would their we him been has when who will more no if out so said what up "
         "its about into than them can only other new some could time these two may then do first any my now such "
         "like our over man me even most made after also did many before must through back years where much your "
         "way well down should because each just those people how too little state good very make world still own "
         "see men work long get here between both life being under never day same another know while last might us "
         "great old year off come since against go came right used take three tokenizer model kernel graph memory "
         "batch request stream server engine prefix cache decode prefill attention vector matrix function").split()
SYLLABLES = ("ka ri to mo na shi ble tion ver ing pre con un der ist al ment ous ize qua zy xo pha ght ck str "
             "th wh ou ea io ae ph").split()

SCRIPTS = {
    "latin1": [chr(c) for c in range(0xC0, 0x100) if c not in (0xD7, 0xF7)],
    "cyrillic": [chr(c) for c in range(0x410, 0x450)],
    "greek": [chr(c) for c in range(0x391, 0x3CA) if c != 0x3A2],
    "cjk": [chr(c) for c in range(0x4E00, 0x4E00 + 400)],
    "hiragana": [chr(c) for c in range(0x3041, 0x3097)],
    "katakana": [chr(c) for c in range(0x30A1, 0x30FB)],
    "hangul": [chr(c) for c in range(0xAC00, 0xAC00 + 300)],
    "arabic": [chr(c) for c in range(0x627, 0x64B)],
    "hebrew": [chr(c) for c in range(0x5D0, 0x5EB)],
    "devanagari": [chr(c) for c in range(0x905, 0x940)],
    "thai": [chr(c) for c in range(0xE01, 0xE31)],
}
COMBINING = [chr(c) for c in range(0x300, 0x370)]
EMOJI = ["\U0001F600", "\U0001F602", "\U0001F44D", "\U0001F680", "\u2764\uFE0F", "\U0001F389", "\u2603",
         "\U0001F9D1", "\U0001F468", "\U0001F469", "\U0001F467", "\U0001F466", "\U0001F44B"]
SKIN_TONES = [chr(c) for c in range(0x1F3FB, 0x1F400)]
ZWJ = "\u200D"
FLAGS = ["\U0001F1EB\U0001F1F7", "\U0001F1EF\U0001F1F5", "\U0001F1FA\U0001F1F8", "\U0001F1E9\U0001F1EA"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", " \n", "\u00A0", "\u3000", "\u2003", "\u2009", "\u202F",
          "\u205F", "\u1680", "\u2028", "\u2029", "\u0085", "\u000B", "\u000C", "\u180E", "\u200B", "    ",
          "\t\t", " \t ", "\n   \n"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["\u2014", "\u2013", "\u2026", "\u00AB", "\u00BB", "\u201C",
                                                     "\u201D", "\u2019", "\u00BF", "\u00A1", "\u3002", "\uFF0C",
                                                     "\u00B7", "\u20AC", "\u00A3", "\u00A9"]
DIGITS = list("0123456789") + ["\u0663", "\u0969", "\uFF11", "\u00B2", "\u2162", "\u2460", "\u00BD", "\u0E53"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL", "'Ll", "'D",
                "\u2019s", "'\u017F", "'\u212A", "'x", "''s"]
ODD = ["\x00", "\x01", "\x7F", "\uFFFD", "\uFEFF", "\uE000", "\uFFFF", "\U0010FFFF", "\U0001D400", "\u0130",
       "\u0131", "\u00DF", "\u1E9E", "\uFB01", "\u2126", "\u212B", "\u00C5", "A\u030A", "\u1100\u1161\u11A8",
       "\u0065\u0301\u0323", "\u0928\u093F", "\u0E01\u0E34"]


def english_word(rng):
    r = rng.random()
    if r < 0.8:
        w = WORDS[int(rng.random() ** 2 * len(WORDS))]  # skewed towards the common words
    else:
        w = "".join(SYLLABLES[int(rng.random() * len(SYLLABLES))] for _ in range(1 + int(rng.random() * 3)))
    r = rng.random()
    if r < 0.08:
        w = w.capitalize()
    elif r < 0.1:
        w = w.upper()
    return w


def script_word(rng, script=None):
    pool = SCRIPTS[script or rng.choice(sorted(SCRIPTS))]
    return "".join(pool[int(rng.random() * len(pool))] for _ in range(1 + int(rng.random() * 6)))


def number(rng):
    r = rng.random()
    if r < 0.5:
        return str(int(rng.random() * 10 ** (1 + int(rng.random() * 9))))
    if r < 0.7:
        return f"{rng.random() * 1000:.{1 + int(rng.random() * 4)}f}"
    return "".join(DIGITS[int(rng.random() * len(DIGITS))] for _ in range(1 + int(rng.random() * 8)))


def emoji(rng):
    r = rng.random()
    if r < 0.4:
        return EMOJI[int(rng.random() * len(EMOJI))]
    if r < 0.6:
        return EMOJI[int(rng.random() * 4)] + SKIN_TONES[int(rng.random() * 5)]
    if r < 0.8:  # ZWJ family, sometimes with skin tones
        people = [EMOJI[7 + int(rng.random() * 5)] + (SKIN_TONES[int(rng.random() * 5)] if rng.random() < 0.3 else "")
                  for _ in range(2 + int(rng.random() * 3))]
        return ZWJ.join(people)
    return FLAGS[int(rng.random() * len(FLAGS))]


def english_sentence(rng, n_words=None):
    n = n_words or 3 + int(rng.random() * 15)
    words = [english_word(rng) for _ in range(n)]
    words[0] = words[0].capitalize()
    s = " ".join(words)
    for _ in range(int(rng.random() * 3)):
        i = int(rng.random() * len(s))
        s = s[:i] + rng.choice([",", ";", " -", "'s", "n't", " (", ")", ":"]) + s[i:]
    return s + rng.choice([".", ".", ".", "!", "?", "...", ""])


def code_line(rng):
    name = english_word(rng).lower()
    forms = [f"def {name}(x, y=1):", f"    return {name}[i] + {number(rng)}", f"for i in range({number(rng)}):",
             f"    if x == '{name}': print(\"{name}\")", f"{name} = {{'a': {number(rng)}, 'b': [1, 2, 3]}}",
             f"int {name}(int* p) {{ return p[{number(rng)}] << 2; }}", f"// TODO({name}): fix #{number(rng)}",
             f"    {name}.append(x**2)  # square", f"<div class=\"{name}\">{english_word(rng)}</div>"]
    return forms[int(rng.random() * len(forms))]


def training_corpus(rng, n_lines=30000):
    lines = []
    for _ in range(n_lines):
        r = rng.random()
        if r < 0.45:
            lines.append(english_sentence(rng))
        elif r < 0.6:
            lines.append(code_line(rng))
        elif r < 0.85:
            script = rng.choice(sorted(SCRIPTS))
            lines.append(" ".join(script_word(rng, script) for _ in range(2 + int(rng.random() * 8))) +
                         rng.choice(["", ".", "\u3002", "!", "?"]))
        else:
            parts = [english_word(rng), number(rng), emoji(rng), script_word(rng), rng.choice(PUNCT) * 3]
            rng.shuffle(parts)
            lines.append(" ".join(parts))
    return lines


def random_piece(rng):
    r = rng.random()
    if r < 0.25:
        return english_word(rng)
    if r < 0.35:
        return script_word(rng)
    if r < 0.45:
        return SPACES[int(rng.random() * len(SPACES))]
    if r < 0.55:
        return number(rng)
    if r < 0.62:
        return emoji(rng)
    if r < 0.7:
        return PUNCT[int(rng.random() * len(PUNCT))] * (1 + int(rng.random() * 3))
    if r < 0.76:
        base = rng.choice("aeiouAEIOUnsc" + "".join(SCRIPTS["cyrillic"][:5]))
        return base + "".join(COMBINING[int(rng.random() * len(COMBINING))] for _ in range(1 + int(rng.random() * 3)))
    if r < 0.82:
        return CONTRACTIONS[int(rng.random() * len(CONTRACTIONS))]
    if r < 0.88:
        return ODD[int(rng.random() * len(ODD))]
    if r < 0.94:
        m = ALL_MARKERS[int(rng.random() * len(ALL_MARKERS))]
        if rng.random() < 0.2:  # a truncated marker must not match
            m = m[:max(1, int(rng.random() * len(m)))]
        return m
    return chr(0x20 + int(rng.random() * 0x2FFF)) if rng.random() < 0.5 else chr(0x10000 + int(rng.random() * 0x1FFFF))


def valid_text(s):
    # No lone surrogates (they cannot be UTF-8).
    return "".join(c for c in s if not 0xD800 <= ord(c) <= 0xDFFF)


def test_strings(rng, n_random=2300):
    fixed = ["", " ", "  ", "\n", "\r\n", "\t", " \n ", "a", "A", "Hello world", " Hello world", "Hello  world",
             "Hello world ", "I'm here, you're there, they'll go; it's DON'T WON'T", "'s 'S 'ſ 'K 'Ll",
             "Numbers: 1 12 123 1234 12345 1234567890 3.14159 -42 1e10 0x1F ٣٤٥ ١٢٣٤ ①②③ ½ Ⅻ",
             "def f(x):\n    return x**2  # square\n", "    indented\n\tand tabbed\r\n\r\n", "trailing spaces   ",
             "emoji 👍🏽 family 👨‍👩‍👧 flag 🇫🇷 done", "👩🏿‍🚀👨🏻‍🤝‍👨🏼", "naïve coöperate résumé",
             "e\u0301 combining vs \u00e9 precomposed", "A\u030A \u212B \u00C5", "\u1100\u1161\u11A8 \uAC01",
             "\u0065\u0301\u0323 \u1EB9\u0301", "Straße STRASSE ẞ", "ﬁne ﬀ", "İstanbul ıi",
             "中文分词测试：今天天气很好。", "日本語のテキストです。カタカナ、ひらがな", "한국어 문장입니다.",
             "Русский текст с числами 12345", "العربية نص قصير", "מילים בעברית", "हिन्दी पाठ", "ไทย ภาษา",
             "\u00A0nbsp\u2003em\u3000ideographic\u180Emongolian\u200Bzero\u2028line\u2029para\u0085nel",
             "a\u180Eb", " \u180E ", "x\u000By\u000Cz", "\x00\x01 control \x7f", "\uFEFFbom", "\uFFFD replacement",
             "<|endoftext|>", " <|endoftext|> ", "<|endoftext|><|endoftext|>", "a<|endoftext|>b",
             "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>", "<|im_sta", "<|im_end",
             "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
             "x <mask> y", "x  <mask>  y", "<mask>", " <mask>", "a<mask>b", "\t<mask>\n",
             "[SW] a[SW] [SW]b [SW]", "<tool_call>{\"name\": \"f\"}</tool_call>", "café cafe\u0301 CAFÉ",
             "<unk> <s> </s>", "<<|endoftext|>>", "<|<|im_start|>|>",
             " " * 50 + "x", "x" + " " * 50, "\n" * 20, " \n" * 10, "\t" * 9 + "x", "a" * 300, "ab" * 200,
             "1" * 100, "12345 " * 30, "!" * 64, "\U0001F600" * 40, "中" * 100, "e\u0301" * 60,
             ("The quick brown fox jumps over the lazy dog. " * 40).strip(), "x" * 3000,
             " ".join(["supercalifragilisticexpialidocious"] * 20)]
    out = list(fixed)
    for _ in range(n_random):
        r = rng.random()
        if r < 0.2:
            s = english_sentence(rng)
        elif r < 0.3:
            s = code_line(rng)
        else:
            s = "".join(random_piece(rng) for _ in range(1 + int(rng.random() * 12)))
        out.append(valid_text(s))
    # A few long mixed documents.
    for _ in range(12):
        out.append(valid_text("".join(random_piece(rng) for _ in range(300 + int(rng.random() * 500)))))
    seen, unique = set(), []
    for s in out:
        if s not in seen:
            seen.add(s)
            unique.append(s)
    return unique


def fnv1a_ids(ids):
    """FNV-1a 64 over the ids as little-endian int32 bytes (seam computes the same)."""
    h = 0xCBF29CE484222325
    for i in ids:
        for b in int(i).to_bytes(4, "little", signed=True):
            h ^= b
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


# ---------------------------------------------------------------- tokenizers

def build_tokenizers(corpus):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, \
        processors, trainers

    def train(tok, specials, vocab_size):
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=specials,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        tok.train_from_iterator(corpus, trainer=trainer)
        return tok

    made = {}

    # Qwen2 style.
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    train(tok, QWEN_SPECIALS, 2000)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_tokens([AddedToken("<tool_call>", special=False, normalized=False),
                    AddedToken("cafe\u0301", special=False, normalized=True)])
    made["qwen2-style"] = tok

    # GPT-2 regex (ByteLevel's own), add_prefix_space as RoBERTa, <mask> with lstrip.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    train(tok, ["<|endoftext|>"], 1500)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=False, special=True, normalized=False)])
    tok.add_tokens([AddedToken("[SW]", single_word=True, special=False, normalized=False)])
    eot = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=True),
        processors.TemplateProcessing(single="<|endoftext|> $A <|endoftext|>", pair="<|endoftext|> $A $B",
                                      special_tokens=[("<|endoftext|>", eot)])])
    made["gpt2-style"] = tok

    # Llama-3 pattern with ignore_merges and vocabulary entries no merge reaches.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    train(tok, LLAMA3_SPECIALS, 1800)
    data = json.loads(tok.to_str())
    data["model"]["ignore_merges"] = True
    vocab = data["model"]["vocab"]
    next_id = max(vocab.values()) + 1
    for word in ["Ġsupercalifragilisticexpialidocious", "Ġquick", "Ġbrown", "Ġfox", "xxxxxxxxxxxxxxxx", "Ġtokenizer",
                 "123", "ĠĠĠĠ", "!!!", "Ġ\u00e4\u00b8\u0143"]:
        if word not in vocab:
            vocab[word] = next_id
            next_id += 1
    tok = Tokenizer.from_str(json.dumps(data))
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", bos)])
    made["llama3-ignore-merges"] = tok
    return made


def reference_cases(tok, strings, rng):
    cases = []
    for s in strings:
        ids = tok.encode(s, add_special_tokens=False).ids
        ids_special = tok.encode(s, add_special_tokens=True).ids
        cases.append({"text": s, "ids": ids, "ids_with_special": ids_special,
                      "decoded": tok.decode(ids, skip_special_tokens=False),
                      "decoded_skip": tok.decode(ids_special, skip_special_tokens=True)})
    n_vocab = tok.get_vocab_size(with_added_tokens=True)
    decode_cases = []
    for _ in range(400):
        ids = [int(rng.random() * n_vocab) for _ in range(1 + int(rng.random() * 12))]
        decode_cases.append({"ids": ids, "text": tok.decode(ids, skip_special_tokens=False),
                             "text_skip": tok.decode(ids, skip_special_tokens=True)})
    return cases, decode_cases


def bench(tokenizers_by_name, text):
    results = []
    lines = text.splitlines(keepends=True)
    n_bytes = len(text.encode("utf-8"))
    for name, tok in tokenizers_by_name.items():
        best_whole, best_batch, ids = None, None, None
        for _ in range(3):
            t0 = time.perf_counter()
            enc = tok.encode(text, add_special_tokens=False)
            dt = time.perf_counter() - t0
            ids = enc.ids
            best_whole = dt if best_whole is None else min(best_whole, dt)
        for _ in range(2):
            t0 = time.perf_counter()
            tok.encode_batch(lines, add_special_tokens=False)
            dt = time.perf_counter() - t0
            best_batch = dt if best_batch is None else min(best_batch, dt)
        r = {"tokenizer": name, "bytes": n_bytes, "n_tokens": len(ids), "ids_fnv1a64": fnv1a_ids(ids),
             "encode_whole_s": best_whole, "encode_whole_mb_s": n_bytes / best_whole / 1e6,
             "encode_batch_lines_s": best_batch, "encode_batch_lines_mb_s": n_bytes / best_batch / 1e6}
        print(f"HF tokenizers {name}: encode(whole text) {r['encode_whole_mb_s']:.2f} MB/s, "
              f"encode_batch(lines, 1 thread) {r['encode_batch_lines_mb_s']:.2f} MB/s, "
              f"{len(ids)} tokens, fnv {r['ids_fnv1a64']}", flush=True)
        results.append(r)
    return results


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
    print(f"wrote {path} ({os.path.getsize(path)} bytes)", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--bench-text", help="an English text file for the speed measurement")
    ap.add_argument("--extra-tokenizer", action="append", default=[],
                    help="NAME=tokenizer.json also measured for speed")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()

    rng = random.Random(20261130)
    corpus = training_corpus(rng)
    strings = test_strings(random.Random(7))
    if args.dry_run:
        n_chars = sum(len(s) for s in strings)
        print(f"corpus: {len(corpus)} lines, {sum(len(x) for x in corpus)} chars; "
              f"test strings: {len(strings)}, {n_chars} chars; max {max(len(s) for s in strings)}")
        for s in strings[:3] + strings[-3:]:
            s.encode("utf-8")
        print(repr(strings[100])[:200])
        print(fnv1a_ids([1, 2, 3, -1]))
        return
    if not args.out:
        ap.error("OUT is required")
    os.makedirs(args.out, exist_ok=True)

    import tokenizers
    print(f"tokenizers {tokenizers.__version__}", flush=True)
    made = build_tokenizers(corpus)
    for name, tok in made.items():
        try:
            with open(os.path.join(args.out, f"{name}.tokenizer.json"), "w", encoding="utf-8") as f:
                f.write(tok.to_str(pretty=False))
            cases, decode_cases = reference_cases(tok, strings, random.Random(11))
            write_json(os.path.join(args.out, f"{name}.cases.json"), {
                "tokenizer": name, "tokenizers_version": tokenizers.__version__,
                "note": "ids = encode(text, add_special_tokens=False); ids_with_special = encode(text, True); "
                        "decoded = decode(ids, skip_special_tokens=False); decoded_skip = "
                        "decode(ids_with_special, skip_special_tokens=True); decode_cases: random ids with "
                        "decode(ids, False) and decode(ids, True)",
                "cases": cases, "decode_cases": decode_cases})
        except Exception as e:  # keep the other tokenizers' files
            print(f"FAILED {name}: {type(e).__name__}: {e}", flush=True)

    if args.bench_text:
        try:
            from tokenizers import Tokenizer
            text = open(args.bench_text, encoding="utf-8").read()
            to_bench = dict(made)
            for spec in args.extra_tokenizer:
                name, path = spec.split("=", 1)
                to_bench[name] = Tokenizer.from_file(path)
            results = bench(to_bench, text)
            write_json(os.path.join(args.out, "bench.json"), {
                "tokenizers_version": tokenizers.__version__, "threads": "RAYON_NUM_THREADS=1",
                "bench_text": os.path.basename(args.bench_text), "results": results})
        except Exception as e:
            print(f"FAILED bench: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
