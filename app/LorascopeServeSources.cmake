# The two libraries of `lorascope-cli serve`, for the builds that compile them: this tree's
# (app/CMakeLists.txt) and the libFuzzer targets' (tests/fuzz, with clang and sanitizers).
#   lorascope_serve       app/serve_core: LoRAX's and OpenAI's protocol, the request sessions, the
#                         metrics; no HTTP, no socket, no torch (the engine's public API only)
#   lorascope_serve_http  app/serve_http: the Boost.Beast server and its routes
file(GLOB LORASCOPE_SERVE_CORE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/serve_core/*.cpp)
file(GLOB LORASCOPE_SERVE_HTTP_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/serve_http/*.cpp)
set(LORASCOPE_SERVE_CORE_DIR ${CMAKE_CURRENT_LIST_DIR}/serve_core)
set(LORASCOPE_SERVE_HTTP_DIR ${CMAKE_CURRENT_LIST_DIR}/serve_http)
