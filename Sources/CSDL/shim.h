#pragma once
#include <SDL2/SDL.h>

// SDL_WINDOWPOS_CENTERED is a function-like macro, which Swift does not import.
static inline int csdl_windowpos_centered(void) { return (int)SDL_WINDOWPOS_CENTERED; }

// Wakes a thread blocked in SDL_WaitEventTimeout (SDL_PushEvent is thread-safe).
static inline int csdl_push_wake_event(void) {
    SDL_Event event;
    SDL_zero(event);
    event.type = SDL_USEREVENT;
    return SDL_PushEvent(&event);
}

// Queues the event a window manager's close button produces for `window_id` (tests use it to
// exercise the close path without a window manager).
static inline int csdl_push_window_close_event(Uint32 window_id) {
    SDL_Event event;
    SDL_zero(event);
    event.type = SDL_WINDOWEVENT;
    event.window.windowID = window_id;
    event.window.event = SDL_WINDOWEVENT_CLOSE;
    return SDL_PushEvent(&event);
}
