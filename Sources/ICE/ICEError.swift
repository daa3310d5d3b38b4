/// A malformed ICE input (candidate line, credentials), with what was wrong and where.
public struct ICEError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "ICE: \(message)" }
}
