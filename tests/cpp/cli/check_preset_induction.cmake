# `headscope train --preset induction --steps 700`: some head's induction score on the probe is at
# least 0.4 (roles.json's threshold). Seeded, but not bit-reproducible across CPUs (FMA, vector width),
# so the margin matters: natively it reaches about 0.9 by step 600, and 0.4 around step 450.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CLI} train --preset induction --steps 700 --log-every 100 --out ${WORK}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "train --preset induction failed (${rc}): ${err}")
endif()
string(REGEX MATCH "{\"done\"[^\n]*" done "${out}")
string(JSON n LENGTH "${done}" induction)
math(EXPR last "${n} - 1")
set(best 0)
foreach(i RANGE ${last})
  string(JSON v GET "${done}" induction ${i})
  if(v GREATER best)
    set(best ${v})
  endif()
endforeach()
if(best LESS 0.4)
  message(FATAL_ERROR "no induction head after 700 steps of the default preset: best score ${best}\n${out}")
endif()
message(STATUS "induction preset: best induction score ${best} after 700 steps")
