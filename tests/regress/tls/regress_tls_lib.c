/* SPDX-License-Identifier: MIT */
/* regress_tls_dlopen's second library: TLS_LIB_BYTES (CMakeLists.txt here)
 * of initial-exec TLS, which a library loaded with dlopen takes from
 * glibc's static reserve. */
__thread char tls_lib_buf[TLS_LIB_BYTES] __attribute__((tls_model("initial-exec")));
char *tls_lib_buffer(void) { return tls_lib_buf; }
