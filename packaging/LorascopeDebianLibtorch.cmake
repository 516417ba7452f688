# Sets LORASCOPE_LIBTORCH_FROM_DEBIAN: whether the LibTorch this build links is a Debian package.
# Only then can dpkg-shlibdeps name it in the .deb's Depends; a wheel-shipped LibTorch (for example
# a CUDA build) is no package, and a .deb built against it would not run on a user's machine.
set(LORASCOPE_LIBTORCH_FROM_DEBIAN OFF)
find_program(LORASCOPE_DPKG_QUERY dpkg-query)
if(LORASCOPE_DPKG_QUERY AND TORCH_LIBRARY)
  get_filename_component(lorascope_torch_real ${TORCH_LIBRARY} REALPATH)
  execute_process(COMMAND ${LORASCOPE_DPKG_QUERY} -S ${lorascope_torch_real}
    RESULT_VARIABLE lorascope_torch_unowned OUTPUT_QUIET ERROR_QUIET)
  if(lorascope_torch_unowned EQUAL 0)
    set(LORASCOPE_LIBTORCH_FROM_DEBIAN ON)
  endif()
endif()
