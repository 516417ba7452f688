# Sets LORASCOPE_LIBTORCH_FROM_DEBIAN: whether the LibTorch this build links is a Debian package
# (and LORASCOPE_LIBTORCH_FROM_DEBIAN_WHY, the reason when it is not).
# Only then can dpkg-shlibdeps name it in the .deb's Depends; a wheel-shipped LibTorch (for example
# a CUDA build) is no package, and a .deb built against it would not run on a user's machine.
# No dpkg-query means no Debian system at all (a configuration, not a missing package).
set(LORASCOPE_LIBTORCH_FROM_DEBIAN OFF)
find_program(LORASCOPE_DPKG_QUERY dpkg-query)
if(NOT LORASCOPE_DPKG_QUERY)
  set(LORASCOPE_LIBTORCH_FROM_DEBIAN_WHY "dpkg-query is absent (not a Debian system)")
elseif(NOT TORCH_LIBRARY)
  set(LORASCOPE_LIBTORCH_FROM_DEBIAN_WHY "no LibTorch library was found")
else()
  get_filename_component(lorascope_torch_real ${TORCH_LIBRARY} REALPATH)
  execute_process(COMMAND ${LORASCOPE_DPKG_QUERY} -S ${lorascope_torch_real}
    RESULT_VARIABLE lorascope_torch_unowned OUTPUT_QUIET ERROR_QUIET)
  if(lorascope_torch_unowned EQUAL 0)
    set(LORASCOPE_LIBTORCH_FROM_DEBIAN ON)
  else()
    set(LORASCOPE_LIBTORCH_FROM_DEBIAN_WHY "LibTorch (${lorascope_torch_real}) belongs to no Debian package")
  endif()
endif()
