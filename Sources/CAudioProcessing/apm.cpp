#include "CAudioProcessing.h"
#include <webrtc/modules/audio_processing/include/audio_processing.h>
