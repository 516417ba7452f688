# lorascope_require_program(VAR PACKAGE NAMES name... [FOR "what needs it"])
#
# Finds a program that a test, a build step or a script calls, and stops the configure when it is
# missing, naming the Debian package that provides it. A test must never be registered with a
# VAR-NOTFOUND string for a program (it then fails at test time, or worse, is silently skipped):
# a fresh Debian 12 machine lacked desktop-file-validate and the .deb test ran the literal
# LORASCOPE_DESKTOP_FILE_VALIDATE-NOTFOUND. scripts/install-deps installs every PACKAGE named here.
function(lorascope_require_program var package)
  cmake_parse_arguments(R "" "FOR" "NAMES" ${ARGN})
  if(NOT R_NAMES)
    message(FATAL_ERROR "lorascope_require_program(${var}): NAMES is required")
  endif()
  find_program(${var} NAMES ${R_NAMES})
  if(NOT ${var})
    list(GET R_NAMES 0 first)
    set(why "")
    if(R_FOR)
      set(why " (needed by ${R_FOR})")
    endif()
    message(FATAL_ERROR "${first} not found${why}: apt-get install ${package} "
                        "(scripts/install-deps installs it)")
  endif()
endfunction()
