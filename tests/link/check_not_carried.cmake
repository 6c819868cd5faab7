# cmake -DNM=<nm> -DFORBIDDEN=<libX.a> -DSHARED_LIB=<libdf11.so> -DSTATIC_LIB=<libdf11.a>
#       -P check_not_carried.cmake
# Fails if either library defines a function or object that the FORBIDDEN archive defines:
# e.g. the decode-only C API (libdf11.so and libdf11.a) must carry no encoder code. Compared
# are FORBIDDEN's strong definitions (nm types T, D, B, R: its own non-inline code and data,
# not inline or template code that any user of a shared header instantiates), against every
# definition in the libraries, global or local (the shared library hides all but df11_*).
cmake_minimum_required(VERSION 3.24)  # if(IN_LIST)

function(defined_symbols file types out)
  execute_process(COMMAND ${NM} --defined-only ${file} OUTPUT_VARIABLE text
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm --defined-only ${file} failed (${rc}): ${err}")
  endif()
  string(REGEX MATCHALL "[0-9a-f]+ [${types}] [^\n]+" lines "${text}")
  set(names "")
  foreach(line ${lines})
    string(REGEX REPLACE "^[0-9a-f]+ . " "" name "${line}")
    list(APPEND names "${name}")
  endforeach()
  list(REMOVE_DUPLICATES names)
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

defined_symbols(${FORBIDDEN} "TDBR" forbidden)
list(LENGTH forbidden n)
if(n EQUAL 0)
  message(FATAL_ERROR "${FORBIDDEN}: no strong definitions found; not a library?")
endif()
foreach(lib ${SHARED_LIB} ${STATIC_LIB})
  defined_symbols(${lib} "TtDdBbRr" defined)
  set(common "")
  foreach(name ${forbidden})
    if(name IN_LIST defined)
      list(APPEND common "${name}")
    endif()
  endforeach()
  if(common)
    list(LENGTH common k)
    list(SUBLIST common 0 10 shown)
    string(REPLACE ";" "\n  " shown "${shown}")
    message(FATAL_ERROR "${lib} defines ${k} symbols of ${FORBIDDEN}, e.g.:\n  ${shown}")
  endif()
endforeach()
