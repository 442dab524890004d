# SPDX-License-Identifier: MIT
# run_fuzz.cmake: one bounded libFuzzer run for CTest.
#   cmake -DBIN=lithe-fuzz -DSEEDS=corpus-dir -DWORK=dir -DTIME=s -P run_fuzz.cmake
# Copies the seed corpus to WORK/corpus (grown there, never in the source
# tree), runs BIN for TIME seconds, and fails on any crash, leak, timeout
# or pattern mismatch (libFuzzer exits non-zero and writes WORK/crash-*).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
file(GLOB seeds ${SEEDS}/*)
file(COPY ${seeds} DESTINATION ${WORK}/corpus)
execute_process(
  COMMAND ${BIN} -max_total_time=${TIME} -rss_limit_mb=2048 -timeout=25
          -max_len=4096 -print_final_stats=1 -artifact_prefix=${WORK}/ ${WORK}/corpus
  WORKING_DIRECTORY ${WORK}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found ${WORK}/crash-* ${WORK}/leak-* ${WORK}/timeout-* ${WORK}/oom-*)
  message(FATAL_ERROR "${BIN} exited with ${rc}; inputs: ${found}\n"
          "reproduce: ${BIN} <input>")
endif()
