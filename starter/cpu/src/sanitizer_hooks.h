// The AddressSanitizer entry points the runtime uses, declared weak: in a
// program linked with -fsanitize=address they resolve to ASan's, otherwise
// they stay null and the runtime skips them. One runtime library thus serves
// both the checked (ASan) and the fast build of student kernels.
#pragma once

#include <cstddef>

extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, std::size_t size) __attribute__((weak));
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, std::size_t* size_old)
    __attribute__((weak));
void __asan_poison_memory_region(const volatile void* addr, std::size_t size) __attribute__((weak));
void __asan_unpoison_memory_region(const volatile void* addr, std::size_t size) __attribute__((weak));
void __asan_set_error_report_callback(void (*callback)(const char*)) __attribute__((weak));
void __sanitizer_set_report_fd(void* fd) __attribute__((weak));
int __sanitizer_symbolize_pc(void* pc, const char* fmt, char* out_buf, std::size_t out_buf_size) __attribute__((weak));
void __asan_handle_no_return() __attribute__((weak));
void* __asan_get_report_pc() __attribute__((weak));
void* __asan_get_report_address() __attribute__((weak));
int __asan_get_report_access_type() __attribute__((weak));
std::size_t __asan_get_report_access_size() __attribute__((weak));
const char* __asan_get_report_description() __attribute__((weak));
}

namespace cudacpu {

inline bool asan_active() { return __asan_poison_memory_region != nullptr; }

inline void asan_poison(const void* p, std::size_t n) {
    if (__asan_poison_memory_region && n) __asan_poison_memory_region(p, n);
}
inline void asan_unpoison(const void* p, std::size_t n) {
    if (__asan_unpoison_memory_region && n) __asan_unpoison_memory_region(p, n);
}

}  // namespace cudacpu
