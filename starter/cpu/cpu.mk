# cpu.mk — builds the CPU backend's runtime library, libcudacpu.a.
#
# Included by starter/Makefile (CPU=1), or on its own from any directory:
#     make -f starter/cpu/cpu.mk                 # -> starter/build/cpu/libcudacpu.a
#     make -f starter/cpu/cpu.mk CXX=clang++     # the same with clang
# One library serves both builds of student kernels: with AddressSanitizer
# (the default of cudacpu.py) and without; it needs no CUDA toolkit.
#
# The fibers switch with Boost.Context (src/fiber.h), linked statically where
# its .a exists. It is looked for under BOOST_ROOT (a folder with include/
# and lib/; on macOS Homebrew's /opt/homebrew or /usr/local by default), then
# in the compiler's own paths. Without it, Linux builds
# switch with <ucontext.h> (slower: README.md, "Speed") and say so once;
# macOS needs it. CUDACPU_FIBERS=ucontext forces that switch (for tests),
# CUDACPU_FIBERS=boost refuses to build without Boost.Context.

# Run on its own, the library is the default goal; included, the including
# Makefile's default goal stays what it was (restored at the end).
CUDACPU_STANDALONE := $(filter 1,$(words $(MAKEFILE_LIST)))
CUDACPU_SAVED_GOAL := $(.DEFAULT_GOAL)

# Absolute, so that dependency files stay valid whichever directory make runs in.
CUDACPU_DIR   := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
CUDACPU_BUILD ?= $(abspath $(CUDACPU_DIR)/../build/cpu)
# cudacpu.py keeps what it makes once per build folder there too (the nvcc-rules check's precompiled prelude).
export CUDACPU_BUILD
CUDACPU_LIB   := $(CUDACPU_BUILD)/libcudacpu.a

CUDACPU_SRCS  := $(wildcard $(CUDACPU_DIR)/src/*.cpp)
CUDACPU_OBJS  := $(patsubst $(CUDACPU_DIR)/src/%,$(CUDACPU_BUILD)/obj/%.o,$(CUDACPU_SRCS))

# --- Boost.Context ---------------------------------------------------------------------------
CUDACPU_OS     := $(shell uname -s)
CUDACPU_FIBERS ?= auto
BOOST_ROOT     ?= $(if $(filter Darwin,$(CUDACPU_OS)),$(firstword $(patsubst %/include/boost/context,%,\
                    $(wildcard /opt/homebrew/include/boost/context /usr/local/include/boost/context))))
CUDACPU_INSTALL_BOOST := install Boost.Context (Debian/Ubuntu: sudo apt-get install libboost-context-dev; \
                         macOS: brew install boost) or set BOOST_ROOT=dir
ifneq ($(CUDACPU_FIBERS),ucontext)
# Static first (nothing to find at run time: the sandbox, qemu, a moved build), then shared; Homebrew's
# multi-threaded build is named -mt; a Debian tree unpacked with dpkg -x keeps lib/<triplet>/.
CUDACPU_BOOST_LIB := $(abspath $(firstword \
  $(if $(BOOST_ROOT),$(foreach kind,a so dylib,$(wildcard $(addprefix $(BOOST_ROOT)/lib/,libboost_context.$(kind) \
    libboost_context-mt.$(kind) */libboost_context.$(kind))))) \
  $(filter /%,$(shell $(CXX) -print-file-name=libboost_context.a) $(shell $(CXX) -print-file-name=libboost_context.so))))
CUDACPU_BOOST_INC := $(if $(BOOST_ROOT),$(if $(wildcard $(BOOST_ROOT)/include/boost),-isystem $(BOOST_ROOT)/include))
CUDACPU_HASH := \#
# Whether its header compiles is asked once per build folder (as starter/Makefile asks about the header
# libraries): the answer is kept with the library and header folder it was for.
CUDACPU_BOOST_FOUND := $(CUDACPU_BUILD)/boost.found
ifneq ($(CUDACPU_BOOST_LIB),)
ifneq ($(shell cat $(CUDACPU_BOOST_FOUND) 2>/dev/null),$(strip $(CUDACPU_BOOST_LIB) $(CUDACPU_BOOST_INC)))
ifeq ($(shell echo '$(CUDACPU_HASH)include <boost/context/detail/fcontext.hpp>' | \
               $(CXX) -std=c++17 -x c++ -fsyntax-only $(CUDACPU_BOOST_INC) - 2>/dev/null && echo found),found)
