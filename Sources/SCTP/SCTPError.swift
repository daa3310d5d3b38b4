/// What went wrong in the SCTP association or in a data channel message, in words.
public struct SCTPError: Error, CustomStringConvertible, Sendable, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
