// Giving freed heap back to the OS (see CShim.h).
#include "CShim.h"

#if defined(__GLIBC__)
#include <malloc.h>
int swiftrtc_release_free_heap(void) { return malloc_trim(0); }
#else
int swiftrtc_release_free_heap(void) { return 0; }
#endif
