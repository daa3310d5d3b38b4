import CSDL
import Dispatch
import Foundation
import Media

/// The one thread that makes SDL calls. It owns every SDLWindowRenderer's window, initialises
/// SDL's video subsystem when the first window opens and shuts it down when the last one closes
/// (so the process lets go of the X display, e.g. before a test stops its Xvfb).
final class SDLHost: @unchecked Sendable {
    // @unchecked: `commands`, `wakePending`, `videoUp`, `thread` and `lastID` are guarded by
    // `cond`; the SDL objects live in `run()`'s locals and are touched only on the SDL thread.
    static let shared = SDLHost()

    private enum Command {
        case open(SDLWindowSpec, Reply)
        case close(Int, Reply?)
        case flush(Int, Reply)
    }

    /// A caller waiting for the SDL thread.
    final class Reply: @unchecked Sendable {
        // @unchecked: `error` is written before `done.signal()` and read after `done.wait()`.
        let done = DispatchSemaphore(value: 0)
        var error: MediaError?
    }

    private let cond = NSCondition()
    private var commands: [Command] = []
    private var wakePending = false
    private var videoUp = false
    private var thread: Thread?
    private var lastID = 0

    func nextID() -> Int {
        cond.lock()
        defer { cond.unlock() }
        lastID += 1
        return lastID
    }

    /// Creates a window; returns the error if SDL could not.
    func open(_ spec: SDLWindowSpec) -> MediaError? {
        let reply = Reply()
        enqueue(.open(spec, reply), startThread: true)
        reply.done.wait()
        return reply.error
    }

    func close(_ id: Int, wait: Bool) {
        // Waiting on the SDL thread itself (an onClose handler calling close) would deadlock.
        let reply = wait && !isSDLThread ? Reply() : nil
        enqueue(.close(id, reply), startThread: false)
        reply?.done.wait()
    }

    func flush(_ id: Int) {
        guard !isSDLThread else { return }
        let reply = Reply()
        enqueue(.flush(id, reply), startThread: false)
        reply.done.wait()
    }

    /// Tells the SDL thread a frame slot was filled.
    func wake() {
        cond.lock()
        defer { cond.unlock() }
        guard !wakePending else { return }
        wakePending = true
        signalLocked()
    }

    private var isSDLThread: Bool {
        cond.lock()
        defer { cond.unlock() }
        return thread.map { Thread.current == $0 } ?? false
    }

    private func enqueue(_ command: Command, startThread: Bool) {
        cond.lock()
        defer { cond.unlock() }
        if thread == nil {
            guard startThread else {
                // No SDL thread means no windows: nothing to close or flush.
                if case .close(_, let r?) = command { r.done.signal() }
                if case .flush(_, let r) = command { r.done.signal() }
                return
            }
            let t = Thread { [self] in run() }
            t.name = "swiftrtc.sdl"
            thread = t
            t.start()
        }
        commands.append(command)
        signalLocked()
    }

    /// Wakes the SDL thread wherever it waits: on the condition (no windows) or in SDL's
    /// event wait (pushing an event is thread-safe while video is up). Caller holds `cond`.
    private func signalLocked() {
        cond.signal()
        if videoUp { _ = csdl_push_wake_event() }
    }

    // MARK: the SDL thread

    private func run() {
        var windows: [Int: SDLWindow] = [:]
        var event = SDL_Event()
        while true {
            cond.lock()
            while commands.isEmpty && !wakePending && windows.isEmpty { cond.wait() }
            let batch = commands
            commands.removeAll()
            wakePending = false
            cond.unlock()

            // Opens first, then the frames, then closes and flushes in the order asked.
            for case .open(let spec, let reply) in batch {
                do {
                    try startVideoIfNeeded()
                    windows[spec.id] = try SDLWindow(spec)
                } catch {
                    reply.error = error
                }
                reply.done.signal()
            }
            for window in windows.values { window.presentPendingFrame() }
            for command in batch {
                switch command {
                case .open: break
                case .close(let id, let reply):
                    windows.removeValue(forKey: id)?.destroy(userClosed: false)
                    reply?.done.signal()
                case .flush(_, let reply):
                    reply.done.signal()
                }
            }

            if !windows.isEmpty {
                if SDL_WaitEventTimeout(&event, 200) != 0 {
                    repeat { handle(event, &windows) } while SDL_PollEvent(&event) != 0
                }
            }
            if windows.isEmpty { stopVideoIfUp() }
        }
    }

