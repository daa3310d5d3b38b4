#if canImport(Glibc)
import Glibc
#endif
import CSDL
import Foundation
import Media
import Locks

/// Shows frames in an SDL2 window (local preview or remote video). `render(_:)` only puts the
/// frame into a latest-frame slot (a newer frame replaces one not yet shown) and wakes the SDL
/// thread; all SDL calls happen on one thread that owns every window of the process, as SDL
/// requires. The window takes the video's size when it changes (`followsVideoSize`), letterboxes
/// when the user resizes it, and closes on the window manager's close button or `close()`.
///
/// The display comes from SDL's usual environment: `SDL_VIDEODRIVER` (x11, wayland, offscreen,
/// dummy…) and `DISPLAY` / `WAYLAND_DISPLAY`. With no display the initializer throws a clear error.
public final class SDLWindowRenderer: VideoRenderer {
    public let title: String
    let id: Int
    private let shared = SDLWindowShared()

    /// Opens the window (waits until SDL has created it). `x`/`y` nil centres it.
    public init(title: String, width: Int, height: Int, x: Int? = nil, y: Int? = nil,
                followsVideoSize: Bool = true) throws(MediaError) {
        guard VideoFrameBuffer.isValidSize(width: width, height: height) else {
            throw MediaError("SDLWindowRenderer: window size \(width)x\(height) out of range 1…\(VideoFrameBuffer.maxDimension)")
        }
        if let problem = SDLWindowRenderer.displayProblem(environment: SDLWindowRenderer.currentEnvironment()) {
            throw MediaError(problem)
        }
        self.title = title
        id = SDLHost.shared.nextID()
        let spec = SDLWindowSpec(id: id, title: title, width: width, height: height, x: x, y: y,
                                 followsVideoSize: followsVideoSize, shared: shared)
        if let error = SDLHost.shared.open(spec) { throw error }
    }

    deinit {
        SDLHost.shared.close(id, wait: false)
    }

    public func render(_ frame: VideoFrame) {
        let slotWasEmpty = shared.status.withLock { s -> Bool? in
            guard !s.closed else { return nil }
            let wasEmpty = s.pendingFrame == nil
            if !wasEmpty { s.replaced += 1 }
            s.pendingFrame = frame
            return wasEmpty
        }
        // A full slot means a wake-up is already on its way.
        if slotWasEmpty == true { SDLHost.shared.wake() }
    }

    /// Blocks until frames handed over before this call are on screen (or the window is gone).
    public func flush() {
        SDLHost.shared.flush(id)
    }

    /// Closes the window and waits for SDL to destroy it. Later frames are ignored.
    public func close() {
        SDLHost.shared.close(id, wait: true)
    }

    /// Called on the SDL thread when the user closes the window.
    public var onClose: (@Sendable () -> Void)? {
        get { shared.status.withLock { $0.onClose } }
        set { shared.status.withLock { $0.onClose = newValue } }
    }

    public var isClosed: Bool { shared.status.withLock { $0.closed } }
    public var framesPresented: Int { shared.status.withLock { $0.presented } }
    /// Frames replaced in the slot by a newer one before the SDL thread showed them.
    public var framesReplaced: Int { shared.status.withLock { $0.replaced } }
    /// The window's client-area size as SDL last reported it.
    public var windowSize: (width: Int, height: Int) { shared.status.withLock { $0.windowSize } }
    /// SDL's name for the render backend in use ("opengl", "software", …).
    public var rendererName: String { shared.status.withLock { $0.rendererName } }
    /// SDL's video driver in use ("x11", "wayland", "offscreen", …).
    public var videoDriver: String { shared.status.withLock { $0.videoDriver } }

    /// Queues the event the window manager's close button sends (tests use it; SDL's event
    /// queue is thread-safe).
    func simulateCloseButton() {
        let sdlID = shared.status.withLock { $0.sdlWindowID }
        _ = csdl_push_window_close_event(sdlID)
    }

    /// The last SDL error while showing frames, if any.
    public var lastError: MediaError? { shared.status.withLock { $0.error } }

    // MARK: display check

    static func currentEnvironment() -> [String: String] {
        var env: [String: String] = [:]
        for key in ["SDL_VIDEODRIVER", "DISPLAY", "WAYLAND_DISPLAY"] {
            if let v = getenv(key) { env[key] = String(cString: v) }
        }
        return env
    }

    /// Why SDL cannot possibly open a window with this environment, or nil if it may try.
    static func displayProblem(environment env: [String: String]) -> String? {
        let drivers = (env["SDL_VIDEODRIVER"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let hasX = !(env["DISPLAY"] ?? "").isEmpty
        let hasWayland = !(env["WAYLAND_DISPLAY"] ?? "").isEmpty
        if drivers.isEmpty {
            if hasX || hasWayland { return nil }
            return "SDLWindowRenderer: no display: DISPLAY is not set (and no WAYLAND_DISPLAY). Start an X server, "
                + "e.g. `Xvfb :99 -screen 0 1280x720x24 &` and `export DISPLAY=:99`, or set SDL_VIDEODRIVER=offscreen"
        }
        // An explicit driver list: only x11 and wayland need a display we can check for.
        let needsDisplay = drivers.allSatisfy { $0 == "x11" || $0 == "wayland" }
        if !needsDisplay { return nil }
        if drivers.contains("x11") && hasX { return nil }
        if drivers.contains("wayland") && hasWayland { return nil }
        return "SDLWindowRenderer: no display for SDL_VIDEODRIVER=\(env["SDL_VIDEODRIVER"] ?? ""): "
            + (drivers.contains("x11") ? "DISPLAY is not set" : "WAYLAND_DISPLAY is not set")
            + " (for a headless run start Xvfb and set DISPLAY, or use SDL_VIDEODRIVER=offscreen)"
    }
}

/// What a renderer and the SDL thread share about one window.
struct SDLWindowStatus {
    /// The latest frame not yet shown.
    var pendingFrame: VideoFrame?
    var closed = false
    var presented = 0
    var replaced = 0
    var windowSize = (width: 0, height: 0)
    var rendererName = ""
    var videoDriver = ""
    var sdlWindowID: UInt32 = 0
    var error: MediaError?
    var onClose: (@Sendable () -> Void)?
}

struct SDLWindowSpec: Sendable {
    var id: Int
    var title: String
    var width: Int
    var height: Int
    var x: Int?
    var y: Int?
    var followsVideoSize: Bool
    var shared: SDLWindowShared
}

/// The renderer's status, shared by reference with the SDL thread.
final class SDLWindowShared: Sendable {
    let status = Locked(SDLWindowStatus())
}
