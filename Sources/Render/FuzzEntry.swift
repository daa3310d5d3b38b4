/// libFuzzer entry (see Sources/swiftrtc-fuzz): JPEG bytes as a camera's MJPEG stream or a file
/// would hand them over. Any input must give a frame or a MediaError, never a crash. Pictures
/// bigger than 4096 on a side are only sized, not decoded, to keep each run's memory small.
public func fuzzJPEG(_ bytes: [UInt8]) {
    guard let size = try? JPEGDecoder.size(of: bytes), size.width <= 4096, size.height <= 4096 else { return }
    if let frame = try? JPEGDecoder.decode(bytes) {
        precondition(frame.width == size.width && frame.height == size.height, "decoded size differs from the header's")
    }
}
