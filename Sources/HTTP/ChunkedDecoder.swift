// Incremental decoder for the chunked transfer coding (RFC 9112 §7.1), used for request bodies on
// the server and response bodies in the client. Bytes in, body bytes out; no I/O.

struct ChunkedDecoder: Sendable {
    /// Which error kinds to raise: a server reports 400/413/431, the client a malformed response.
    struct Kinds: Sendable {
        var malformed: HTTPError.Kind
        var tooLarge: HTTPError.Kind
        var trailersTooLarge: HTTPError.Kind
        static let request = Kinds(malformed: .badRequest, tooLarge: .bodyTooLarge, trailersTooLarge: .headersTooLarge)
        static let response = Kinds(malformed: .malformedResponse, tooLarge: .malformedResponse, trailersTooLarge: .malformedResponse)
    }

    private enum State: Sendable {
        case sizeLine
        case data(remaining: Int)
        case dataEnd(sawCR: Bool)
        case trailers
        case done
    }

    /// A chunk-size line with extensions is short; this bounds what we buffer for one.
    static let maxSizeLineBytes = 1024

    private var state = State.sizeLine
    private var line: [UInt8] = []
    private var decodedBytes = 0
    private var trailerBytes = 0
    private var chunkIndex = 0
    let maxBodyBytes: Int
    let maxTrailerBytes: Int
    let kinds: Kinds

    init(maxBodyBytes: Int, maxTrailerBytes: Int, kinds: Kinds) {
        self.maxBodyBytes = maxBodyBytes
        self.maxTrailerBytes = maxTrailerBytes
        self.kinds = kinds
    }

    var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Consumes bytes from `input`, appending decoded data to `body`. Returns how many bytes were
    /// consumed; after completion it stops, so bytes of a following message are left over.
    mutating func decode(_ input: ArraySlice<UInt8>, into body: inout [UInt8]) throws(HTTPError) -> Int {
        var index = input.startIndex
        while index < input.endIndex {
            switch state {
            case .done:
                return index - input.startIndex
            case .sizeLine:
                let byte = input[index]
                index += 1
                if byte == 0x0A {
                    let size = try parseSizeLine()
                    line.removeAll(keepingCapacity: true)
                    chunkIndex += 1
                    state = size == 0 ? .trailers : .data(remaining: size)
                } else {
                    line.append(byte)
                    if line.count > Self.maxSizeLineBytes {
                        throw HTTPError(kinds.malformed, "chunk size line \(chunkIndex + 1) longer than \(Self.maxSizeLineBytes) bytes")
                    }
                }
            case .data(let remaining):
                let take = min(remaining, input.endIndex - index)
                body.append(contentsOf: input[index..<(index + take)])
                index += take
                state = remaining == take ? .dataEnd(sawCR: false) : .data(remaining: remaining - take)
            case .dataEnd(let sawCR):
                let byte = input[index]
                index += 1
                if byte == 0x0D && !sawCR {
                    state = .dataEnd(sawCR: true)
                } else if byte == 0x0A {
                    state = .sizeLine
                } else {
                    throw HTTPError(kinds.malformed, "chunk \(chunkIndex) data not followed by CRLF")
                }
            case .trailers:
                let byte = input[index]
                index += 1
                trailerBytes += 1
                if trailerBytes > maxTrailerBytes {
                    throw HTTPError(kinds.trailersTooLarge, "chunked trailer fields exceed \(maxTrailerBytes) bytes")
                }
                if byte == 0x0A {
                    var content = line[...]
                    if content.last == 0x0D { content = content.dropLast() }
                    if content.isEmpty {
                        state = .done
                    } else if content.contains(0x0D) || !content.contains(0x3A) {
                        throw HTTPError(kinds.malformed, "malformed chunked trailer field")
                    }
                    line.removeAll(keepingCapacity: true)
                } else {
                    line.append(byte)
                }
            }
        }
        return index - input.startIndex
    }

    /// chunk-size [ BWS ";" extensions ] [CR] — hex digits, then optional extensions we ignore.
    private mutating func parseSizeLine() throws(HTTPError) -> Int {
        var content = line[...]
        if content.last == 0x0D { content = content.dropLast() }
        var size = 0
        var digits = 0
        var index = content.startIndex
        while index < content.endIndex, let value = PercentDecoding.hexValue(content[index]) {
            digits += 1
            if digits > 15 {
                throw HTTPError(kinds.tooLarge, "chunk \(chunkIndex + 1) size exceeds the body limit of \(maxBodyBytes) bytes")
            }
            size = size << 4 | Int(value)
            index += 1
        }
        guard digits > 0 else {
            throw HTTPError(kinds.malformed, "malformed chunk size line \(HeadParsing.quote(content)) for chunk \(chunkIndex + 1)")
        }
        let rest = content[index...].drop { $0 == 0x20 || $0 == 0x09 }
        guard rest.isEmpty || rest.first == 0x3B, !rest.contains(0x0D) else {
            throw HTTPError(kinds.malformed, "malformed chunk size line \(HeadParsing.quote(content)) for chunk \(chunkIndex + 1)")
        }
        decodedBytes += size
        if decodedBytes > maxBodyBytes || decodedBytes < 0 {
            throw HTTPError(kinds.tooLarge, "chunked body exceeds \(maxBodyBytes) bytes")
        }
        return size
    }
}