    private func handle(_ event: SDL_Event, _ windows: inout [Int: SDLWindow]) {
        guard event.type == SDL_WINDOWEVENT.rawValue else { return }
        let sdlID = event.window.windowID
        guard let (id, window) = windows.first(where: { $0.value.sdlID == sdlID }) else { return }
        switch UInt32(event.window.event) {
        case SDL_WINDOWEVENT_CLOSE.rawValue:
            windows.removeValue(forKey: id)
            window.destroy(userClosed: true)
        case SDL_WINDOWEVENT_EXPOSED.rawValue, SDL_WINDOWEVENT_SIZE_CHANGED.rawValue:
            window.redraw()
        default:
            break
        }
    }

    private func startVideoIfNeeded() throws(MediaError) {
        cond.lock()
        let up = videoUp
        cond.unlock()
        guard !up else { return }
        // A library must not take SIGINT/SIGTERM away from the app; keep desktop compositing on.
        SDL_SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1")
        SDL_SetHint(SDL_HINT_VIDEO_X11_NET_WM_BYPASS_COMPOSITOR, "0")
        SDL_SetHint(SDL_HINT_RENDER_SCALE_QUALITY, "linear")
        let env = SDLWindowRenderer.currentEnvironment()
        let setting = ["SDL_VIDEODRIVER", "DISPLAY", "WAYLAND_DISPLAY"].compactMap { k in env[k].map { "\(k)=\($0)" } }
            .joined(separator: ", ")
        guard SDL_InitSubSystem(UInt32(SDL_INIT_VIDEO)) == 0 else {
            let reason = String(cString: SDL_GetError())
            throw MediaError("SDLWindowRenderer: SDL could not start video (\(setting)): \(reason)"
                             + " — is the X server (or Xvfb) for that display running?")
        }
        // When x11 and wayland both fail SDL quietly falls back to an invisible driver; unless the
        // user chose that driver, a window nobody can see is an error.
        let driver = SDL_GetCurrentVideoDriver().map { String(cString: $0) } ?? ""
        if env["SDL_VIDEODRIVER"] == nil && (driver == "offscreen" || driver == "dummy") {
            SDL_QuitSubSystem(UInt32(SDL_INIT_VIDEO))
            throw MediaError("SDLWindowRenderer: cannot open the display (\(setting)); SDL found only its invisible "
                             + "'\(driver)' driver — is the X server (or Xvfb) for that display running?")
        }
        cond.lock()
        videoUp = true
        cond.unlock()
    }

    private func stopVideoIfUp() {
        cond.lock()
        let up = videoUp
        videoUp = false
        cond.unlock()
        if up { SDL_QuitSubSystem(UInt32(SDL_INIT_VIDEO)) }
    }
}

/// One SDL window with its renderer and IYUV texture. Lives on the SDL thread only.
final class SDLWindow {
    let spec: SDLWindowSpec
    let sdlID: UInt32
    private let window: OpaquePointer
    private let renderer: OpaquePointer
    private var texture: OpaquePointer?
    private var textureSize = (width: 0, height: 0)
    private var textureFullRange = false
    private var videoSize = (width: 0, height: 0)
    private let converter = UprightI420Converter()

    init(_ spec: SDLWindowSpec) throws(MediaError) {
        self.spec = spec
        let centered = csdl_windowpos_centered()
        let flags = SDL_WINDOW_SHOWN.rawValue | SDL_WINDOW_RESIZABLE.rawValue
        guard let window = SDL_CreateWindow(spec.title, Int32(spec.x ?? Int(centered)), Int32(spec.y ?? Int(centered)),
                                            Int32(spec.width), Int32(spec.height), flags) else {
            throw MediaError("SDLWindowRenderer: SDL_CreateWindow failed: \(String(cString: SDL_GetError()))")
        }
        // Whatever SDL finds best (GPU when there is one), software as the fallback.
        guard let renderer = SDL_CreateRenderer(window, -1, 0)
                ?? SDL_CreateRenderer(window, -1, SDL_RENDERER_SOFTWARE.rawValue) else {
            let reason = String(cString: SDL_GetError())
            SDL_DestroyWindow(window)
            throw MediaError("SDLWindowRenderer: SDL_CreateRenderer failed: \(reason)")
        }
        self.window = window
        self.renderer = renderer
        sdlID = SDL_GetWindowID(window)
        var info = SDL_RendererInfo()
        let name = SDL_GetRendererInfo(renderer, &info) == 0 && info.name != nil ? String(cString: info.name) : "unknown"
        let size = currentWindowSize()
        spec.shared.status.withLock { s in
            s.rendererName = name
            s.videoDriver = SDL_GetCurrentVideoDriver().map { String(cString: $0) } ?? "none"
            s.windowSize = size
            s.sdlWindowID = sdlID
        }
        clear()
    }

