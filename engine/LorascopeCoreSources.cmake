# The sources of lorascope_core, the torch-free part of the engine: file formats, configs,
# tokenizers and generation parameters. One list for the two builds that compile them: the
# engine (engine/CMakeLists.txt) and the libFuzzer targets (tests/fuzz, built with clang).
set(_lorascope_engine_dir ${CMAKE_CURRENT_LIST_DIR})
file(GLOB LORASCOPE_CORE_SOURCES CONFIGURE_DEPENDS
  ${_lorascope_engine_dir}/src/util/*.cpp
  ${_lorascope_engine_dir}/src/io/*.cpp
  ${_lorascope_engine_dir}/src/tokenizer/*.cpp)
# Generation parameters need no torch: in the core so that the UI parses them with the same rules.
list(APPEND LORASCOPE_CORE_SOURCES ${_lorascope_engine_dir}/src/sampling/params.cpp)
# Files named *_torch.cpp need LibTorch.
list(FILTER LORASCOPE_CORE_SOURCES EXCLUDE REGEX "_torch\\.cpp$")
