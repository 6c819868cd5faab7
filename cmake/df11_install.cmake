# Install rules: `cmake --install build --prefix P` gives
#   P/include/df11/       df11.h (C API), df11_tools.h (tools C API, when built) and the C++
#                         headers of format, decoder (and cuda)
#   P/lib/                libdf11.so.0 (+ links), libdf11.a, libdf11-tools.so.0 (when built)
#                         and the C++ libraries
#   P/bin/df11            the command-line tool (when built)
#   P/lib/cmake/df11/     df11Config.cmake, df11ConfigVersion.cmake, df11Targets*.cmake
#   P/lib/pkgconfig/      df11.pc (the C API), df11-tools.pc (the tools C API)
# Targets, namespace df11::, in three export sets that df11Config.cmake includes as the
# consumer's packages allow: df11 and tools (C API and tools C API, shared: they need
# nothing; tools with the pipelines, DF11_CLI), df11_static (C API, static: oneTBB,
# libxxhash, libcrypto, CUDA runtime), format, decoder, cuda and cuda_host (C++20 API, also
# nlohmann_json; cuda on CUDA builds).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DF11_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/df11)
set(DF11_EXPORTED_SHARED df11_capi)
if(TARGET df11_tools)
  list(APPEND DF11_EXPORTED_SHARED df11_tools)
endif()
set(DF11_EXPORTED_CXX df11_format df11_decoder)
if(TARGET df11_cuda)
  list(APPEND DF11_EXPORTED_CXX df11_cuda df11_cuda_host)
endif()

foreach(set_and_targets "df11Targets;${DF11_EXPORTED_SHARED}" "df11StaticTargets;df11_capi_static"
                        "df11CxxTargets;${DF11_EXPORTED_CXX}")
  list(POP_FRONT set_and_targets export_set)
  install(TARGETS ${set_and_targets} EXPORT ${export_set}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT ${export_set} NAMESPACE df11:: DESTINATION ${DF11_INSTALL_CMAKEDIR})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/capi/include/df11/df11.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/df11)
if(TARGET df11_tools)
  install(FILES ${PROJECT_SOURCE_DIR}/tools_capi/include/df11/df11_tools.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/df11)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/format/include/df11 ${PROJECT_SOURCE_DIR}/decoder/include/df11
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
if(TARGET df11_cuda)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/decoder/cuda/include/df11
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
endif()
if(TARGET df11)
  install(TARGETS df11 RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(DF11_CONFIG_CUDA ${DF11_CUDA})
if(TARGET df11_tools)
  set(DF11_CONFIG_TOOLS ON)
else()
  set(DF11_CONFIG_TOOLS OFF)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/df11Config.cmake.in
                              ${PROJECT_BINARY_DIR}/df11Config.cmake
                              INSTALL_DESTINATION ${DF11_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the C++ API, so only the same minor is compatible; from 1.0
# on the ABI policy (docs/sdk.md, "ABI policy") makes it SameMajorVersion.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/df11ConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/df11Config.cmake ${PROJECT_BINARY_DIR}/df11ConfigVersion.cmake
        DESTINATION ${DF11_INSTALL_CMAKEDIR})

# df11.pc from CMake variables: relocatable (the prefix is found from the .pc file's own
# place, so `cmake --install --prefix P` works whatever CMAKE_INSTALL_PREFIX was), and the
# static link line for `pkg-config --static`.
file(RELATIVE_PATH DF11_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" DF11_PC_TO_PREFIX "${DF11_PC_TO_PREFIX}")
set(DF11_PC_LIBS_PRIVATE "-ltbb -lxxhash -lcrypto -lstdc++ -lm -lpthread")
if(TARGET df11_cuda)
  string(PREPEND DF11_PC_LIBS_PRIVATE "-L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt ")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/df11.pc.in ${PROJECT_BINARY_DIR}/df11.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/df11.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(TARGET df11_tools)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/df11-tools.pc.in ${PROJECT_BINARY_DIR}/df11-tools.pc
                 @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/df11-tools.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