    func presentPendingFrame() {
        let frame = spec.shared.status.withLock { s -> VideoFrame? in
            defer { s.pendingFrame = nil }
            return s.pendingFrame
        }
        guard let frame else { return }
        do {
            try upload(frame)
            redraw()
            let size = currentWindowSize()
            spec.shared.status.withLock { s in
                s.presented += 1
                s.windowSize = size
            }
        } catch {
            spec.shared.status.withLock { $0.error = error }
        }
    }

    private func upload(_ frame: VideoFrame) throws(MediaError) {
        let size = frame.uprightSize
        let fullRange = frame.format == .nv12FullRange
        if texture == nil || size != textureSize || fullRange != textureFullRange {
            if let texture { SDL_DestroyTexture(texture) }
            texture = nil
            // SDL picks the YUV matrix when the texture is made; WebRTC video is BT.601.
            SDL_SetYUVConversionMode(fullRange ? SDL_YUV_CONVERSION_JPEG : SDL_YUV_CONVERSION_BT601)
            guard let t = SDL_CreateTexture(renderer, SDL_PIXELFORMAT_IYUV.rawValue, Int32(SDL_TEXTUREACCESS_STREAMING.rawValue),
                                            Int32(size.width), Int32(size.height)) else {
                throw MediaError("SDLWindowRenderer: SDL_CreateTexture \(size.width)x\(size.height) failed: \(String(cString: SDL_GetError()))")
            }
            texture = t
            textureSize = size
            textureFullRange = fullRange
        }
        if spec.followsVideoSize && size != videoSize {
            SDL_SetWindowSize(window, Int32(size.width), Int32(size.height))
        }
        videoSize = size
        guard let texture else { return }
        let status = converter.withUprightI420(frame) { p in
            SDL_UpdateYUVTexture(texture, nil, p.y, Int32(p.strideY), p.u, Int32(p.strideU), p.v, Int32(p.strideV))
        }
        guard status == 0 else {
            throw MediaError("SDLWindowRenderer: SDL_UpdateYUVTexture failed: \(String(cString: SDL_GetError()))")
        }
    }

    /// Draws the current texture letterboxed into the window (also after expose and resize).
    func redraw() {
        SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255)
        SDL_RenderClear(renderer)
        if let texture, textureSize.width > 0, textureSize.height > 0 {
            var ow: Int32 = 0, oh: Int32 = 0
            SDL_GetRendererOutputSize(renderer, &ow, &oh)
            let scale = min(Double(ow) / Double(textureSize.width), Double(oh) / Double(textureSize.height))
            let w = Int32((Double(textureSize.width) * scale).rounded()), h = Int32((Double(textureSize.height) * scale).rounded())
            var dst = SDL_Rect(x: (ow - w) / 2, y: (oh - h) / 2, w: w, h: h)
            SDL_RenderCopy(renderer, texture, nil, &dst)
        }
        SDL_RenderPresent(renderer)
    }

    private func clear() {
        SDL_SetRenderDrawColor(renderer, 0, 0, 0, 255)
        SDL_RenderClear(renderer)
        SDL_RenderPresent(renderer)
    }

    private func currentWindowSize() -> (width: Int, height: Int) {
        var w: Int32 = 0, h: Int32 = 0
        SDL_GetWindowSize(window, &w, &h)
        return (Int(w), Int(h))
    }

    func destroy(userClosed: Bool) {
        if let texture { SDL_DestroyTexture(texture) }
        texture = nil
        SDL_DestroyRenderer(renderer)
        SDL_DestroyWindow(window)
        let handler = spec.shared.status.withLock { s -> (@Sendable () -> Void)? in
            s.closed = true
            s.pendingFrame = nil
            return userClosed ? s.onClose : nil
        }
        handler?()
    }
}
