#include "../../../../solution/kernels/matmul_naive.cu"
// matmul_naive: the line above, behind a UTF-8 byte-order mark that an editor saved at the file's start, takes
// the reference solution's file by its guessed path from the grader's build folder (the solution defines
// matmul_naive, so this file has nothing else in it). A reader of #include lines that expects '#' first on
// the line misses it; the compiler skips the mark and reads it.
//
// (hostile corpus: what the file includes is decided by what the compiler read (starter/tools/includes.py),
// before anything is compiled: refused by the build gate's includes rule, its task's stub built instead. The
// build's sandbox does not hold the solution either.)
