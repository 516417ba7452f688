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

# Our CPU kernels that include neither torch nor x86-only headers unguarded: with the core, what
# scripts/check-arm64 (CTest test_arm64_compile) cross-compiles for arm64.
set(LORASCOPE_PORTABLE_KERNEL_SOURCES)
foreach(_lorascope_kernel ops/cpu_isa ops/thread_pool ops/quantize ops/panel_gemm ops/panel_gemm_x86 ops/row_argmax adapters/lora_kernels)
  list(APPEND LORASCOPE_PORTABLE_KERNEL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/src/${_lorascope_kernel}.cpp)
endforeach()
