// A shared library named like a CUDA library whose CUDA functions forward to the MUSA library's.
//
// Programs that find the CUDA runtime by scanning /proc/self/maps for "libcudart" (vLLM's and
// SGLang's find_loaded_library) need such a file to be mapped; C code that dlopens it and calls
// cudaMalloc needs those calls to reach musaMalloc. Each exported name is a three-instruction
// trampoline that jumps through a table slot, so arguments and results pass untouched whatever the
// signature (the MUSA function has the CUDA one's ABI). Slots start at `unbound` (an error code
// and a message) and are filled by torchada_shim_bind() with the MUSA library's functions.
//
// The including file defines SHIM_LIBRARY (the CUDA name, for messages), SHIM_COUNT and
// SHIM_FUNCTIONS(X), which calls X(index, cuda_name, musa_name) once per function; it is
// generated from torchada/tables/libraries.json (torchada/_libraries/shims.py).

#include <dlfcn.h>
#include <stdio.h>

#define SHIM_STR_(x) #x
#define SHIM_STR(x) SHIM_STR_(x)

// cudaErrorNotSupported: what a CUDA runtime answers for a call it cannot serve.
#define SHIM_NOT_SUPPORTED 801

static int unbound(void) {
  fprintf(stderr, "torchada: a " SHIM_LIBRARY " function was called before torchada bound it "
                  "to the MUSA library, or it has no MUSA counterpart\n");
  return SHIM_NOT_SUPPORTED;
}

#define SHIM_UNBOUND(i, cuda, musa) (void*)unbound,
__attribute__((used, visibility("hidden"))) void* torchada_shim_slots[SHIM_COUNT] = {SHIM_FUNCTIONS(SHIM_UNBOUND)};

#define SHIM_MUSA_NAME(i, cuda, musa) #musa,
static const char* const musa_names[SHIM_COUNT] = {SHIM_FUNCTIONS(SHIM_MUSA_NAME)};

#if defined(__x86_64__)
#define SHIM_TRAMPOLINE(i, cuda, musa)                                              \
  __asm__(".pushsection .text\n.globl " #cuda "\n.type " #cuda ", @function\n" #cuda \
          ":\n  jmp *torchada_shim_slots+8*" #i "(%rip)\n.size " #cuda ", .-" #cuda    \
          "\n.popsection\n");
#elif defined(__aarch64__)
#define SHIM_TRAMPOLINE(i, cuda, musa)                                                     \
  __asm__(".pushsection .text\n.globl " #cuda "\n.type " #cuda ", %function\n" #cuda        \
          ":\n  adrp x16, torchada_shim_slots+8*" #i "\n  ldr x16, [x16, :lo12:torchada_shim_slots+8*" \
          #i "]\n  br x16\n.size " #cuda ", .-" #cuda "\n.popsection\n");
#else
#error "CUDA-named forwarding libraries are built for x86-64 and AArch64 only"
#endif

SHIM_FUNCTIONS(SHIM_TRAMPOLINE)

// Fills the slots from the MUSA library at `path`; returns how many functions it lacks (their
// slots stay `unbound`), or -1 when it cannot be opened.
int torchada_shim_bind(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) return -1;
  int missing = 0;
  for (int i = 0; i < SHIM_COUNT; ++i) {
    void* fn = dlsym(handle, musa_names[i]);
    if (fn == NULL) {
      ++missing;
      continue;
    }
    __atomic_store_n(&torchada_shim_slots[i], fn, __ATOMIC_RELEASE);
  }
  return missing;
}

// The MUSA function behind CUDA name number i, for checks (NULL while unbound).
void* torchada_shim_target(int i) {
  if (i < 0 || i >= SHIM_COUNT) return NULL;
  void* fn = __atomic_load_n(&torchada_shim_slots[i], __ATOMIC_ACQUIRE);
  return fn == (void*)unbound ? NULL : fn;
}
