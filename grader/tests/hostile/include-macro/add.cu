// add: the reference solution's file, taken by a path that a macro spells out (no line of the source names
// the solution's file after the directive, and a reader of directives cannot expand macros). The solution's
// file defines add, so this one defines nothing itself.
//
// (hostile corpus: what the file includes is decided by what the compiler read (starter/tools/includes.py),
// before anything is compiled: refused by the build gate's includes rule. The build's sandbox does not hold
// the solution either.)
#define STRINGIFY(x) #x
#define QUOTE(x) STRINGIFY(x)
#define REFERENCE(task) QUOTE(../../../../solution/kernels/task.cu)
#include REFERENCE(add)
