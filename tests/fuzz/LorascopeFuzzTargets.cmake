# The libFuzzer targets: tests/fuzz/fuzz_<name>.cpp, seeds in tests/fuzz/corpus/<name>/, an optional
# dictionary tests/fuzz/dict/<name>.dict. Read by the fuzz build (tests/fuzz/CMakeLists.txt as its
# own project) and by the main build, which registers a short run of each with CTest.
set(LORASCOPE_FUZZ_TARGETS
  safetensors          # model.safetensors: header length, JSON header, offsets
  safetensors_index    # model.safetensors.index.json and the shards it names
  model_config         # config.json + generation_config.json
  adapter              # adapter_config.json + adapter_model.safetensors
  tokenizer_files      # tokenizer.json, tokenizer_config.json, vocab.json + merges.txt
  spiece_model         # spiece.model
  tokenize             # encode / decode / streaming detokenization, every tokenizer kind
  jsonl_request        # a JSON Lines request line with its params
  bench_workload       # the bench workload file
  params               # the one parameter parser on deep and huge JSON (lorascope/params.h)
  http_request         # serve's request path: raw bytes through its HTTP parser, routes and sessions
)
