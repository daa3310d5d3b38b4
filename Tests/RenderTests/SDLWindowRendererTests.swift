import Foundation
import Media
import Testing
@testable import Render

/// SDL tests share the process's DISPLAY, so they run one at a time.
@Suite(.serialized) struct SDLWindowRendererTests {
    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    @Test func noDisplayIsAClearError() {
        let problem = SDLWindowRenderer.displayProblem(environment: [:])
        #expect(problem?.contains("DISPLAY is not set") == true)
        #expect(problem?.contains("Xvfb") == true)
        #expect(SDLWindowRenderer.displayProblem(environment: ["DISPLAY": ":0"]) == nil)
        #expect(SDLWindowRenderer.displayProblem(environment: ["WAYLAND_DISPLAY": "wayland-0"]) == nil)
        #expect(SDLWindowRenderer.displayProblem(environment: ["SDL_VIDEODRIVER": "offscreen"]) == nil)
        #expect(SDLWindowRenderer.displayProblem(environment: ["SDL_VIDEODRIVER": "x11", "WAYLAND_DISPLAY": "w"])?
            .contains("DISPLAY is not set") == true)
        #expect(SDLWindowRenderer.displayProblem(environment: ["SDL_VIDEODRIVER": "wayland", "DISPLAY": ":1"])?
            .contains("WAYLAND_DISPLAY") == true)
    }

    @Test func colorBarsAppearInTheWindowUnderXvfb() throws {
        guard XvfbServer.executable != nil else {
            if Self.isCI {
                Issue.record("Xvfb is not installed but CI=true: install the xvfb package (Debian) so the SDL window test can run")
                return
            }
            try Test.cancel("Xvfb is not installed; skipping the SDL window test (it is required when CI=true)")
        }
        let xvfb = try XvfbServer.start()
        defer { xvfb.stop() }
        setenv("DISPLAY", xvfb.displayName, 1)
        unsetenv("SDL_VIDEODRIVER")

        // No window manager under Xvfb: the window's client area sits exactly where asked.
        let origin = (x: 100, y: 60), size = (width: 640, height: 360)
        let window = try SDLWindowRenderer(title: "SwiftRTC render test", width: size.width, height: size.height,
                                           x: origin.x, y: origin.y)
        defer { window.close() }
        window.render(VideoFrame(buffer: ColorBars.i420(width: size.width, height: size.height), timestampNs: 0))
        window.flush()
        #expect(window.lastError == nil)
        #expect(window.framesPresented == 1)
        #expect(window.windowSize == (640, 360))

        let shot = try artifactsDirectory() + "/sdl-window-colorbars.png"
        let r = try runShell("xwd -root -silent -display \(xvfb.displayName) | convert xwd:- png24:\(shot)")
        try #require(r.status == 0, "screenshot failed: \(r.stderr)")
        let image = try PNGDecoder.decodeRGB(readFile(shot))
        #expect(image.width == 1280 && image.height == 720)
        var seen: [String] = []
        for bar in 0..<8 {
            for y in [origin.y + 20, origin.y + size.height / 2, origin.y + size.height - 20] {
                let x = origin.x + bar * size.width / 8 + size.width / 16
                let got = rgbAt(image.rgb, width: image.width, x: x, y: y)
                #expect(close(got, ColorBars.rgb[bar], within: 6), "bar \(bar) at screen \(x),\(y): \(got), renderer \(window.rendererName)")
                if y == origin.y + size.height / 2 { seen.append("\(got)") }
            }
        }
        print("SDL renderer \(window.rendererName); bar centres seen: \(seen.joined(separator: " ")); screenshot \(shot)")

        // The window follows the video's size, and rotation is applied.
        window.render(VideoFrame(buffer: ColorBars.i420(width: 320, height: 160), rotation: .r90, timestampNs: 1))
        window.flush()
        #expect(window.windowSize == (160, 320))
        #expect(window.framesPresented == 2)
        let shot2 = try artifactsDirectory() + "/sdl-window-rotated.png"
        let r2 = try runShell("xwd -root -silent -display \(xvfb.displayName) | convert xwd:- png24:\(shot2)")
        try #require(r2.status == 0, "screenshot failed: \(r2.stderr)")
        let rotated = try PNGDecoder.decodeRGB(readFile(shot2))
        for bar in 0..<8 {
            // Bars now run top (white) to bottom (black), 40 px each.
            let got = rgbAt(rotated.rgb, width: rotated.width, x: origin.x + 80, y: origin.y + bar * 40 + 20)
            #expect(close(got, ColorBars.rgb[bar], within: 6), "rotated bar \(bar): \(got)")
        }

        window.close()
        #expect(window.isClosed)
        window.render(VideoFrame(buffer: ColorBars.i420(width: 64, height: 64), timestampNs: 2))
        window.flush()
        #expect(window.framesPresented == 2)
    }

    @Test func closeButtonClosesTheWindow() throws {
        guard XvfbServer.executable != nil else {
            if Self.isCI { Issue.record("Xvfb is not installed but CI=true"); return }
            try Test.cancel("Xvfb is not installed")
        }
        let xvfb = try XvfbServer.start()
        defer { xvfb.stop() }
        setenv("DISPLAY", xvfb.displayName, 1)
        unsetenv("SDL_VIDEODRIVER")

        let window = try SDLWindowRenderer(title: "close me", width: 160, height: 120)
        defer { window.close() }
        let closed = DispatchSemaphore(value: 0)
        window.onClose = { closed.signal() }
        window.render(VideoFrame(buffer: ColorBars.i420(width: 160, height: 120), timestampNs: 0))
        window.flush()
        window.simulateCloseButton()
        #expect(closed.wait(timeout: .now() + 10) == .success, "onClose was not called")
        #expect(window.isClosed)
        window.render(VideoFrame(buffer: ColorBars.i420(width: 160, height: 120), timestampNs: 1))
        #expect(window.framesPresented == 1)
    }

    @Test func explicitVideoDriverIsRespected() throws {
        // SDL_VIDEODRIVER=offscreen needs no display at all.
        unsetenv("DISPLAY")
        setenv("SDL_VIDEODRIVER", "offscreen", 1)
        defer { unsetenv("SDL_VIDEODRIVER") }
        let window = try SDLWindowRenderer(title: "offscreen", width: 64, height: 48)
        defer { window.close() }
        #expect(window.videoDriver == "offscreen")
        window.render(VideoFrame(buffer: ColorBars.nv12(width: 96, height: 48), timestampNs: 0))
        window.flush()
        #expect(window.lastError == nil)
        #expect(window.framesPresented == 1)
        #expect(window.windowSize == (96, 48))
    }

    @Test func unreachableDisplayThrows() throws {
        // A display number nobody serves: SDL's init fails and the error names the display.
        setenv("DISPLAY", ":139", 1)
        unsetenv("SDL_VIDEODRIVER")
        #expect {
            let w = try SDLWindowRenderer(title: "nowhere", width: 64, height: 64)
            print("unexpectedly opened a window with driver \(w.videoDriver), renderer \(w.rendererName)")
            w.close()
        } throws: { error in
            "\(error)".contains("DISPLAY=:139")
        }
    }
}
