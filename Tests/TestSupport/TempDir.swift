import Foundation

/// A fresh directory under the system's temporary directory, removed by `cleanup()`.
public struct TempDir: Sendable {
    public let url: URL

    public init(_ prefix: String = "swiftrtc-tests") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public var path: String { url.path }

    /// The path of `name` inside it.
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    public func cleanup() { try? FileManager.default.removeItem(at: url) }
}
