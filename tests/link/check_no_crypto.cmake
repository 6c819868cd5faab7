# cmake -DBINARY=<file> -DREADELF=<readelf> -P check_no_crypto.cmake
# Fails if BINARY's dynamic section names libcrypto (or libssl): the program was linked with
# --no-as-needed, so every library on its link line shows up here.
execute_process(COMMAND ${READELF} -d ${BINARY} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${BINARY} failed (${rc})")
endif()
if(NOT dynamic MATCHES "NEEDED")
  message(FATAL_ERROR "${BINARY}: no NEEDED entries; not a dynamically linked program?")
endif()
if(dynamic MATCHES "libcrypto|libssl")
  message(FATAL_ERROR "${BINARY} needs OpenSSL, but it links only df11_format:\n${dynamic}")
endif()
execute_process(COMMAND ${BINARY} RESULT_VARIABLE run_rc)
if(NOT run_rc EQUAL 0)
  message(FATAL_ERROR "${BINARY} exited with ${run_rc}")
endif()
