#pragma once
#include <wels/codec_api.h>
