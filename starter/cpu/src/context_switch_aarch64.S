// Switching between fibers on AArch64 (AAPCS64).
//
//   void cudacpu_switch_context(cudacpu_context* from, const cudacpu_context* to);
//
// Saves the callee-saved registers (x19-x29, the link register x30 and the
// low halves d8-d15 of v8-v15) on the running fiber's stack, stores its stack
// pointer in from->sp, loads to->sp and restores that fiber's registers.
#if defined(__aarch64__)
        .text
        .globl  cudacpu_switch_context
        .hidden cudacpu_switch_context
        .type   cudacpu_switch_context, %function
cudacpu_switch_context:
        sub     sp, sp, #160
        stp     x19, x20, [sp, #0]
        stp     x21, x22, [sp, #16]
        stp     x23, x24, [sp, #32]
        stp     x25, x26, [sp, #48]
        stp     x27, x28, [sp, #64]
        stp     x29, x30, [sp, #80]
        stp     d8,  d9,  [sp, #96]
        stp     d10, d11, [sp, #112]
        stp     d12, d13, [sp, #128]
        stp     d14, d15, [sp, #144]
        mov     x9, sp
        str     x9, [x0]
        ldr     x9, [x1]
        mov     sp, x9
        ldp     x19, x20, [sp, #0]
        ldp     x21, x22, [sp, #16]
        ldp     x23, x24, [sp, #32]
        ldp     x25, x26, [sp, #48]
        ldp     x27, x28, [sp, #64]
        ldp     x29, x30, [sp, #80]
        ldp     d8,  d9,  [sp, #96]
        ldp     d10, d11, [sp, #112]
        ldp     d12, d13, [sp, #128]
        ldp     d14, d15, [sp, #144]
        add     sp, sp, #160
        ret
        .size   cudacpu_switch_context, .-cudacpu_switch_context

// A new fiber's first switch returns here (see init_context in fiber.cpp):
// x19 holds the entry function and x20 its argument. The entry never returns.
        .globl  cudacpu_fiber_trampoline
        .hidden cudacpu_fiber_trampoline
        .type   cudacpu_fiber_trampoline, %function
cudacpu_fiber_trampoline:
        mov     x0, x20
        blr     x19
        brk     #0
        .size   cudacpu_fiber_trampoline, .-cudacpu_fiber_trampoline
#endif
        .section .note.GNU-stack,"",%progbits
