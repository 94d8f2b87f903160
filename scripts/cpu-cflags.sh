#!/usr/bin/env bash
# The C/C++ flags that llama.cpp's native builds (llama-cpp-python's and llama-server's) need
# on this CPU, printed on one line (nothing when none are needed).
#
# -march=native turns on ggml's AMX kernels where the CPU has AMX-INT8 (Intel Sapphire Rapids
# and later), and in this llama.cpp they crash at the first matrix product (seen on an Intel
# Xeon with amx_int8: both servers died with SIGSEGV in ggml_backend_amx_mul_mat). Without
# __AMX_INT8__ ggml builds no AMX code; an explicit -mno- flag wins over -march's.
if "${CC:-cc}" -march=native -Q --help=target 2>/dev/null |
    grep -q -- '-mamx-int8[[:space:]]*\[enabled\]'; then
    echo "-mno-amx-int8"
fi
