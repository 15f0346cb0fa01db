# cpu.mk — builds the CPU backend's runtime library, libcudacpu.a.
#
# Included by starter/Makefile (CPU=1), or on its own from any directory:
#     make -f starter/cpu/cpu.mk                 # -> starter/build/cpu/libcudacpu.a
#     make -f starter/cpu/cpu.mk CXX=clang++     # the same with clang
# One library serves both builds of student kernels: with AddressSanitizer
# (the default of cudacpu.py) and without; it needs no CUDA toolkit.

# Run on its own, the library is the default goal; included, the including
# Makefile's default goal stays what it was (restored at the end).
CUDACPU_STANDALONE := $(filter 1,$(words $(MAKEFILE_LIST)))
CUDACPU_SAVED_GOAL := $(.DEFAULT_GOAL)

# Absolute, so that dependency files stay valid whichever directory make runs in.
CUDACPU_DIR   := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
CUDACPU_BUILD ?= $(abspath $(CUDACPU_DIR)/../build/cpu)
CUDACPU_LIB   := $(CUDACPU_BUILD)/libcudacpu.a

CUDACPU_SRCS  := $(wildcard $(CUDACPU_DIR)/src/*.cpp) $(wildcard $(CUDACPU_DIR)/src/*.S)
CUDACPU_OBJS  := $(patsubst $(CUDACPU_DIR)/src/%,$(CUDACPU_BUILD)/obj/%.o,$(CUDACPU_SRCS))
# -g1: line tables only (3 MB instead of 14); reports and debuggers still name lines.
# CUDACPU_FLAGS_EXTRA: e.g. -DCUDACPU_USE_UCONTEXT, to test the portable fiber switch.
CUDACPU_FLAGS := -std=c++17 -O2 -g1 -pthread -fno-omit-frame-pointer -Wall -Wextra -Wno-unused-parameter $(CUDACPU_FLAGS_EXTRA) \
                 -I$(CUDACPU_DIR)/include -MMD -MP

.PHONY: cudacpu-lib cudacpu-clean
cudacpu-lib: $(CUDACPU_LIB)

$(CUDACPU_LIB): $(CUDACPU_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(CUDACPU_BUILD)/obj/%.cpp.o: $(CUDACPU_DIR)/src/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CUDACPU_FLAGS) -c $< -o $@

$(CUDACPU_BUILD)/obj/%.S.o: $(CUDACPU_DIR)/src/%.S
	@mkdir -p $(dir $@)
	$(CXX) -c $< -o $@

cudacpu-clean:
	rm -rf $(CUDACPU_BUILD)

-include $(CUDACPU_OBJS:.o=.d)

.DEFAULT_GOAL := $(if $(CUDACPU_STANDALONE),cudacpu-lib,$(CUDACPU_SAVED_GOAL))
