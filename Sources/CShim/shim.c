// The C shim's code lives in files named for what they hold (dtls_bio.c, …).
#include "CShim.h"