$(shell mkdir -p $(CUDACPU_BUILD) && echo '$(strip $(CUDACPU_BOOST_LIB) $(CUDACPU_BOOST_INC))' > $(CUDACPU_BOOST_FOUND))
else
CUDACPU_BOOST_LIB :=
endif
endif
endif
endif
ifneq ($(CUDACPU_BOOST_LIB),)
CUDACPU_FIBER_FLAGS := -DCUDACPU_FIBERS_BOOST $(CUDACPU_BOOST_INC)
CUDACPU_LINK_TEXT   := $(CUDACPU_BOOST_LIB)
CUDACPU_FIBER_NOTE  :=
else ifneq ($(filter boost,$(CUDACPU_FIBERS))$(filter Darwin,$(CUDACPU_OS)),)
CUDACPU_FIBER_ERROR := cudacpu: Boost.Context was not found ($(CXX)): $(CUDACPU_INSTALL_BOOST)
else
CUDACPU_FIBER_FLAGS :=
CUDACPU_LINK_TEXT   :=
CUDACPU_FIBER_NOTE  := $(if $(filter auto,$(CUDACPU_FIBERS)),cudacpu: Boost.Context was not found: CUDA threads \
                       switch with <ucontext.h> and __syncthreads() is 5-8 times slower; $(CUDACPU_INSTALL_BOOST))
endif
# The switch the objects were built with: a change (Boost installed since, BOOST_ROOT) rebuilds them.
CUDACPU_FIBERS_STAMP := $(CUDACPU_BUILD)/fibers.flags
ifneq ($(shell cat $(CUDACPU_FIBERS_STAMP) 2>/dev/null),$(strip $(CUDACPU_FIBER_FLAGS)))
.PHONY: $(CUDACPU_FIBERS_STAMP)
endif
# What a program linked with the library needs after it (cudacpu.py link reads it).
CUDACPU_LINK_FILE := $(CUDACPU_BUILD)/libcudacpu.link

# -g1: line tables only (3 MB instead of 14); reports and debuggers still name lines.
CUDACPU_FLAGS := -std=c++17 -O2 -g1 -pthread -fno-omit-frame-pointer -Wall -Wextra -Wno-unused-parameter \
                 $(CUDACPU_FIBER_FLAGS) $(CUDACPU_FLAGS_EXTRA) -I$(CUDACPU_DIR)/include -MMD -MP

.PHONY: cudacpu-lib cudacpu-clean
cudacpu-lib: $(CUDACPU_LIB)

$(CUDACPU_LIB): $(CUDACPU_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^
	@echo '$(CUDACPU_LINK_TEXT)' > $(CUDACPU_LINK_FILE)
	$(if $(CUDACPU_FIBER_NOTE),@echo '$(CUDACPU_FIBER_NOTE)' >&2)

$(CUDACPU_BUILD)/obj/%.cpp.o: $(CUDACPU_DIR)/src/%.cpp $(CUDACPU_FIBERS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) $(CUDACPU_FLAGS) -c $< -o $@

$(CUDACPU_FIBERS_STAMP):
	$(if $(CUDACPU_FIBER_ERROR),@echo '$(CUDACPU_FIBER_ERROR)' >&2; exit 1)
	@mkdir -p $(dir $@)
	@echo '$(strip $(CUDACPU_FIBER_FLAGS))' > $@

cudacpu-clean:
	rm -rf $(CUDACPU_BUILD)

-include $(CUDACPU_OBJS:.o=.d)

.DEFAULT_GOAL := $(if $(CUDACPU_STANDALONE),cudacpu-lib,$(CUDACPU_SAVED_GOAL))
