// Filled by the tokenizer work: C ABI around SentencePiece, loaded with dlopen.
