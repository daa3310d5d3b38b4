// libspeexdsp (Debian libspeexdsp-dev): the MDF echo canceller and the preprocessor's
// residual-echo suppressor.
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>
