// Switching between fibers on x86-64 (System V ABI).
//
//   void cudacpu_switch_context(cudacpu_context* from, const cudacpu_context* to);
//
// Saves the callee-saved registers of the running fiber on its own stack,
// stores its stack pointer in from->sp, loads to->sp and restores that
// fiber's registers. Everything else is caller-saved, so the compiler has
// already spilled what it needs across this call. The SSE and x87 control
// words are not switched: kernels do not change rounding modes.
#if defined(__x86_64__)
        .text
        .globl  cudacpu_switch_context
        .hidden cudacpu_switch_context
        .type   cudacpu_switch_context, @function
cudacpu_switch_context:
        .cfi_startproc
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        movq    %rsp, (%rdi)
        movq    (%rsi), %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
        .cfi_endproc
        .size   cudacpu_switch_context, .-cudacpu_switch_context

// A new fiber's first switch "returns" here (see init_context in fiber.cpp):
// r12 holds the entry function and r13 its argument. The entry never returns.
        .globl  cudacpu_fiber_trampoline
        .hidden cudacpu_fiber_trampoline
        .type   cudacpu_fiber_trampoline, @function
cudacpu_fiber_trampoline:
        .cfi_startproc
        .cfi_undefined rip
        movq    %r13, %rdi
        callq   *%r12
        ud2
        .cfi_endproc
        .size   cudacpu_fiber_trampoline, .-cudacpu_fiber_trampoline
#endif
        .section .note.GNU-stack,"",@progbits
