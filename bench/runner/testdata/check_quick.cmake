# SPDX-License-Identifier: MIT
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
foreach(pic chart-time.svg chart-peak.svg chart-end.svg chart-scaling-fixed_block_scaling.svg chart-rss-medium.svg)
  string(FIND "${md}" "(${pic})" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "report.md does not embed ${pic}")
  endif()
endforeach()
# the runner checks where malloc resolved: glibc's libc here
if(NOT md MATCHES "\\| glibc \\| \\(none: glibc malloc\\) \\| [^|]*\\| [^|]*libc[.]so[^|]*\\| malloc_trim\\(0\\) \\|")
  message(FATAL_ERROR "report.md: the glibc row does not show malloc in libc.so and malloc_trim(0)")
endif()
message(STATUS "bench_quick_glibc: report in ${OUT}")

# a library that does not replace malloc, named as an allocator: its cells FAIL
execute_process(COMMAND "${RUNNER}" --quick --runs 1 --only churn,replay_sqlite --out "${OUT}/notalloc"
                        glibc notalloc=${NOTALLOC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ "${OUT}/notalloc/report.md" md)
foreach(e "| churn | notalloc | **FAIL** | malloc resolved to " "| replay_sqlite | notalloc | **FAIL** | malloc resolved to ")
  string(FIND "${md}" "${e}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "notalloc=${NOTALLOC}: report.md lacks: ${e}\n---\n${md}")
  endif()
endforeach()
string(REGEX MATCH "    churn +[0-9.,]+ms +FAIL" m "${md}")
if(NOT m)
  message(FATAL_ERROR "the churn row does not show FAIL for notalloc\n${md}")
endif()
message(STATUS "bench_quick_glibc: notalloc=${NOTALLOC} FAILs")

# --aa: the baseline twice; the report has the A/A section with its noise floor
execute_process(COMMAND "${RUNNER}" --quick --runs 5 --aa --only churn,list_allocate --out "${OUT}/aa" glibc
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lithe-bench --aa failed (exit ${rc}): ${err}")
endif()
file(READ "${OUT}/aa/report.md" md)
foreach(e "## A/A: the noise floor" "glibc-again against glibc" "| time | 2 | " "A/A twin of glibc")
  string(FIND "${md}" "${e}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "--aa: report.md lacks: ${e}\n---\n${md}")
  endif()
endforeach()
message(STATUS "bench_quick_glibc: --aa ok")
