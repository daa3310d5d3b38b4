// Entry points for fuzzing (libFuzzer: `-Xswiftc -sanitize=fuzzer`, a harness calling these with
// the fuzzer's bytes). Each must return normally for every input: no traps, no hangs.

/// Runs the server's whole request path over `bytes`: the head parser directly, then the
/// framing decoder fed in two pieces (split where the first byte says), then the chunked decoder.
public func fuzzHTTPRequest(_ bytes: [UInt8]) {
    _ = try? parseHTTPRequestHead(bytes)

    let limits = HTTPLimits(maxHeaderBytes: 1024, maxBodyBytes: 4096)
    var decoder = HTTPRequestDecoder(limits: limits, remoteAddress: "fuzz")
    let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    for piece in [bytes[..<split], bytes[split...]] {
        decoder.append(piece)
        var outputs = 0
        while outputs < 64 {
            outputs += 1
            guard let output = try? decoder.next() else { return }
            if case .needMoreData = output { break }
        }
    }

    var chunked = ChunkedDecoder(maxBodyBytes: 4096, maxTrailerBytes: 1024, kinds: .request)
    var body: [UInt8] = []
    _ = try? chunked.decode(bytes[...], into: &body)
}

/// The client's response head parser and chunked decoder over `bytes`.
public func fuzzHTTPResponse(_ bytes: [UInt8]) {
    _ = try? parseHTTPResponseHead(bytes)
    var chunked = ChunkedDecoder(maxBodyBytes: 4096, maxTrailerBytes: 1024, kinds: .response)
    var body: [UInt8] = []
    _ = try? chunked.decode(bytes[...], into: &body)
    if let text = String(validating: bytes, as: UTF8.self) {
        _ = HTTPClient.resolve(text, against: "http://127.0.0.1:1985/a/b?c=d")
        _ = try? HTTPURL.parse(text)
    }
}
