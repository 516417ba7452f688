# The concern directories of the two engine libraries, and the sources of lorascope_core (the
# torch-free part: file formats, configs, tokenizers, chat templates, generation parameters). One
# definition for the two builds that compile the core: the engine (engine/CMakeLists.txt) and the
# libFuzzer targets (tests/fuzz, built with clang).
set(LORASCOPE_CORE_DIRS util io tokenizer params batching bench chat)
set(LORASCOPE_ENGINE_DIRS runtime weights ops models sampling adapters engine)
set(LORASCOPE_CORE_SOURCES)
foreach(_lorascope_dir IN LISTS LORASCOPE_CORE_DIRS)
  file(GLOB _lorascope_dir_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/src/${_lorascope_dir}/*.cpp)
  list(APPEND LORASCOPE_CORE_SOURCES ${_lorascope_dir_sources})
endforeach()
