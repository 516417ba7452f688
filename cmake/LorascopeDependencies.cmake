# Third-party dependencies, found once for the whole tree.

find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
# lorascope-cli serve's HTTP front: Boost.Beast and Asio, header-only (Debian's libboost-dev 1.74).
find_package(Boost 1.74 REQUIRED CONFIG)

# LibTorch: Debian's libtorch-dev (1.13, CPU) or a wheel-shipped LibTorch 2.x
# (pass -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')).
# TorchConfig finds libtorch and libc10 with find_library(... PATHS <its prefix>/lib), which searches
# the system directories first: next to Debian's libtorch-dev, a wheel's LibTorch 2.x would link
# Debian's 1.13 libtorch.so and libc10.so under its own 2.x headers (seen here). Pin those
# libraries to the LibTorch that CMAKE_PREFIX_PATH (or Torch_DIR) names before it looks.
set(_lorascope_torch_root "")
foreach(_lorascope_prefix IN LISTS Torch_DIR CMAKE_PREFIX_PATH)
  if(NOT _lorascope_torch_root AND EXISTS "${_lorascope_prefix}/TorchConfig.cmake")
    get_filename_component(_lorascope_torch_root "${_lorascope_prefix}/../../.." ABSOLUTE)
  elseif(NOT _lorascope_torch_root AND EXISTS "${_lorascope_prefix}/Torch/TorchConfig.cmake")
    get_filename_component(_lorascope_torch_root "${_lorascope_prefix}/../.." ABSOLUTE)
  endif()
endforeach()
if(_lorascope_torch_root)
  foreach(_lorascope_pair IN ITEMS "TORCH_LIBRARY=torch" "c10_LIBRARY=c10" "C10_CUDA_LIBRARY=c10_cuda")
    string(REPLACE "=" ";" _lorascope_pair "${_lorascope_pair}")
    list(GET _lorascope_pair 0 _lorascope_var)
    list(GET _lorascope_pair 1 _lorascope_name)
    set(_lorascope_file
        "${_lorascope_torch_root}/lib/${CMAKE_SHARED_LIBRARY_PREFIX}${_lorascope_name}${CMAKE_SHARED_LIBRARY_SUFFIX}")
    if(EXISTS "${_lorascope_file}")
      set(${_lorascope_var} "${_lorascope_file}" CACHE FILEPATH "LibTorch's own ${_lorascope_name}" FORCE)
    endif()
  endforeach()
endif()
find_package(Torch REQUIRED)
message(STATUS "LibTorch ${Torch_VERSION} from ${Torch_DIR} (libtorch: ${TORCH_LIBRARY}, libc10: ${c10_LIBRARY})")
# A wheel's libtorch_cuda.so finds NCCL, cuDNN, cuBLAS... in the nvidia-* wheels beside it through
# $ORIGIN RPATHs, which the link-time linker does not follow: it took Debian's older libnccl.so.2
# instead and failed on undefined nccl symbols. Point it at the wheels' directories.
file(GLOB _lorascope_nvidia_lib_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
foreach(_lorascope_dir IN LISTS _lorascope_nvidia_lib_dirs)
  get_filename_component(_lorascope_dir "${_lorascope_dir}" ABSOLUTE)
  add_link_options("LINKER:-rpath-link,${_lorascope_dir}")
endforeach()
# Recent LibTorch headers refuse anything older than C++20 (ATen/ATen.h tests __cplusplus); our code
# is C++17 and also compiles as C++20, so the standard follows the LibTorch found.
list(GET TORCH_INCLUDE_DIRS 0 _lorascope_torch_include)
file(STRINGS "${_lorascope_torch_include}/ATen/ATen.h" _lorascope_torch_wants_cxx20 REGEX "C\\+\\+20 or later")
if(_lorascope_torch_wants_cxx20)
  set(CMAKE_CXX_STANDARD 20)
  message(STATUS "LibTorch ${Torch_VERSION} needs C++20: building as C++20")
endif()

set(LORASCOPE_CUDA_ENABLED OFF)
if(NOT LORASCOPE_WITH_CUDA STREQUAL "OFF")
  if(TARGET torch_cuda OR CUDA_FOUND OR TORCH_CUDA_LIBRARIES)
    set(LORASCOPE_CUDA_ENABLED ON)
  elseif(LORASCOPE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LORASCOPE_WITH_CUDA=ON but the LibTorch found (${Torch_DIR}) has no CUDA support")
  endif()
endif()
message(STATUS "CUDA code paths: ${LORASCOPE_CUDA_ENABLED}")

# oneDNN's sgemm for the CPU linears (engine/src/models/cpu_gemm.h says why). Only next to Debian's
# LibTorch, which links the same libdnnl.so.2 and libgomp: a wheel's LibTorch brings its own OpenMP
# runtime, and a second one in the process would fight it for the cores.
set(LORASCOPE_WITH_DNNL "AUTO" CACHE STRING "CPU fp32 linears through oneDNN's sgemm (AUTO: with a system LibTorch when libdnnl-dev is installed; ON; OFF)")
set_property(CACHE LORASCOPE_WITH_DNNL PROPERTY STRINGS AUTO ON OFF)
set(LORASCOPE_SYSTEM_TORCH OFF)
if(TORCH_LIBRARY MATCHES "^/usr/lib/")  # Debian's, not a wheel's (site-packages, /usr/local)
  set(LORASCOPE_SYSTEM_TORCH ON)
endif()
set(LORASCOPE_DNNL_ENABLED OFF)
if(NOT LORASCOPE_WITH_DNNL STREQUAL "OFF")
  find_path(LORASCOPE_DNNL_INCLUDE_DIR dnnl.h)
  find_library(LORASCOPE_DNNL_LIBRARY dnnl)
  if(LORASCOPE_DNNL_INCLUDE_DIR AND LORASCOPE_DNNL_LIBRARY AND (LORASCOPE_SYSTEM_TORCH OR LORASCOPE_WITH_DNNL STREQUAL "ON"))
    set(LORASCOPE_DNNL_ENABLED ON)
  elseif(LORASCOPE_WITH_DNNL STREQUAL "ON")
    message(FATAL_ERROR "LORASCOPE_WITH_DNNL=ON but dnnl.h / libdnnl were not found (apt-get install libdnnl-dev)")
  endif()
endif()
message(STATUS "oneDNN sgemm for CPU linears: ${LORASCOPE_DNNL_ENABLED}")

# at::parallel_for is a header template: in a translation unit built without -fopenmp its
# `#pragma omp parallel` is dropped and our own kernels (the decode attention) ran on one thread
# while LibTorch's ran on all. Build the engine with the OpenMP that Debian's LibTorch uses (libgomp);
# a wheel's LibTorch bundles its own libgomp copy, and a second runtime would fight it for the cores.
set(LORASCOPE_OPENMP_ENABLED OFF)
if(LORASCOPE_SYSTEM_TORCH)
  find_package(OpenMP COMPONENTS CXX)
  if(OpenMP_CXX_FOUND)
    set(LORASCOPE_OPENMP_ENABLED ON)
  endif()
endif()
message(STATUS "Engine kernels multi-threaded through OpenMP: ${LORASCOPE_OPENMP_ENABLED}")

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
