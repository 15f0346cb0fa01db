// Empty: clang's CUDA intrinsics header includes this toolkit file for sm_70 and newer; the front-end check
// (driver/frontend.py) has no toolkit and needs none of it.
