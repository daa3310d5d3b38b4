/// Pixel layouts a frame buffer can hold (the ones cameras, codecs and screens hand around).
public enum PixelFormat: String, Sendable, Hashable, CaseIterable {
    /// Planar Y, U, V; chroma at half width and half height (what codecs eat).
    case i420
    /// Y plane + interleaved UV plane, luma 16…235 (camera "video range").
    case nv12VideoRange
    /// Y plane + interleaved UV plane, luma 0…255 (camera "full range").
    case nv12FullRange
    /// 8-bit B, G, R, A in memory order (what screens and most image APIs use).
    case bgra

    public var planeCount: Int {
        switch self {
        case .i420: return 3
        case .nv12VideoRange, .nv12FullRange: return 2
        case .bgra: return 1
        }
    }

    public var isNV12: Bool { self == .nv12VideoRange || self == .nv12FullRange }

    /// Bytes a tightly packed frame of this size takes.
    public func byteCount(width: Int, height: Int) -> Int {
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        switch self {
        case .i420: return width * height + 2 * cw * ch
        case .nv12VideoRange, .nv12FullRange: return width * height + 2 * cw * ch
        case .bgra: return width * height * 4
        }
    }
}

/// Clockwise rotation the receiver must apply to show a frame upright (as in libwebrtc).
public enum VideoRotation: Int, Sendable, Hashable, CaseIterable {
    case r0 = 0, r90 = 90, r180 = 180, r270 = 270

    /// Whether showing the frame upright swaps its width and height.
    public var swapsDimensions: Bool { self == .r90 || self == .r270 }
}
