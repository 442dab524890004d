# bench_quick_glibc: lithe-bench --quick --runs 1 --out OUT glibc, with
# --check (every benchmark of the default list produced its figures: no
# FAIL, no missing program, time/peak/end present for the MallocBench
# ones), then make sure the report and its pictures are there.
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${RUNNER}" --quick --runs 1 --check --out "${OUT}" glibc
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lithe-bench --quick --check failed (exit ${rc})")
endif()
foreach(f report.md results.tsv chart-time.svg chart-peak.svg chart-end.svg
          chart-scaling-fixed_block_scaling.svg)
  if(NOT EXISTS "${OUT}/${f}")
    message(FATAL_ERROR "${OUT}/${f} was not written")
  endif()
endforeach()
file(READ "${OUT}/report.md" md)
foreach(pic chart-time.svg chart-peak.svg chart-end.svg chart-scaling-fixed_block_scaling.svg)
  string(FIND "${md}" "(${pic})" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "report.md does not embed ${pic}")
  endif()
endforeach()
message(STATUS "bench_quick_glibc: report in ${OUT}")
