# Third-party dependencies, found once for the whole tree.

find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)

# LibTorch: Debian's libtorch-dev (1.13, CPU) or a wheel-shipped LibTorch 2.x
# (pass -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')).
find_package(Torch REQUIRED)
message(STATUS "LibTorch ${Torch_VERSION} from ${Torch_DIR}")

set(LORASCOPE_CUDA_ENABLED OFF)
if(NOT LORASCOPE_WITH_CUDA STREQUAL "OFF")
  if(TARGET torch_cuda OR CUDA_FOUND OR TORCH_CUDA_LIBRARIES)
    set(LORASCOPE_CUDA_ENABLED ON)
  elseif(LORASCOPE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LORASCOPE_WITH_CUDA=ON but the LibTorch found (${Torch_DIR}) has no CUDA support")
  endif()
endif()
message(STATUS "CUDA code paths: ${LORASCOPE_CUDA_ENABLED}")

set(LORASCOPE_HAVE_QT_TEST OFF)
if(LORASCOPE_BUILD_UI OR LORASCOPE_BUILD_TESTS)
  find_package(Qt6 6.2 QUIET COMPONENTS Core Test)
  if(Qt6Test_FOUND)
    set(LORASCOPE_HAVE_QT_TEST ON)
  endif()
endif()
if(LORASCOPE_BUILD_UI)
  find_package(Qt6 6.2 REQUIRED COMPONENTS Core Gui Widgets Charts)
endif()

find_package(Python3 COMPONENTS Interpreter)
