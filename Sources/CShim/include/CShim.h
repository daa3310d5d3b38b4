// Small C helpers for what Swift cannot express directly (callbacks with state, macros).
#pragma once
#include <stddef.h>
#include <stdint.h>
